package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trl-project/trl/screen"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stateCorpus is, per shell, the commands that set up a source session's
// state: one state item each (at least 40 per shell), and a probe whose
// output, run in the source and in a fork, must be the same.
type stateCorpus struct {
	items []string
	probe string
}

// commonItems hold for every shell (dash included).
func commonItems(dir, readonly string) []string {
	q := quote
	return []string{
		`v_nl='line1
line2'`,
		`v_sq="it's"`,
		`v_dq='say "hi"'`,
		`v_bs='back\slash\\ and \n'`,
		`v_dollar='$HOME and $(date) and ` + "`x`" + `'`,
		`v_uni='héllo wörld ✓ 日本語'`,
		`v_empty=''`,
		`v_tab="a	b"`,
		`v_ctrl="$(printf '\001\037\177')"`,
		`v_trailing="$(printf 'x\n\n.')"`,
		`v_spaces='  lead and trail  '`,
		`v_glob='*?[a]'`,
		`v_eq='a=b=c'`,
		`v_semicolon='a; rm -rf /nonexistent; b'`,
		`export E_plain=exported`,
		`export E_nl='e
nl'`,
		`export E_quote="'\"'"`,
		readonly + ` R_one='fixed value'`,
		`export R_exp=1; ` + readonly + ` R_exp`,
		`alias ll='ls -l'`,
		`alias q='echo "it'\''s"'`,
		`alias e2='echo $HOME'`,
		`alias exitx='exit 3'`,
		`set -o noclobber`,
		`set -o allexport; set +o allexport`,
		`set -o noglob`,
		`umask 027`,
		`mkdir -p ` + q(dir+"/dir with spaces/sub") + ` ` + q(dir+"/a") + ` ` + q(dir+"/b"),
		`cd ` + q(dir+"/dir with spaces"),
		`OLDPWD=` + q(dir+"/a"),
		`unset PAGER`,
		`PATH="$PATH:/opt/x y"`,
		`v_long="$(printf '%0500d' 0)"`,
		`v_pct='100% %s %d'`,
		`v_backtick='` + "`" + `'`,
		`v_brace='${x:-y} {a,b}'`,
		`v_hash='#not a comment'`,
		`v_cr="$(printf 'a\rb')"`,
		`v_esc="$(printf '\033[31mred\033[0m')"`,
		`export E_uni='ünïcödé'`,
		`v_num=007`,
	}
}

func bashCorpus(dir string) stateCorpus {
	q := quote
	items := append(commonItems(dir, "readonly"),
		`arr=(one 'two words' $'three\nlines' '' "q'uote")`,
		`sparse=([3]=c [10]=j)`,
		`declare -A assoc=([k1]=v1 ['key with space']='val ue' [$'nl\nkey']=x ['q"k']="'" ['x]y']=z)`,
		`declare -A assoc_empty=([a]='')`,
		`readonly -a ro_arr=(x y)`,
		`declare -i I_num=42`,
		`declare -l L_low=MiXeD`,
		`declare -u U_up=MiXeD`,
		`declare -n ref=arr`,
		`declare -xi XI=5`,
		`f_simple() { echo simple; }`,
		"f_heredoc() {\ncat <<'EOF'\n$not expanded 'quotes' \"dq\"\nEOF\n}",
		"f_heredoc2() {\ncat <<EOF\nvalue=$v_sq\nEOF\n}",
		`f_nested() { echo "a 'b' \"c\" $(echo "d 'e'")"; }`,
		`f_args() { printf '%s|' "$@"; echo; }`,
		`f_local() { local x=1; echo "$x${1:-}"; }`,
		`set -o pipefail`,
		`shopt -s extglob`,
		`shopt -s nullglob`,
		`shopt -s dotglob`,
		`shopt -u expand_aliases; shopt -s expand_aliases`,
		`HISTSIZE=77`,
		`pushd `+q(dir+"/a")+` >/dev/null; pushd `+q(dir+"/b")+` >/dev/null; cd `+q(dir+"/dir with spaces"),
		`set -o nounset`,
		`set -o errexit`,
	)
	return stateCorpus{items: items, probe: `declare -p v_nl v_sq v_dq v_bs v_dollar v_uni v_empty v_ctrl v_trailing arr sparse assoc ro_arr I_num L_low U_up ref XI E_nl R_one R_exp; ` +
		`declare -f f_simple f_heredoc f_nested; f_heredoc; f_heredoc2; f_nested; f_args a 'b c' ''; f_local z; alias; ` +
		`set -o | grep -E 'pipefail|noclobber|nounset|errexit|noglob'; shopt extglob nullglob dotglob; umask; dirs -l -p; pwd; echo "$OLDPWD"; ` +
		`echo "${PAGER-unset}"; q; [[ -o pipefail ]] && echo pipefail-on; echo "${v_undefined-}|"; true`}
}

func zshCorpus(dir string) stateCorpus {
	q := quote
	// typeset in a command is local to trl's runner function: -g.
	items := append(commonItems(dir, "typeset -gr"),
		`arr=(one 'two words' $'three\nlines' '' "q'uote")`,
		`typeset -gA assoc; assoc=(k1 v1 'key with space' 'val ue' $'nl\nkey' x 'q"k' "'" 'x]y' z)`,
		`typeset -gA assoc_empty; assoc_empty=(a '')`,
		`ro_arr=(x y); typeset -gr ro_arr`,
		`typeset -gi I_num=42`,
		`typeset -gl L_low=MiXeD`,
		`typeset -gu U_up=MiXeD`,
		`typeset -gU uniq; uniq=(a b a)`,
		`v_nul=$'a\0b'`,
		`f_simple() { echo simple; }`,
		"f_heredoc() {\ncat <<'EOF'\n$not expanded 'quotes' \"dq\"\nEOF\n}",
		"f_heredoc2() {\ncat <<EOF\nvalue=$v_sq\nEOF\n}",
		`f_nested() { echo "a 'b' \"c\" $(echo "d 'e'")"; }`,
		`f_args() { printf '%s|' "$@"; echo; }`,
		`f_local() { local x=1; echo "$x${1:-}"; }`,
		`setopt pipefail`,
		`setopt extendedglob`,
		`setopt nullglob`,
		`setopt ksh_glob`,
		`HISTSIZE=77`,
		`pushd `+q(dir+"/a")+` >/dev/null; pushd `+q(dir+"/b")+` >/dev/null; cd `+q(dir+"/dir with spaces"),
		`setopt nounset`,
		`setopt errexit`,
	)
	return stateCorpus{items: items, probe: `typeset -p v_nl v_sq v_dq v_bs v_dollar v_uni v_empty v_ctrl v_trailing arr assoc ro_arr I_num uniq E_nl R_one R_exp v_nul; ` +
		`functions f_simple f_heredoc f_nested; f_heredoc; f_heredoc2; f_nested; f_args a 'b c' ''; f_local z; alias; ` +
		`setopt; umask; print -rl -- $dirstack; pwd; echo "$OLDPWD"; echo "${PAGER-unset}"; q; [[ -o pipefail ]] && echo pipefail-on; echo "${v_undefined-}|"; true`}
}

func shCorpus(dir string) stateCorpus {
	return stateCorpus{items: commonItems(dir, "readonly"), probe: `printf '[%s]\n' "$v_nl" "$v_sq" "$v_dq" "$v_bs" "$v_dollar" "$v_uni" "$v_empty" "$v_ctrl" "$v_trailing" "$E_nl" "$R_one" "$v_long" "$v_cr"; ` +
		`export -p | grep -v -e TRL_SESSION_ID; readonly -p | grep -v PS1; alias | sort; set +o; umask; pwd; echo "$OLDPWD"; echo "${PAGER-unset}"; q; true`}
}

func corpusFor(shell, dir string) stateCorpus {
	switch dialectFor(shell).name {
	case "bash":
		return bashCorpus(dir)
	case "zsh":
		return zshCorpus(dir)
	}
	return shCorpus(dir)
}

// stateShells are the shells to test, zsh installed or said missing.
func stateShells(t *testing.T) []string {
	if _, err := exec.LookPath("zsh"); err != nil {
		t.Log("zsh is not installed (apt-get install -y zsh): its state tests are skipped")
	}
	return lookShells(t)
}

// quietly counts every byte the session's terminal and stderr pipe
// produce until the returned function is called.
func quietly(s *Session) (stop func() int64) {
	var n atomic.Int64
	cancel := s.Subscribe(func(_ Stream, p []byte) { n.Add(int64(len(p))) })
	return func() int64 { cancel(); return n.Load() }
}

// setUp runs the corpus in s; every item must succeed silently on stderr.
func setUp(t *testing.T, s *Session, c stateCorpus) {
	t.Helper()
	for _, item := range c.items {
		_, errOut, st := run2(t, s, item)
		require.Equal(t, 0, st.ExitCode, "%q", item)
		require.Empty(t, errOut, "%q", item)
	}
}

// TestStateForkRoundTrip: a corpus of at least 40 state items per shell
// set in a source session; a session created from its state reads back
// equal, field by field, and commands in it see the same (the probe's
// output is the same in both); nothing reaches the source's terminal,
// screen or idle log; changing the fork leaves the source's state as it
// was.
func TestStateForkRoundTrip(t *testing.T) {
	for _, shell := range stateShells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			c := corpusFor(shell, dir)
			require.GreaterOrEqual(t, len(c.items), 40)
			m := newManager(t)
			src, err := m.Create(Config{Shell: shell})
			require.NoError(t, err)
			setUp(t, src, c)
			probeSrc, errSrc, _ := run2(t, src, c.probe)
			require.Empty(t, errSrc)

			idleBefore := src.Output(0, 1<<20)
			screenBefore := src.Screen().Snapshot(screen.SnapshotOptions{ScrollbackLines: 1000})
			stop := quietly(src)
			st, err := src.State(context.Background())
			require.NoError(t, err)
			fork, err := m.Create(Config{Shell: shell, State: st, Parent: src.ID()})
			require.NoError(t, err)
			st2, err := src.State(context.Background())
			require.NoError(t, err)
			assert.Zero(t, stop(), "trl's state lines wrote to the source's terminal or stderr")
			assert.Equal(t, idleBefore, src.Output(0, 1<<20), "idle log changed")
			assert.Equal(t, screenBefore, src.Screen().Snapshot(screen.SnapshotOptions{ScrollbackLines: 1000}), "screen changed")
			assert.Equal(t, st, st2, "reading the state changed it")
			assert.Equal(t, src.ID(), fork.Info().Parent)

			forked, err := fork.State(context.Background())
			require.NoError(t, err)
			assertSameState(t, st, forked)

			probeFork, errFork, _ := run2(t, fork, c.probe)
			assert.Empty(t, errFork)
			assert.Equal(t, probeSrc, probeFork, "commands in the fork see another state")
			assert.Contains(t, probeFork, "fixed value")

			// The fork's changes stay in the fork.
			_, _, stc := run2(t, fork, `v_sq=changed; unalias ll; cd /; umask 077; E_plain=other`)
			assert.Equal(t, 0, stc.ExitCode)
			again, err := src.State(context.Background())
			require.NoError(t, err)
			assertSameState(t, st, again)
			out, _, _ := run2(t, src, `echo "$v_sq"; pwd`)
			assert.Equal(t, "it's\n"+dir+"/dir with spaces\n", out)
		})
	}
}

// assertSameState compares two states field by field, naming the field
// that differs.
func assertSameState(t *testing.T, want, got *ShellState) {
	t.Helper()
	assert.Equal(t, want.Shell, got.Shell, "shell")
	assert.Equal(t, want.Cwd, got.Cwd, "cwd")
	assert.Equal(t, want.Env, got.Env, "env")
	wv := map[string]Var{}
	for _, v := range want.Vars {
		wv[v.Name] = v
	}
	gv := map[string]Var{}
	for _, v := range got.Vars {
		gv[v.Name] = v
	}
	for name, v := range wv {
		assert.Equal(t, v, gv[name], "var %s", name)
	}
	for name := range gv {
		_, ok := wv[name]
		assert.True(t, ok, "var %s appeared", name)
	}
	assert.Equal(t, want.Readonly, got.Readonly, "readonly")
	assert.Equal(t, want.Functions, got.Functions, "functions")
	assert.Equal(t, want.Aliases, got.Aliases, "aliases")
	assert.Equal(t, want.Options, got.Options, "options")
	assert.Equal(t, want.Umask, got.Umask, "umask")
	assert.Equal(t, want.Dirs, got.Dirs, "dirs")
	assert.Equal(t, want.NotCarried, got.NotCarried, "not_carried")
}

// TestStateCarriedToAnotherManager: a state, through JSON, creates an
// equal session under another Manager (as on another daemon), with the
// shell taken from the state.
func TestStateCarriedToAnotherManager(t *testing.T) {
	for _, shell := range stateShells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			c := corpusFor(shell, dir)
			src, err := newManager(t).Create(Config{Shell: shell})
			require.NoError(t, err)
			setUp(t, src, c)
			st, err := src.State(context.Background())
			require.NoError(t, err)
			b, err := json.Marshal(st)
			require.NoError(t, err)
			var carried ShellState
			require.NoError(t, json.Unmarshal(b, &carried))
			cfg := Config{State: &carried}
			if carried.Shell == "sh" {
				cfg.Shell = shell
			}
			other, err := newManager(t).Create(cfg)
			require.NoError(t, err)
			got, err := other.State(context.Background())
			require.NoError(t, err)
			assertSameState(t, st, got)
		})
	}
}

// TestStateBusy: a session running a command answers ErrBusy.
func TestStateBusy(t *testing.T) {
	s, err := newManager(t).Create(Config{})
	require.NoError(t, err)
	j, err := s.Start(Command{Text: "sleep 5"}, &splitSink{})
	require.NoError(t, err)
	_, err = s.State(context.Background())
	assert.ErrorIs(t, err, ErrBusy)
	j.Signal(2)
	<-j.Done()
	_, err = s.State(context.Background())
	assert.NoError(t, err)
}

// TestStateHostile: a state naming trl's machinery or prompt is refused;
// one whose functions and aliases shadow what trl's lines use (cd,
// printf, eval, set, typeset, `if`, exit, `.`) cannot break the new
// session: it runs commands, reports their status, and its state can be
// read and forked again.
func TestStateHostile(t *testing.T) {
	for _, shell := range stateShells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			t.Parallel()
			m := newManager(t)
			src, err := m.Create(Config{Shell: shell})
			require.NoError(t, err)
			st, err := src.State(context.Background())
			require.NoError(t, err)

			refuse := func(what string, f func(st *ShellState)) {
				c := cloneState(t, st)
				f(c)
				_, err := m.Create(Config{Shell: shell, State: c})
				assert.ErrorIs(t, err, ErrInvalid, what)
				if err != nil {
					t.Logf("%s: %v", what, err)
				}
			}
			refuse("machinery variable", func(c *ShellState) {
				c.Vars = append(c.Vars, Var{Name: "_trl0123456789abcdefr", Kind: "scalar", Value: "x"})
			})
			refuse("machinery env", func(c *ShellState) { c.Env["_trl0123456789abcdefn"] = "1" })
			refuse("PS1", func(c *ShellState) { c.Vars = append(c.Vars, Var{Name: "PS1", Kind: "scalar", Value: "$ "}) })
			refuse("PROMPT_COMMAND", func(c *ShellState) { c.Env["PROMPT_COMMAND"] = "echo x" })
			refuse("TRL_SESSION_ID", func(c *ShellState) { c.Env["TRL_SESSION_ID"] = "s-1" })
			refuse("machinery function", func(c *ShellState) { c.Functions["_trl0123456789abcdefr"] = "x() { :; }" })
			refuse("function builtin", func(c *ShellState) { c.Functions["builtin"] = "builtin() { :; }" })
			refuse("machinery alias", func(c *ShellState) { c.Aliases["_trl0123456789abcdeff"] = "exit" })
			refuse("monitor option", func(c *ShellState) { c.Options["monitor"] = false })
			refuse("bad umask", func(c *ShellState) { c.Umask = "0022; rm -rf /" })
			refuse("relative cwd", func(c *ShellState) { c.Cwd = "tmp" })
			refuse("bad var name", func(c *ShellState) {
				c.Vars = append(c.Vars, Var{Name: "a;b", Kind: "scalar"})
			})

			h := cloneState(t, st)
			h.Vars = append(h.Vars, Var{Name: "_trlx", Kind: "scalar", Value: "a name like trl's, but not its machinery"})
			h.Aliases["exit"] = "echo HIJACK-exit"
			h.Aliases["if"] = "echo HIJACK-if"
			h.Aliases["cd"] = "echo HIJACK-cd"
			h.Aliases["printf"] = "echo HIJACK-printf"
			if h.Shell != "sh" {
				for _, name := range []string{"cd", "printf", "eval", "set", "unset", "export", "readonly", "umask", "alias", "test", "true", "shopt", "typeset", "declare", "local", "emulate", "history", "pushd", "trap", "jobs", "mapfile"} {
					h.Functions[name] = name + "() { echo HIJACK-" + name + "; }"
				}
			}
			hs, err := m.Create(Config{Shell: shell, State: h})
			require.NoError(t, err)
			out, errOut, status := run2(t, hs, `echo ok; false`)
			assert.Equal(t, "ok\n", out)
			assert.Empty(t, errOut)
			assert.Equal(t, 1, status.ExitCode)
			again, err := hs.State(context.Background())
			require.NoError(t, err)
			assert.Equal(t, "echo HIJACK-exit", again.Aliases["exit"])
			assert.Equal(t, h.Cwd, again.Cwd)
			fork, err := m.Create(Config{Shell: shell, State: again})
			require.NoError(t, err)
			out, _, _ = run2(t, fork, `echo "$_trlx"`)
			assert.Equal(t, "a name like trl's, but not its machinery\n", out)
		})
	}
}

func cloneState(t *testing.T, st *ShellState) *ShellState {
	b, err := json.Marshal(st)
	require.NoError(t, err)
	var c ShellState
	require.NoError(t, json.Unmarshal(b, &c))
	return &c
}

// TestStateNotCarried: traps, background jobs and open fds are listed
// under not_carried, not dropped.
func TestStateNotCarried(t *testing.T) {
	for _, shell := range stateShells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			t.Parallel()
			s, err := newManager(t).Create(Config{Shell: shell})
			require.NoError(t, err)
			_, _, st := run2(t, s, `trap 'echo bye' USR1; exec 7>/dev/null; sleep 30 & true`)
			require.Equal(t, 0, st.ExitCode)
			state, err := s.State(context.Background())
			require.NoError(t, err)
			var kinds []string
			for _, n := range state.NotCarried {
				kinds = append(kinds, n.What+": "+n.Detail)
			}
			all := strings.Join(kinds, "\n")
			assert.Contains(t, all, "trap: ")
			assert.Contains(t, all, "echo bye")
			assert.Contains(t, all, "job: ")
			assert.Contains(t, all, "sleep 30")
			assert.Contains(t, all, "fd: fd 7 open on /dev/null")
		})
	}
}

// TestStateBashHistory: trl's state line leaves no entry in bash's
// history.
func TestStateBashHistory(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	// HOME of its own: bash loads ~/.bash_history at start, and one that
	// holds HISTSIZE lines already keeps the count from growing.
	s, err := newManager(t).Create(Config{Shell: bash, Env: map[string]string{"HOME": t.TempDir()}})
	require.NoError(t, err)
	count := func() int {
		out, _, _ := run2(t, s, `history | wc -l`)
		n, err := strconv.Atoi(strings.TrimSpace(out))
		require.NoError(t, err)
		return n
	}
	before := count()
	_, err = s.State(context.Background())
	require.NoError(t, err)
	assert.Equal(t, before+1, count(), "the history grew by more than the counting command: trl's state line is in it")
	out, _, _ := run2(t, s, `history`)
	assert.NotContains(t, out, trlName(s.nonce, "x"))
}

// TestStateBashTraps: a DEBUG trap inherited by functions (set -T) and an
// ERR trap (set -E) do not write into the state, are listed as not
// carried, and are in place afterwards.
func TestStateBashTraps(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	s, err := newManager(t).Create(Config{Shell: bash})
	require.NoError(t, err)
	_, _, st := run2(t, s, `set -T -E; trap 'echo DBG' DEBUG; trap 'echo ERR' ERR; trap 'echo RET' RETURN; v=1`)
	require.Equal(t, 0, st.ExitCode)
	stop := quietly(s)
	state, err := s.State(context.Background())
	require.NoError(t, err)
	assert.Zero(t, stop())
	assert.True(t, state.Options["functrace"])
	assert.True(t, state.Options["errtrace"])
	var traps []string
	for _, n := range state.NotCarried {
		if n.What == "trap" {
			traps = append(traps, n.Detail)
		}
	}
	assert.Len(t, traps, 3, "%q", traps)
	out, _, _ := run2(t, s, `trap -p DEBUG ERR RETURN`)
	for _, want := range []string{"trap -- 'echo DBG' DEBUG\n", "trap -- 'echo RET' RETURN\n", "trap -- 'echo ERR' ERR\n"} {
		assert.Contains(t, out, want)
	}
}

// TestStateBashFunctionsSplit: a function whose here-document holds the
// header bash prints for the next function cannot be split out of one
// `declare -f`; the functions are then read one by one, exactly, and the
// history still holds none of trl's lines.
func TestStateBashFunctionsSplit(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	s, err := newManager(t).Create(Config{Shell: bash, Env: map[string]string{"HOME": t.TempDir()}}) // see TestStateBashHistory
	require.NoError(t, err)
	_, _, st := run2(t, s, "a_f() { cat <<'EOF'\n}\nb_f () \n{ \nEOF\n}\nb_f() { echo b; }")
	require.Equal(t, 0, st.ExitCode)
	out, _, _ := run2(t, s, `history | wc -l`)
	before, _ := strconv.Atoi(strings.TrimSpace(out))
	state, err := s.State(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "b_f () \n{ \n    echo b\n}", state.Functions["b_f"])
	assert.Equal(t, "a_f () \n{ \n    cat <<'EOF'\n}\nb_f () \n{ \nEOF\n\n}", state.Functions["a_f"])
	out, _, _ = run2(t, s, `history | wc -l`)
	after, _ := strconv.Atoi(strings.TrimSpace(out))
	assert.Equal(t, before+1, after)

	fork, err := newManager(t).Create(Config{Shell: bash, State: state})
	require.NoError(t, err)
	out, _, _ = run2(t, fork, `a_f; b_f`)
	assert.Equal(t, "}\nb_f () \n{ \nb\n", out)
}

// TestStateApplyFailure: a state the shell cannot apply (its working
// directory does not exist here) fails session creation with the shell's
// message, and leaves no session behind.
func TestStateApplyFailure(t *testing.T) {
	m := newManager(t)
	st := &ShellState{Shell: "sh", Cwd: "/nonexistent-trl-dir", Env: map[string]string{"A": "1"}}
	_, err := m.Create(Config{Shell: "/bin/sh", State: st, Name: "failing"})
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "nonexistent-trl-dir")
	assert.Equal(t, 0, m.Len())
	s, err := m.Create(Config{Shell: "/bin/sh", Name: "failing"})
	require.NoError(t, err, "the name is free again")
	out, _, _ := run2(t, s, "echo ok")
	assert.Equal(t, "ok\n", out)
}

// TestStateConcurrent: reads of one session's state at the same time
// each answer the whole state or ErrBusy, never a broken one.
func TestStateConcurrent(t *testing.T) {
	for _, shell := range stateShells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			t.Parallel()
			s, err := newManager(t).Create(Config{Shell: shell})
			require.NoError(t, err)
			_, _, st := run2(t, s, `v='a value'`)
			require.Equal(t, 0, st.ExitCode)
			errs := make(chan error, 40)
			for i := 0; i < 40; i++ {
				go func() {
					got, err := s.State(context.Background())
					if err == nil && got.Cwd == "" {
						err = errors.New("a state without its cwd")
					}
					errs <- err
				}()
			}
			ok := 0
			for i := 0; i < 40; i++ {
				if err := <-errs; err == nil {
					ok++
				} else {
					assert.ErrorIs(t, err, ErrBusy)
				}
			}
			assert.NotZero(t, ok)
		})
	}
}

// TestStateUmask777: a session whose umask lets nobody read what it makes
// still has its state read and forked (trl's files keep their own modes).
func TestStateUmask777(t *testing.T) {
	for _, shell := range stateShells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			t.Parallel()
			m := newManager(t)
			s, err := m.Create(Config{Shell: shell})
			require.NoError(t, err)
			_, _, st := run2(t, s, `umask 0777; v=kept`)
			require.Equal(t, 0, st.ExitCode)
			state, err := s.State(context.Background())
			require.NoError(t, err)
			assert.Equal(t, "0777", state.Umask)
			fork, err := m.Create(Config{Shell: shell, State: state})
			require.NoError(t, err)
			out, _, _ := run2(t, fork, `echo "$v"; umask`)
			assert.Contains(t, out, "kept\n")
			again, err := fork.State(context.Background())
			require.NoError(t, err)
			assert.Equal(t, "0777", again.Umask)
		})
	}
}

// TestStateForkOfFreshSession: a session that never changed directory
// has no OLDPWD; its fork (which trl moves to the source's directory with
// cd, which sets OLDPWD) reads back equal all the same.
func TestStateForkOfFreshSession(t *testing.T) {
	for _, shell := range stateShells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			t.Parallel()
			m := newManager(t)
			src, err := m.Create(Config{Shell: shell, WorkingDir: t.TempDir()})
			require.NoError(t, err)
			st, err := src.State(context.Background())
			require.NoError(t, err)
			fork, err := m.Create(Config{Shell: shell, State: st})
			require.NoError(t, err)
			got, err := fork.State(context.Background())
			require.NoError(t, err)
			assertSameState(t, st, got)
		})
	}
}

// TestStateShrinks: the shell writes a state over the last one in place;
// a smaller state read after a bigger one holds nothing of the bigger
// one's tail, and reads after it agree.
func TestStateShrinks(t *testing.T) {
	for _, shell := range stateShells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			t.Parallel()
			s, err := newManager(t).Create(Config{Shell: shell})
			require.NoError(t, err)
			var set, unset strings.Builder
			for i := range 100 {
				fmt.Fprintf(&set, "big_%d='%s'; ", i, strings.Repeat("x", 200))
				fmt.Fprintf(&unset, "big_%d ", i)
			}
			_, _, st := run2(t, s, set.String()+"true")
			require.Equal(t, 0, st.ExitCode)
			big, err := s.State(context.Background())
			require.NoError(t, err)
			_, _, st = run2(t, s, "unset "+unset.String()+"; small=1")
			require.Equal(t, 0, st.ExitCode)
			small, err := s.State(context.Background())
			require.NoError(t, err)
			names := func(st *ShellState) (out []string) {
				for _, v := range st.Vars {
					out = append(out, v.Name)
				}
				return out
			}
			assert.Contains(t, names(big), "big_99")
			assert.NotContains(t, names(small), "big_99")
			assert.Contains(t, names(small), "small")
			assert.Equal(t, len(big.Vars)-100+1, len(small.Vars))
			again, err := s.State(context.Background())
			require.NoError(t, err)
			assert.Equal(t, small, again)
		})
	}
}

// TestStateEndMark: a state file whose end mark is another line's (a
// reader that stopped half way over an older, longer state) is refused.
func TestStateEndMark(t *testing.T) {
	for name, c := range map[string]struct {
		ss   stateShell
		body string
	}{
		"bash": {bashState{opts: &bashOptionNames{set: []string{"errexit"}, shopt: []string{"extglob"}}}, "X\x001\x00O\x00errexit\x00S\x00\x00C\x00/tmp\x00U\x000022\n\x00d\x001\x00/tmp\x00t\x00\x00j\x00\x00E\x00"},
		"zsh":  {zshState{}, "X\x00on\x00o\x000\x00C\x00/tmp\x00U\x00022\n\x00D\x000\x00t\x00\x00j\x00\x00E\x00"},
		"sh":   {shState{}, "C\x00/tmp\x00U\x000022\n\x00t\x00\x00j\x00\x00E\x00"},
	} {
		t.Run(name, func(t *testing.T) {
			st, err := c.ss.parse([]byte(c.body+"7\x00stale tail of an older state"), "0123456789abcdef", "7")
			require.NoError(t, err)
			assert.Equal(t, "/tmp", st.Cwd)
			_, err = c.ss.parse([]byte(c.body+"6\x00"), "0123456789abcdef", "7")
			assert.ErrorContains(t, err, "end mark")
		})
	}
}

// TestStateBashOptionsAfterFirstRead: after the first reading (which
// lists every option) bash's options are read from SHELLOPTS and
// BASHOPTS; changes made since are read exactly, as the shell's own
// listing has them.
func TestStateBashOptionsAfterFirstRead(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	s, err := newManager(t).Create(Config{Shell: bash})
	require.NoError(t, err)
	listed := func() map[string]bool {
		out, _, st := run2(t, s, `set -o; shopt`)
		require.Equal(t, 0, st.ExitCode)
		want := map[string]bool{}
		for _, o := range optionLines(out) {
			if carriedOption(o.name) {
				want[o.name] = o.on
			}
		}
		out, _, _ = run2(t, s, `shopt -q expand_aliases && echo on || echo off`)
		want["expand_aliases"] = strings.TrimSpace(out) == "on"
		return want
	}
	first, err := s.State(context.Background())
	require.NoError(t, err)
	assert.Equal(t, listed(), first.Options)
	require.NotNil(t, s.bashOpts.set, "the first reading lists the options' names")
	for _, change := range []string{
		`set -o pipefail -o noclobber +o hashall; shopt -s extglob nullglob dotglob; shopt -u checkwinsize`,
		`set +o pipefail; shopt -u extglob; shopt -s expand_aliases`,
		`shopt -u expand_aliases`,
	} {
		_, _, st := run2(t, s, change)
		require.Equal(t, 0, st.ExitCode, change)
		got, err := s.State(context.Background())
		require.NoError(t, err)
		assert.Equal(t, listed(), got.Options, change)
	}
}
