package session

import (
	"context"
	osexec "os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLastStatusIsDollarQuestion: a command starts with the last command's
// status as $?, as a person's next command does, whatever trl's own lines
// ran between; under errexit, where restoring a failure would end the
// shell, the session lives on.
func TestLastStatusIsDollarQuestion(t *testing.T) {
	for _, shell := range lookShells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			t.Parallel()
			s, err := newManager(t).Create(Config{Shell: shell})
			require.NoError(t, err)
			out := func(cmd string) string {
				t.Helper()
				o, e, st := run2(t, s, cmd)
				require.False(t, st.Exited, "%q ended the shell: %s", cmd, e)
				return o
			}
			_, _, st := run2(t, s, "false")
			require.Equal(t, 1, st.ExitCode)
			assert.Equal(t, "1\n", out("echo $?"))
			assert.Equal(t, "0\n", out("echo $?"), "echo itself succeeded")
			_, _, st = run2(t, s, "sh -c 'exit 3'")
			require.Equal(t, 3, st.ExitCode)
			_, err = s.State(context.Background()) // trl's own line between
			require.NoError(t, err)
			assert.Equal(t, "3\n", out(`echo "$?"`))
			assert.Equal(t, "x 1\n", out(`false; echo x $?; true`))
			assert.Equal(t, "0\n", out("echo $?"), "the line ended with true")
		})
	}
}

// TestStatusFuncUnderErrexit: the function that restores $? returns the
// status it is given, but 0 under errexit, where a failing return would
// end the shell.
func TestStatusFuncUnderErrexit(t *testing.T) {
	for _, shell := range lookShells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			q := trlName("0123456789abcdef", "q")
			for script, want := range map[string]string{
				q + " 3; echo got $?":              "got 3\n",
				"set -e; " + q + " 3; echo got $?": "got 0\n",
			} {
				out, err := osexec.Command(shell, "-c", statusFunc("0123456789abcdef")+script).CombinedOutput()
				require.NoError(t, err, "%s: %s", script, out)
				assert.Equal(t, want, string(out), script)
			}
		})
	}
}
