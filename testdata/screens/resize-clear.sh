# Output that scrolled, then a clear screen and a prompt at the top; the
# terminal is then made narrower: the prompt stays where it was.
for i in $(seq 1 40); do printf 'row %d of the output before the clear, long enough to wrap at sixty cols\n' "$i"; done
printf '\033[H\033[2J'
printf 'prompt$ '
sleep 1.5
printf 'ls\r\nfile1 file2\r\nprompt$ '
sleep 5
