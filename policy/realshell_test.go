package policy

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// probeLines are ways a line can run the program trlprobe. runs says
// bash really runs it (so that the corpus cannot rot into lines that run
// nothing); lines bash does not run are still checked in every shell.
var probeLines = []struct {
	line string
	runs bool
}{
	{"trlprobe", true},
	{"true; trlprobe", true},
	{"false || trlprobe", true},
	{"echo $(trlprobe)", true},
	{"echo \"`trlprobe`\"", true},
	{"tr''lprobe", true},
	{`tr"l"probe`, true},
	{`\trlprobe`, true},
	{`t\rlprobe`, true},
	{`"trlprobe"`, true},
	{"$'trlprobe'", true},
	{"{trlprobe,x}", true},
	{"x=trlprobe; $x", true},
	{"trlprobe${nothing}", true},
	{`"${P:-trlprobe}"`, true},
	{"read -r c <<< trlprobe; $c", true},
	{"$(echo trlprobe)", true},
	{"`echo trlprobe`", true},
	{"eval trlprobe", true},
	{`eval "tr""lprobe"`, true},
	{"builtin eval trlprobe", true},
	{"env A=1 trlprobe", true},
	{`env -i PATH="$PATH" TRL_PROBE_LOG="$TRL_PROBE_LOG" trlprobe`, true},
	{"env -S trlprobe", true},
	{"command trlprobe", true},
	{"command -v trlprobe", false},
	{"nice trlprobe", true},
	{"nice -n 5 trlprobe", true},
	{"nohup trlprobe >/dev/null 2>&1", true},
	{"timeout 5 trlprobe", true},
	{"timeout -s KILL 5 trlprobe", true},
	{"time trlprobe", true},
	{"exec trlprobe", true},
	{"exec -a name trlprobe", true},
	{"setsid -w trlprobe", true},
	// util-linux's wrappers (a helper ran rm past a policy with each).
	{"chrt -o 0 trlprobe", true},
	{"taskset 1 trlprobe", true},
	{"taskset -c 0 trlprobe", true},
	{"flock . trlprobe", true},
	{"flock -w 5 . trlprobe", true},
	{"flock . -c trlprobe", true},
	{"flock -c trlprobe .", false},
	{"setpriv trlprobe", true},
	{"setpriv --inh-caps=-all trlprobe", true},
	{"script -qc trlprobe /dev/null", true},
	{"script -q -c 'trlprobe' /dev/null", true},
	{"script -q --command=trlprobe /dev/null", true},
	{"unshare trlprobe", true},
	{"prlimit trlprobe", true},
	{"prlimit --nofile=1024 trlprobe", true},
	{"stdbuf -o0 trlprobe", true},
	{"echo a | xargs trlprobe", true},
	{"echo trlprobe | xargs env", true},
	{"echo trlprobe | xargs sh -c", true},
	{"echo trlprobe | xargs -I{} env {}", true},
	{"echo a | xargs -n1 sh -c 'trlprobe'", true},
	{"find . -maxdepth 0 -exec trlprobe {} \\;", true},
	{"find . -maxdepth 0 -exec sh -c trlprobe \\;", true},
	{"sh -c trlprobe", true},
	{"bash -c 'trlprobe'", true},
	{"bash -ec 'true && trlprobe'", true},
	{"sh <<'EOF'\ntrlprobe\nEOF", true},
	{"bash -s <<< trlprobe", true},
	{"echo trlprobe | sh", true},
	{"sh < cmds", true},
	{". ./cmds", true},
	{"source ./cmds", true},
	{"bash ./cmds", true},
	{"f() { trlprobe; }; f", true},
	{"function g { trlprobe; }; g", true},
	{"if true; then trlprobe; fi", true},
	{"for i in 1; do trlprobe; done", true},
	{"while trlprobe; do break; done", true},
	{"case a in a) trlprobe;; esac", true},
	{"(trlprobe)", true},
	{"{ trlprobe; }", true},
	{"cat <(trlprobe)", true},
	{"trap trlprobe EXIT", true},
	{"a=$(trlprobe)", true},
	{"export a=$(trlprobe)", true},
	{"[[ $(trlprobe) ]]", true},
	{"echo $((1 + $(trlprobe; echo 1)))", true},
	{"cat <<EOF\n$(trlprobe)\nEOF", true},
	{"echo ${x:-$(trlprobe)}", true},
	{"coproc trlprobe; wait", true},
	{"alias p=trlprobe\np", true},
	{"hash -p ./bin/trlprobe ls; ls", true},
	{"command -p trlprobe", false}, // the default PATH has no trlprobe
	{"command exec trlprobe", true},
	{"exec -c trlprobe", false}, // no TRL_PROBE_LOG in the cleared environment
	{"nice --adjustment=5 trlprobe", true},
	{"nohup nice trlprobe >/dev/null 2>&1", true},
	{"bash -c -- trlprobe", true},
	{"bash --norc -c trlprobe", true},
	{"sh -ec trlprobe", true},
	{`sh -c 'eval "$1"' _ trlprobe`, true},
	{"printf '%s\\n' trlprobe | sh", true},
	{"sh -s < cmds", true},
	{"env -- trlprobe", true},
	{"env -u X trlprobe", true},
	{"env --unset=X trlprobe", true},
	{"env -C . trlprobe", true},
	{"timeout --signal=KILL 5 trlprobe", true},
	{"timeout -k 1 5s trlprobe", true},
	{"time -p trlprobe", true},
	{"xargs -0 trlprobe < /dev/null", true},
	{"trlprobe & wait", true},
	{"! trlprobe", true},
	{"trlprobe | cat", true},
	{"true | trlprobe", true},
	{"declare -x A=$(trlprobe)", true},
	{"{ trlprobe; } 2>/dev/null", true},
	{"ls() { trlprobe; }; ls", true},
	{"trl\\\nprobe", true},
	{"${SHELL:-sh} -c trlprobe", true},
	{"PATH=/nowhere:$PATH trlprobe", true},
	// What a reviewer ran past the policy: the shell's own syntax and
	// builtins that run a string later.
	{"trap -- trlprobe EXIT", true},
	{"trap -- 'trlprobe' ERR; false", true},
	{"PS4='$(trlprobe)'; set -x; true", true},
	{"PROMPT_COMMAND=trlprobe", false}, // run by an interactive bash
	{"PS0='$(trlprobe)'", false},
	{"export BASH_ENV=./cmds; bash -c true", true},
	{"x='a[$(trlprobe)]'; (( x ))", true},
	{"x='a[$(trlprobe)]'; echo $((x))", true},
	{"test -v 'a[$(trlprobe)]'", true},
	{"x=a[\\$\\(trlprobe\\)]; (( x ))", true},
	{"mapfile -C 'trlprobe #' -c 1 <<< a", true},
	{"compgen -C trlprobe x", true},
	{"history -s trlprobe; fc -s trlprobe", true},
	{"rbash -c trlprobe", true}, // Debian's bash package has rbash
	{"read PS4 <<< '$(trlprobe)'; set -x; true", true},
	{"printf -v PS4 '%s' '$(trlprobe)'; set -x; true", true},
	{"declare -n r=PS4; r='$(trlprobe)'; set -x; true", true},
	{"read PROMPT_COMMAND <<< trlprobe", false}, // run by an interactive bash
	{"echo trlprobe | { sh; }", true},
	{"x='$(trlprobe)'; echo \"${x@P}\"", true},
	{"echo $'\\'; trlprobe #'", false},      // run by dash: no $'' there
	{"echo a &> /dev/null trlprobe", false}, // run by dash: `echo a &` then `> /dev/null trlprobe`
	// zsh: run by zsh only.
	{"echo *(e:'trlprobe':)", false},
	{"emulate sh -c trlprobe", false},
	{"sched +0 trlprobe", false},
	{"compgen -W '$(trlprobe)' x", true},
	{"unset PS4; : \"${PS4:=\\$(trlprobe)}\"; set -x; true", true},
	{"declare \"PS4=\\$(trlprobe)\"; set -x; true", true},
	{"echo trlprobe | (sh)", true},
	{"f() { sh; }; echo trlprobe | f", true},
	{"bash -c sh <<< trlprobe", true},
	{"{ sh; } <<< trlprobe", true},
	{"sh <<EOF\necho \\`trlprobe\\`\nEOF", true},
	// zsh: run by zsh only.
	{"=trlprobe", false},
	{"noglob trlprobe", false},
	{"nocorrect trlprobe", false},
	{"- trlprobe", false},
	{"repeat 1 trlprobe", false},
	{"repeat 1 do trlprobe; done", false},
	{"foreach i (1) trlprobe; end", false},
	{"() { trlprobe }", false},
	{"echo trlprobe", false},
	{"echo 'trlprobe'", false},
	{"cat <<'EOF'\n$(trlprobe)\nEOF", false},
	{"# trlprobe", false},
}

// TestRealShellsAgree runs each line in bash, dash and zsh with a
// trlprobe on PATH that only records that it ran, and checks the policy
// never allows a line that ran it: what the parse sees is what shells
// run.
func TestRealShellsAgree(t *testing.T) {
	p, err := Parse([]byte("default: allow\nunknown: ask\nrules:\n  - {match: {program: trlprobe}, action: deny}\n"), "probe.yaml")
	require.NoError(t, err)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "trlprobe"), []byte("#!/bin/sh\necho ran >> \"$TRL_PROBE_LOG\"\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cmds"), []byte("trlprobe\n"), 0o644))

	for _, shell := range []string{"bash", "dash", "zsh"} {
		path, err := osexec.LookPath(shell)
		if err != nil {
			t.Logf("skipping %s: not installed", shell)
			continue
		}
		t.Run(shell, func(t *testing.T) {
			for i, tt := range probeLines {
				log := filepath.Join(dir, shell+".log")
				_ = os.Remove(log)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				args := []string{"-c", tt.line}
				if shell == "bash" {
					args = []string{"-O", "expand_aliases", "-c", tt.line}
				}
				cmd := osexec.CommandContext(ctx, path, args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "TRL_PROBE_LOG="+log)
				out, _ := cmd.CombinedOutput()
				cancel()
				_, statErr := os.Stat(log)
				ran := statErr == nil
				d := p.Evaluate(Input{Line: tt.line})
				if ran {
					assert.NotEqual(t, Allow, d.Action, "%s ran trlprobe for line %d %q, the policy allowed it: %+v", shell, i, tt.line, d)
				}
				if shell == "bash" {
					assert.Equal(t, tt.runs, ran, "bash and the corpus disagree on line %d %q: %s", i, tt.line, strings.TrimSpace(string(out)))
				}
			}
		})
	}
}
