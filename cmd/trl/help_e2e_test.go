package main

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runTrl runs trl with args and no stdin, for at most 20 s, and returns
// its stdout, stderr and exit status.
func runTrl(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, trlBin, args...)
	cmd.Dir = t.TempDir()
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "trl %s did not end within 20 s: %s", strings.Join(args, " "), errb.String())
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), errb.String(), ee.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errb.String(), 0
}

// TestHelpGoesToStdout: `trl COMMAND --help` and `trl help COMMAND` print
// the command's help on stdout and exit 0 (`trl serve --help | grep
// record` found nothing: it went to stderr, and `trl help serve` printed
// the general usage); a flag that is wrong is said on stderr, exit 2.
func TestHelpGoesToStdout(t *testing.T) {
	for _, command := range []string{"serve", "stdio", "call", "mcp", "console", "bench"} {
		t.Run(command, func(t *testing.T) {
			out, errs, code := runTrl(t, command, "--help")
			assert.Equal(t, 0, code)
			assert.Empty(t, errs)
			assert.Contains(t, out, "usage: trl "+command)
			assert.Contains(t, out, "\n  --")

			viaHelp, errs, code := runTrl(t, "help", command)
			assert.Equal(t, 0, code)
			assert.Empty(t, errs)
			assert.Equal(t, out, viaHelp, "trl help %s is trl %s --help", command, command)

			out, errs, code = runTrl(t, command, "--no-such-flag")
			assert.Equal(t, 2, code)
			assert.Empty(t, out)
			assert.Contains(t, errs, "no-such-flag")
			assert.Contains(t, errs, "usage: trl "+command)
		})
	}
	out, _, code := runTrl(t, "help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "trl serve")
	_, errs, code := runTrl(t, "help", "nope")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `no command "nope"`)
}

// TestHelpNamesArguments: help names each flag's argument as the README
// does (--policy FILE, not VALUE; --session-memory MIB, not N), the
// top-level bench line has --http, and stdio's help speaks of what stdio
// has (no /files, no gateway, no connections).
func TestHelpNamesArguments(t *testing.T) {
	serveHelp, _, _ := runTrl(t, "serve", "--help")
	for _, want := range []string{"--policy FILE", "--fs-root DIR", "--session-memory MIB", "--session-cpu CPUS", "--audit-log FILE", "--record DIR"} {
		assert.Regexp(t, `(?m)^  `+want+`$`, serveHelp)
	}
	assert.Contains(t, serveHelp, "fs.* and /files")
	assert.Contains(t, serveHelp, "gateway tenant")
	callHelp, _, _ := runTrl(t, "call", "--help")
	assert.Regexp(t, `(?m)^  --timeout DURATION$`, callHelp)
	top, _, _ := runTrl(t, "--help")
	assert.Regexp(t, `trl bench +\[--socket PATH \[--http ADDR\]\]`, top)

	stdioHelp, _, _ := runTrl(t, "stdio", "--help")
	assert.Regexp(t, `(?m)^  --policy FILE$`, stdioHelp)
	for _, absent := range []string{"/files", "gateway", "one connection"} {
		assert.NotContains(t, stdioHelp, absent, "trl stdio has no %s", absent)
	}
}

// TestMaxSessionsAtLeastOne: --max-sessions 0 and -1 are refused; they
// became 256 without a word.
func TestMaxSessionsAtLeastOne(t *testing.T) {
	for _, command := range []string{"stdio", "serve", "mcp"} {
		for _, n := range []string{"0", "-1"} {
			args := []string{command, "--max-sessions", n}
			if command != "stdio" {
				args = append(args, "--socket", filepath.Join(t.TempDir(), "s.sock"))
			}
			_, errs, code := runTrl(t, args...)
			assert.Equal(t, 2, code, "trl %v: %s", args, errs)
			assert.Contains(t, errs, "--max-sessions must be at least 1, got "+n)
		}
	}
}

// TestArgumentsNotUnderstoodAreRefused: an argument a command does not
// take is refused, saying which (`trl serve nu1` served the default
// socket, `trl stdio extra` ran); a bare word after serve or mcp is
// probably an instance's name. trl call says when there are too many.
func TestArgumentsNotUnderstoodAreRefused(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "s.sock")
	for _, args := range [][]string{
		{"serve", "--socket", socket, "nu1"},
		{"mcp", "--socket", socket, "nu1"},
		{"stdio", "extra"},
		{"console", "extra"},
		{"bench", "extra"},
	} {
		t.Run(args[0], func(t *testing.T) {
			out, errs, code := runTrl(t, args...)
			assert.Equal(t, 2, code, "%s", errs)
			assert.Empty(t, out)
			last := args[len(args)-1]
			assert.Contains(t, errs, `unexpected argument "`+last+`"`)
			if args[0] == "serve" || args[0] == "mcp" {
				assert.Contains(t, errs, "--instance "+last)
			}
		})
	}
	_, errs, code := runTrl(t, "call", "--socket", socket, "system.ping", "{}", "extra")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "too many arguments")
	assert.Contains(t, errs, "extra")
}

// TestErrorsSayItOnce: trl call that finds no daemon names the `trl
// serve` for the socket it looked at (`--instance nope` suggested a plain
// `trl serve`), and a policy file that cannot be read is said without a
// doubled prefix ("--policy: policy: open ...").
func TestErrorsSayItOnce(t *testing.T) {
	_, errs, code := runTrl(t, "call", "--instance", "nope-trl-test", "system.ping")
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "(start one with `trl serve --instance nope-trl-test`)")
	socket := filepath.Join(t.TempDir(), "none.sock")
	_, errs, code = runTrl(t, "call", "--socket", socket, "system.ping")
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "(start one with `trl serve --socket "+socket+"`)")

	missing := filepath.Join(t.TempDir(), "missing.yaml")
	_, errs, code = runTrl(t, "stdio", "--policy", missing)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "--policy: open "+missing)
	assert.NotContains(t, errs, "policy: policy:")
}
