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
	"mvdan.cc/sh/v3/syntax"
)

// TestLastStatusIsDollarQuestion: a command starts with the last command's
// status as $?, as a person's next command does, whatever trl's own lines
// ran between (under errexit: TestErrexitKeepsTheSession).
func TestLastStatusIsDollarQuestion(t *testing.T) {
	inEachShell(t, func(t *testing.T, s *Session) {
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
		_, err := s.State(context.Background()) // trl's own line between
		require.NoError(t, err)
		assert.Equal(t, "3\n", out(`echo "$?"`))
		assert.Equal(t, "x 1\n", out(`false; echo x $?; true`))
		assert.Equal(t, "0\n", out("echo $?"), "the line ended with true")
	})
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
			"set -eu; false && true":                 1,
		} {
			out, errOut, st := run(cmd)
			assert.Equal(t, code, st.ExitCode, "%q", cmd)
			assert.Empty(t, out, "%q", cmd)
			assert.Empty(t, errOut, "%q", cmd)
			out, _, _ = run("echo $?")
			assert.Equal(t, strconv.Itoa(code)+"\n", out, "$? after %q", cmd)
		}
		// Texts a status capture could break run as they do in a shell.
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "f1"), nil, 0o644))
		out, _, st := run("find " + quote(dir) + " -name f1 -exec echo found {} \\;")
		assert.Equal(t, "found "+filepath.Join(dir, "f1")+"\n", out)
		assert.Equal(t, 0, st.ExitCode)
		out, _, _ = run("echo a\\;")
		assert.Equal(t, "a;\n", out)
		out, _, _ = run("printf '%s.' run \\\n  -it img \\\n")
		assert.Equal(t, "run.-it.img.", out)
		out, _, _ = run("echo a # b")
		assert.Equal(t, "a\n", out)
		// The status is the command's own, not a capture left by an
		// earlier one, when the capture is not reached or not there.
		_, _, st = run("false && true")
		require.Equal(t, 1, st.ExitCode)
		_, _, st = run("cat <<EOF\nheredoc\nEOF")
		assert.Equal(t, 0, st.ExitCode)
		_, _, st = run("cat >/dev/null <<EOF\nheredoc\nEOF\nfalse && true")
		assert.Equal(t, 1, st.ExitCode, "a here-document, then a failing && list")
		// A DEBUG trap writing to stderr runs for the capture too, and
		// succeeds.
		if !strings.HasSuffix(s.cfg.Shell, "/sh") {
			run("trap 'echo D >&2' DEBUG")
			_, _, st = run("false && true")
			assert.Equal(t, 1, st.ExitCode)
			run("trap - DEBUG")
		}
		// Under xtrace the capture is not traced.
		_, errOut, _ := run("set -x")
		assert.NotContains(t, errOut, "_trl")
		out, errOut, _ = run("echo traced")
		assert.Equal(t, "traced\n", out)
		assert.NotContains(t, errOut, "_trl")
		assert.NotContains(t, errOut, "case", "only the command is traced")
		run("set +x")
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

// TestCaptures: the status capture follows a text only while errexit is
// on or the text may turn it on, and only a complete program that does
// not end in a backslash or name history (errexitNote).
func TestCaptures(t *testing.T) {
	for _, c := range []struct {
		text    string
		errexit bool
		want    bool
	}{
		{"false && true", false, false},
		{"false && true", true, true},
		{"set -e; false && true", false, true},
		{"set -euo pipefail\ncd /tmp && ls", false, true},
		{"set -o errexit; true", false, true},
		{"echo reset -e", false, false},
		{"find . -exec echo {} \\;", true, true},
		{"echo a # b", true, true},
		{"cat <<EOF\nx\nEOF", true, true},
		{"cat <<EOF\nx", true, false},
		{"echo a &&", true, false},
		{"echo a |", true, false},
		{"echo 'abc", true, false},
		{"if true; then echo a", true, false},
		{"for i in a b", true, false},
		{"f()", true, false},
		{"echo ${x", true, false},
		{"echo a }; { echo b", true, false},
		{"run \\\n  -it img \\\n", true, false},
		{"echo a \\", true, false},
		{"set -o history; echo a", true, false},
	} {
		assert.Equal(t, c.want, captures(c.text, c.errexit, syntax.LangBash), "%q (errexit %v)", c.text, c.errexit)
	}
	assert.True(t, captures("[ -n x ] && echo y", true, syntax.LangPOSIX))
	assert.False(t, captures("echo $((1+)", true, syntax.LangPOSIX))
}

// TestLineWithoutErrexit: with errexit off, a command's line carries
// nothing of the capture: it is the line it was before.
func TestLineWithoutErrexit(t *testing.T) {
	for _, d := range []dialect{posixShell, bashShell, zshShell} {
		line := string(d.commandLine("0123456789abcdef", 3, Command{Text: "false && true"}, "/tmp/cmd", "", 0, capturing{}))
		assert.NotContains(t, line, trlName("0123456789abcdef", "s"), d.name)
		assert.NotContains(t, line, trlName("0123456789abcdef", "rc"), d.name)
	}
	assert.Equal(t, "false && true", bashCommandFile("0123456789abcdef", "false && true", capturing{}))
}

// TestSyntaxErrorsAsBefore: a text that is a syntax error says so as it
// did before the status capture, line number included (zsh: as at its
// prompt, with none), and one ending in a comment still runs.
func TestSyntaxErrorsAsBefore(t *testing.T) {
	inEachShell(t, func(t *testing.T, s *Session) {
		for _, text := range []string{"echo a &&", "echo 'abc", "if true; then echo a", "echo a; fi"} {
			out, errOut, st := run2(t, s, text)
			want, _ := osexec.Command(s.cfg.Shell, "-c", "eval "+quote(text)).CombinedOutput()
			wantLine := lastLineNumber(string(want))
			switch {
			case strings.HasSuffix(s.cfg.Shell, "bash"):
				wantLine = "" // a one-line command's messages name no line (sourceName)
			case strings.HasSuffix(s.cfg.Shell, "zsh"):
				// eval at the top level (topEvalNote): zsh says what it
				// says at its prompt, "zsh: …" with no line.
				wantLine = ""
				if strings.Contains(string(want), "(eval):") {
					assert.True(t, strings.HasPrefix(errOut, "zsh: "), "%q: %q", text, errOut)
				}
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

// TestErrTrapFiresOnce: a bash or zsh ERR trap fires for a failing
// command, and not for trl's own statements around it (the one that
// restores $? on the next line, the epilogue, zsh's history hook refusing
// trl's line), except in bash for one: with errexit off the text runs
// with nothing appended (errexitNote), and the `.` that ran it returns
// its failure once more (before: bash 4 times in all, zsh 5). Under
// errexit it fires once. The trap appends to a file: what it writes to its stdout
// outside the command would not be seen.
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
		want := "ERR\n"
		if strings.HasSuffix(s.cfg.Shell, "bash") {
			want = "ERR\nERR\n" // and for the `.` that ran false
		}
		assert.Equal(t, want, string(got), "the trap fired for false")
		require.NoError(t, os.Truncate(log, 0))
		run2(t, s, "set -e")
		_, _, st = run2(t, s, "false && true; false")
		assert.True(t, st.Exited, "false ends the shell under errexit")
		got, err = os.ReadFile(log)
		require.NoError(t, err)
		assert.Equal(t, "ERR\n", string(got), "under errexit the trap fired once, for the last false")
	})
}

// TestCapturesDeepLineUnparsed: under errexit a command's text is parsed
// in the daemon; a text nesting a million `$(`, or 600,000 `{` or
// `${x:-`, overflowed the daemon's stack there and crashed it, policy or
// none. It is not parsed now, and
// runs as it is, as a text that does not parse does.
func TestCapturesDeepLineUnparsed(t *testing.T) {
	for _, deep := range []string{
		"set -e; " + strings.Repeat("$(", 1_000_000) + "true" + strings.Repeat(")", 1_000_000),
		"set -e; " + strings.Repeat("{ ", 600_000) + "true;" + strings.Repeat(" }", 600_000),
		"set -e; echo " + strings.Repeat("${x:-", 600_000) + "y" + strings.Repeat("}", 600_000),
	} {
		assert.False(t, captures(deep, true, syntax.LangBash))
	}
	assert.True(t, captures(strings.Repeat("echo $(", 50)+"true"+strings.Repeat(")", 50), true, syntax.LangBash), "a depth people write is parsed")
}
