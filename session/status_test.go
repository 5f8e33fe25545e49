package session

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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
// status it is given, and called as the line calls it (`q N && :`) it
// leaves $? N without ending the shell under errexit or firing an ERR
// trap.
func TestStatusFuncUnderErrexit(t *testing.T) {
	for _, shell := range lookShells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			q := trlName("0123456789abcdef", "q")
			scripts := map[string]string{
				q + " 3; echo got $?":                   "got 3\n",
				"set -e; " + q + " 3 && :; echo got $?": "got 3\n",
			}
			if !strings.HasSuffix(shell, "/sh") {
				scripts["trap 'echo ERR' ERR; "+q+" 3 && :; echo got $?"] = "got 3\n"
			}
			for script, want := range scripts {
				out, err := osexec.Command(shell, "-c", statusFunc("0123456789abcdef")+script).CombinedOutput()
				require.NoError(t, err, "%s: %s", script, out)
				assert.Equal(t, want, string(out), script)
			}
		})
	}
}

// TestErrexitKeepsTheSession: under `set -e` a command whose && list or !
// fails, which errexit ignores in a person's shell, leaves the session
// running with the failure as its status and $?; a failing simple
// command ends the shell as it ends a person's (errexitNote).
func TestErrexitKeepsTheSession(t *testing.T) {
	inEachShell(t, func(t *testing.T, s *Session) {
		run := func(cmd string) (string, string, Status) {
			t.Helper()
			out, errOut, st := run2(t, s, cmd)
			require.False(t, st.Exited, "%q ended the shell: %v", cmd, s.EndCause())
			return out, errOut, st
		}
		run("set -e")
		for cmd, code := range map[string]int{
			"false && true":                          1,
			"grep -q absent /dev/null && echo found": 1,
			"! true":                                 1,
			"false && true # a comment":              1,
			"true":                                   0,
			"false || true":                          0,
			"if false; then :; fi":                   0,
			"false && true;":                         1,
			"false && true\n":                        1,
			"echo x >/dev/null; false && true":       1,
		} {
			out, errOut, st := run(cmd)
			assert.Equal(t, code, st.ExitCode, "%q", cmd)
			assert.Empty(t, out, "%q", cmd)
			assert.Empty(t, errOut, "%q", cmd)
			out, _, _ = run("echo $?")
			assert.Equal(t, strconv.Itoa(code)+"\n", out, "$? after %q", cmd)
		}
		// The status is the command's own, not a capture left by an
		// earlier one, when the capture is not reached or not there.
		_, _, st := run("false && true")
		require.Equal(t, 1, st.ExitCode)
		_, _, st = run("cat <<EOF\nheredoc\nEOF")
		assert.Equal(t, 0, st.ExitCode, "a here-document runs without the capture")
		run("set +e")
		_, _, st = run("(exit 4)")
		assert.Equal(t, 4, st.ExitCode)
		_, _, st = run("cat <<EOF\nheredoc\nEOF\n(exit 5)")
		assert.Equal(t, 5, st.ExitCode, "without the capture the status is $?")
		run("set -e")
		_, _, st = run2(t, s, "false")
		assert.True(t, st.Exited, "a failing simple command under errexit ends the shell")
	})
}

// TestCaptureSep: the status capture goes on the text's last line, after
// "; " or after the text's own ; or &, or on a line of its own where a
// comment could be; a text that would run on into it, or that it could
// change, runs without it (errexitNote).
func TestCaptureSep(t *testing.T) {
	for text, want := range map[string]string{
		"echo a": "; ", "echo a;": " ", "sleep 1 &": " ", "echo a  ": "; ", "echo 'a|'": "; ",
		"echo a\n": "", "echo a # b": "\n", "echo ${#x}": "\n", "f() { :; }": "; ",
		"echo a &&": "none", "echo a ||  ": "none", "echo a |": "none", "echo a |&": "none",
		"echo a \\": "none", "cat <<EOF\nx\nEOF": "none", "cat <<<x": "none",
		"set -o history; echo a": "none", "": "none", " \n": "none",
		"if true; then": "none", "while :; do": "none", "f() {": "none", "case x in a) :;;": "none",
		"for i in": "none", "! ": "none",
	} {
		sep, ok := captureSep(text)
		if !ok {
			sep = "none"
		}
		assert.Equal(t, want, sep, "%q", text)
	}
}

// TestSyntaxErrorsAsBefore: a text that is a syntax error says so as it
// did before the status capture, line number included, and one ending in
// a comment still runs.
func TestSyntaxErrorsAsBefore(t *testing.T) {
	inEachShell(t, func(t *testing.T, s *Session) {
		for _, text := range []string{"echo a &&", "echo 'abc", "if true; then echo a", "echo a; fi"} {
			out, errOut, st := run2(t, s, text)
			want, _ := osexec.Command(s.cfg.Shell, "-c", "eval "+quote(text)).CombinedOutput()
			wantLine := lastLineNumber(string(want))
			if strings.HasSuffix(s.cfg.Shell, "bash") {
				wantLine = "" // a one-line command's messages name no line (sourceName)
			}
			assert.NotContains(t, errOut, "_trl", "%q", text)
			assert.Equal(t, wantLine, lastLineNumber(errOut), "%q: %q, as eval says %q", text, errOut, want)
			if strings.HasSuffix(s.cfg.Shell, "zsh") && text == "echo a &&" {
				assert.Equal(t, "a\n", out, "zsh's eval runs a list ending in && as far as it goes")
				continue
			}
			assert.Empty(t, out, "%q", text)
			assert.NotEqual(t, 0, st.ExitCode, "%q", text)
		}
		out, _, st := run2(t, s, "echo a # b")
		assert.Equal(t, "a\n", out)
		assert.Equal(t, 0, st.ExitCode)
	})
}

// lastLineNumber is the line number of a shell's syntax error message
// ("sh: 1: eval: …", "bash: eval: line 1: …", "(eval):1: …"), "" if none.
var lineNumber = regexp.MustCompile(`(?:: |line |\(eval\):)(\d+):`)

func lastLineNumber(msg string) string {
	m := lineNumber.FindAllStringSubmatch(msg, -1)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1][1]
}

// TestErrTrapFiresOnce: a bash or zsh ERR trap fires once for a failing
// command, not again for trl's own statements around it (the one that
// restores $? on the next line, the source or eval that ran it, zsh's
// history hook refusing trl's line). The trap
// appends to a file: what it writes to its stdout outside the command
// would not be seen.
func TestErrTrapFiresOnce(t *testing.T) {
	inEachShell(t, func(t *testing.T, s *Session) {
		if strings.HasSuffix(s.cfg.Shell, "/sh") {
			t.Skip("dash has no ERR trap")
		}
		log := filepath.Join(t.TempDir(), "err.log")
		run2(t, s, "trap 'echo ERR >>"+quote(log)+"' ERR")
		_, _, st := run2(t, s, "false")
		assert.Equal(t, 1, st.ExitCode)
		out, _, _ := run2(t, s, "echo next")
		assert.Equal(t, "next\n", out)
		got, err := os.ReadFile(log)
		require.NoError(t, err)
		assert.Equal(t, "ERR\n", string(got), "the trap fired once, for false")
	})
}
