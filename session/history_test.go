package session

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// historyShells are the shells that keep a history, with the command that
// lists it: bash's `history` lists the command running it last; zsh's
// `fc -l 1` lists the commands before it.
func historyShells(t *testing.T) map[string]string {
	out := map[string]string{}
	for name, list := range map[string]string{"bash": "history", "zsh": "fc -l 1"} {
		if p, err := exec.LookPath(name); err == nil {
			out[p] = list
		} else {
			t.Logf("%s is not installed: skipped", name)
		}
	}
	return out
}

// listed is the history a listing printed: its entries without numbers.
func listed(out string) []string {
	var entries []string
	num := regexp.MustCompile(`^\s*\d+\*?\s+`)
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if l != "" {
			entries = append(entries, num.ReplaceAllString(l, ""))
		}
	}
	return entries
}

// TestHistoryListsTheCommands: a session's history lists the commands run
// in it, as a person's lists what they typed, and nothing of the lines
// trl wrote to run them or of its own (they carry the session's nonce):
// not the init line, not a command's line, not the line that settles the
// shell after an interrupt.
func TestHistoryListsTheCommands(t *testing.T) {
	for shell, list := range historyShells(t) {
		t.Run(shell, func(t *testing.T) {
			t.Parallel()
			s, err := newManager(t).Create(Config{Shell: shell, Env: map[string]string{"HOME": t.TempDir()}})
			require.NoError(t, err)
			cmds := []string{"cd /tmp", `echo "it's" 'a "quote"'`, "false", "x=1; echo $x", `printf '%s\n' 'a\nb' '\\'`}
			for _, c := range cmds {
				run2(t, s, c)
			}
			// An interrupted command, and the line that settles the shell
			// before the next one.
			k := &splitSink{}
			j, err := s.Start(Command{Text: "sleep 30"}, k)
			require.NoError(t, err)
			require.Eventually(t, func() bool { return s.commandGroup() > 0 }, 10*time.Second, 5*time.Millisecond)
			_, err = s.Signal(j, unix.SIGINT)
			require.NoError(t, err)
			select {
			case <-j.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("sleep was not interrupted")
			}
			cmds = append(cmds, "sleep 30")
			if strings.HasSuffix(shell, "bash") {
				// A person interrupting their shell runs the settle line
				// first, which bash saves.
				_, err := s.Start(Command{Text: "true"}, &splitSink{})
				require.NoError(t, err)
				cmds = append(cmds, "true")
				require.Eventually(t, func() bool { return s.Info().State == StateIdle }, 10*time.Second, 5*time.Millisecond)
			}
			out, errOut, st := run2(t, s, list)
			require.Equal(t, 0, st.ExitCode, errOut)
			want := cmds
			if list == "history" {
				want = append(want, list) // bash lists the command running it
			}
			assert.Equal(t, want, listed(out))
			assert.NotContains(t, out, "_trl")
			assert.NotContains(t, out, "TRL:")
			assert.NotContains(t, out, s.nonce)
		})
	}
}

// TestHistoryOffIsKept: a bash command that turns history off is listed
// (bash saves a line before running it), the commands after it are not,
// and once history is on again the commands are listed again.
func TestHistoryOffIsKept(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	s, err := newManager(t).Create(Config{Shell: bash, Env: map[string]string{"HOME": t.TempDir()}})
	require.NoError(t, err)
	for _, c := range []string{"echo one", "set +o history", "echo unseen", "set -o history", "echo two"} {
		run2(t, s, c)
	}
	out, _, _ := run2(t, s, "history")
	assert.Equal(t, []string{"echo one", "set +o history", "echo two", "history"}, listed(out))
}

// TestHistoryForked: a fork lists its own commands only, as a fresh
// session does (history is not part of a state), and a zsh state neither
// shows trl's history hook nor, when it carries hooks of the user's, loses
// the fork's.
func TestHistoryForked(t *testing.T) {
	for shell, list := range historyShells(t) {
		t.Run(shell, func(t *testing.T) {
			t.Parallel()
			m := newManager(t)
			src, err := m.Create(Config{Shell: shell, Env: map[string]string{"HOME": t.TempDir()}})
			require.NoError(t, err)
			run2(t, src, "echo in the source")
			if strings.HasSuffix(shell, "zsh") {
				st, err := src.State(context.Background())
				require.NoError(t, err)
				for _, v := range st.Vars {
					assert.NotEqual(t, zshHistoryHooks, v.Name, "trl's hook is not the user's state")
				}
				run2(t, src, "mine() { return 0 }; zshaddhistory_functions+=(mine)")
			}
			st, err := src.State(context.Background())
			require.NoError(t, err)
			fork, err := m.Create(Config{Shell: shell, State: st})
			require.NoError(t, err)
			run2(t, fork, "echo in the fork")
			out, _, _ := run2(t, fork, list)
			want := []string{"echo in the fork"}
			if list == "history" {
				want = append(want, list)
			}
			assert.Equal(t, want, listed(out))
			assert.NotContains(t, out, fork.nonce)
			if strings.HasSuffix(shell, "zsh") {
				out, _, _ := run2(t, fork, `print -l -- $zshaddhistory_functions`)
				assert.Equal(t, "mine\n"+trlName(fork.nonce, "hh")+"\n", out, "the user's hook is carried, trl's is the fork's own")
			}
		})
	}
}
