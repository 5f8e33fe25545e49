# Shell output that does not redraw on SIGWINCH: long lines that wrap, then
# the terminal is made narrower and shorter, then more output.
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
  printf 'line %d: %s\n' "$i" "$(printf 'word%d ' $(seq 1 $((i * 4))))"
done
printf 'prompt$ '
sleep 1.5
printf 'after the resize: %s\n' "$(printf 'x%d ' $(seq 1 15))"
printf 'prompt$ '
sleep 5
