# Wide characters: CJK, emoji, combining marks, and a wide character that
# does not fit at the right margin.
printf '日本語のテキスト 中文字符 한국어 — emoji: 😀 👍 🎉 🚀 end\n'
printf 'combining: e\xcc\x81 a\xcc\x80 n\xcc\x83 | box: ┌─┐ │ └─┘\n'
printf '%078d日本\n' 0
printf '%079d界x\n' 0
printf 'tab\there\tand\there 日本\tnext\n'
printf '\033[5G中\033[6G|\n'
printf 'over: 日本語\033[3D*\n'
