# An apt-style install log: status lines, then \r-redrawn progress bars.
echo "Reading package lists... Done"
echo "Building dependency tree... Done"
for pkg in libfoo1 libbar2 frobnicator; do
  for i in 0 10 20 30 40 50 60 70 80 90 100; do
    n=$((i / 5))
    bar=$(printf '%*s' $n '' | tr ' ' '#')
    printf '\rGet: %s [%-20s] %3d%%' "$pkg" "$bar" "$i"
    sleep 0.01
  done
  printf '\n'
done
printf 'Unpacking frobnicator (1.2.3) ...\n'
printf 'Progress: [ 50%%] \033[32m####\033[0m....\r\033[KProgress: [100%%] done\n'
printf 'spinner: |\b/\b-\b\\\b*\n'
printf 'prompt$ '
