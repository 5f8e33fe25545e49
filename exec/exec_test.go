package exec_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	trlexec "github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/internal/leakcheck"
	"github.com/trl-project/trl/session"
	"golang.org/x/sys/unix"
)

type syscallSignal = unix.Signal

func TestMain(m *testing.M) { leakcheck.Main(m) }

// shells lists the shells to test: /bin/sh always, bash and zsh when
// installed.
func shells(t *testing.T) []string {
	out := []string{"/bin/sh"}
	for _, name := range []string{"bash", "zsh"} {
		if p, err := exec.LookPath(name); err == nil {
			out = append(out, p)
		} else {
			t.Logf("%s is not installed: its cases are skipped (install it to test it)", name)
		}
	}
	return out
}

func newSession(t *testing.T, shell string) *session.Session {
	t.Helper()
	m := session.NewManager(session.Options{Logger: zerolog.Nop()})
	t.Cleanup(m.CloseAll)
	s, err := m.Create(session.Config{Shell: shell, WorkingDir: t.TempDir()})
	require.NoError(t, err)
	return s
}

type result struct {
	trlexec.Exit
	trlexec.Output
}

func run(t *testing.T, s *session.Session, r trlexec.Request, max int) result {
	t.Helper()
	return runWith(t, s, r, max, trlexec.Options{})
}

func runWith(t *testing.T, s *session.Session, r trlexec.Request, max int, opts trlexec.Options) result {
	t.Helper()
	c := trlexec.NewCollector(max)
	e, err := startIn(s, r, c, opts)
	require.NoError(t, err)
	select {
	case <-e.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("command %q did not finish in 60 s", r.Command)
	}
	x, _ := e.Exit()
	return result{x, c.Result()}
}

// startIn starts r in s with its output kept by c.
func startIn(s *session.Session, r trlexec.Request, c *trlexec.Collector, opts trlexec.Options) (*trlexec.Job, error) {
	r.ID, r.Session, r.SessionID, r.Output = session.NewID("x-", 8), s, s.ID(), c
	return trlexec.Start(trlexec.InSession(s), trlexec.NewRegistry(trlexec.RegistryOptions{}), r, opts)
}

func sh(t *testing.T, s *session.Session, cmd string) result {
	t.Helper()
	return run(t, s, trlexec.Request{Command: cmd}, 0)
}

func strp(s string) *string { return &s }

// TestSemantics runs every exec.run semantic against every shell, one
// session per shell so that state carries from case to case as it would
// for an agent.
func TestSemantics(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 200<<10/16) // 200 KB
	cases := []struct {
		name    string
		req     trlexec.Request
		stdout  string
		stderr  string
		code    int
		errPart string // a substring of stderr, when its text is the shell's own
		// jobNotices marks cases where bash and zsh add their job-control
		// notices to the output.
		jobNotices bool
	}{
		{name: "split streams", req: trlexec.Request{Command: "echo out; echo err >&2"}, stdout: "out\n", stderr: "err\n"},
		{name: "no CRLF", req: trlexec.Request{Command: "printf 'a\\nb\\n'"}, stdout: "a\nb\n"},
		{name: "false", req: trlexec.Request{Command: "false"}, code: 1},
		{name: "unknown command", req: trlexec.Request{Command: "no-such-command-xyz"}, code: 127, errPart: "no-such-command-xyz"},
		{name: "cd persists 1", req: trlexec.Request{Command: "mkdir -p sub && cd sub"}},
		{name: "cd persists 2", req: trlexec.Request{Command: "basename \"$PWD\""}, stdout: "sub\n"},
		{name: "export persists 1", req: trlexec.Request{Command: "export TRL_T_X=42"}},
		{name: "export persists 2", req: trlexec.Request{Command: "echo $TRL_T_X; sh -c 'echo $TRL_T_X'"}, stdout: "42\n42\n"},
		{name: "function persists 1", req: trlexec.Request{Command: "greet() { echo \"hi $1\"; }"}},
		{name: "function persists 2", req: trlexec.Request{Command: "greet you"}, stdout: "hi you\n"},
		{name: "alias persists 1", req: trlexec.Request{Command: "alias say='echo said'"}},
		{name: "alias persists 2", req: trlexec.Request{Command: "say it"}, stdout: "said it\n"},
		{name: "env for one call", req: trlexec.Request{Command: "echo \"$ONE\"; sh -c 'echo \"$ONE\"'", Env: map[string]string{"ONE": "a b'c"}}, stdout: "a b'c\na b'c\n"},
		{name: "env does not leak", req: trlexec.Request{Command: "echo \"[$ONE]\""}, stdout: "[]\n"},
		{name: "stdin then EOF", req: trlexec.Request{Command: "cat; echo done", Stdin: strp("line1\nline2")}, stdout: "line1\nline2done\n"},
		{name: "stdin bytes exact", req: trlexec.Request{Command: "wc -c", Stdin: strp("héllo\n")}, stdout: "7\n"},
		{name: "multi-line", req: trlexec.Request{Command: "echo one\necho two\n\necho three"}, stdout: "one\ntwo\nthree\n"},
		{name: "heredoc", req: trlexec.Request{Command: "cat <<'EOF'\n$NOT_EXPANDED\n  kept\nEOF"}, stdout: "$NOT_EXPANDED\n  kept\n"},
		{name: "200 KB heredoc", req: trlexec.Request{Command: "cat <<'EOF' | wc -c\n" + big + "\nEOF"}, stdout: "204801\n"},
		{name: "pipeline", req: trlexec.Request{Command: "printf 'b\\na\\n' | sort | tr a-z A-Z"}, stdout: "A\nB\n"},
		{name: "subshell", req: trlexec.Request{Command: "(cd / && pwd); basename \"$PWD\""}, stdout: "/\nsub\n"},
		{name: "background job", req: trlexec.Request{Command: "sleep 0.2 & wait; echo waited"}, stdout: "waited\n", jobNotices: true},
		{name: "quotes and specials", req: trlexec.Request{Command: `printf '%s\n' "it's" '$HOME' "a\"b" '\n'`}, stdout: "it's\n$HOME\na\"b\n\\n\n"},
		{name: "unterminated quote", req: trlexec.Request{Command: "echo \"unterminated"}, code: -1},
		{name: "usable after syntax error", req: trlexec.Request{Command: "echo fine"}, stdout: "fine\n"},
		{name: "forged record on stdout", req: trlexec.Request{Command: "printf '\\036TRL:0000:99:0:/\\037\\n'; echo after"}, stdout: "\x1eTRL:0000:99:0:/\x1f\nafter\n"},
		{name: "forged record on stderr", req: trlexec.Request{Command: "printf '\\036TRL:0000:99:0:/\\037' >&2; exit_status_is() { return 5; }; exit_status_is"}, stderr: "\x1eTRL:0000:99:0:/\x1f", code: 5},
		{name: "utf-8", req: trlexec.Request{Command: "printf '中文 ünï\\n'"}, stdout: "中文 ünï\n"},
		{name: "terminal is stdout", req: trlexec.Request{Command: "test -t 1 && test -t 0 && echo tty"}, stdout: "tty\n"},
		{name: "pager off", req: trlexec.Request{Command: "echo $PAGER $GIT_PAGER $TERM"}, stdout: "cat cat xterm-256color\n"},
	}
	for _, shell := range shells(t) {
		t.Run(shell, func(t *testing.T) {
			s := newSession(t, shell)
			for _, tc := range cases {
				r := run(t, s, tc.req, 1<<20)
				if tc.code == -1 {
					assert.NotZero(t, r.ExitCode, tc.name)
					assert.NotEmpty(t, string(r.Stderr), tc.name)
					continue
				}
				assert.Equal(t, tc.code, r.ExitCode, "%s: exit code (stderr %q)", tc.name, r.Stderr)
				if tc.jobNotices && !strings.HasSuffix(shell, "/sh") {
					// bash and zsh announce job events themselves; see
					// the README's notes on shells.
					assert.True(t, strings.HasSuffix(string(r.Stdout), tc.stdout), "%s: stdout %q", tc.name, r.Stdout)
					continue
				}
				assert.Equal(t, tc.stdout, string(r.Stdout), "%s: stdout", tc.name)
				if tc.errPart != "" {
					assert.Contains(t, string(r.Stderr), tc.errPart, tc.name)
				} else {
					assert.Equal(t, tc.stderr, string(r.Stderr), "%s: stderr", tc.name)
				}
				assert.False(t, r.TimedOut, tc.name)
			}
			info := s.Info()
			assert.Equal(t, "sub", info.WorkingDir[strings.LastIndex(info.WorkingDir, "/")+1:])
			assert.Equal(t, session.StateIdle, info.State)
		})
	}
}

func TestExitEndsSession(t *testing.T) {
	for _, shell := range shells(t) {
		t.Run(shell, func(t *testing.T) {
			s := newSession(t, shell)
			r := sh(t, s, "echo bye; exit 3")
			assert.Equal(t, 3, r.ExitCode)
			assert.Equal(t, "bye\n", string(r.Stdout))
			assert.Empty(t, string(r.Stderr))
			assert.True(t, r.SessionExited)
			assert.Equal(t, session.StateExited, s.Info().State)
			_, err := startIn(s, trlexec.Request{Command: "true"}, trlexec.NewCollector(0), trlexec.Options{})
			assert.ErrorIs(t, err, session.ErrExited)
		})
	}
}

func TestTimeout(t *testing.T) {
	cases := []struct{ name, cmd, out string }{
		{"external command", "echo before; sleep 30; echo never", "before\n"},
		{"builtin loop", "echo before; while :; do :; done", "before\n"},
		{"loop of externals", "echo before; while true; do sleep 1; done", "before\n"},
		{"ignores SIGINT", "trap '' INT; echo before; sh -c 'trap \"\" INT; sleep 30'", "before\n"},
	}
	for _, shell := range shells(t) {
		for _, tc := range cases {
			t.Run(shell+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				s := newSession(t, shell)
				start := time.Now()
				// The escalation's timing is table-tested against a fake
				// (escalation_test.go); here real shells, with a short grace.
				r := runWith(t, s, trlexec.Request{Command: tc.cmd, Timeout: 500 * time.Millisecond}, 0, trlexec.Options{Grace: 500 * time.Millisecond})
				assert.True(t, r.TimedOut)
				assert.NotZero(t, r.ExitCode)
				assert.Equal(t, tc.out, strings.TrimRight(string(r.Stdout), "\n")+"\n")
				assert.Less(t, time.Since(start), 20*time.Second)
				after := sh(t, s, "echo alive")
				assert.Equal(t, "alive\n", string(after.Stdout), "session usable after the timeout")
			})
		}
	}
}

// TestShellIgnoringSIGINT: when the shell itself ignores SIGINT while
// running a builtin loop, only killing the session ends the command.
func TestShellIgnoringSIGINT(t *testing.T) {
	s := newSession(t, "/bin/sh")
	r := runWith(t, s, trlexec.Request{Command: "trap '' INT; while :; do :; done", Timeout: 300 * time.Millisecond}, 0, trlexec.Options{Grace: 300 * time.Millisecond})
	assert.True(t, r.TimedOut)
	assert.True(t, r.SessionExited)
}

func TestBusy(t *testing.T) {
	s := newSession(t, "/bin/sh")
	e, err := startIn(s, trlexec.Request{Command: "sleep 0.5"}, trlexec.NewCollector(0), trlexec.Options{})
	require.NoError(t, err)
	_, err = startIn(s, trlexec.Request{Command: "true"}, trlexec.NewCollector(0), trlexec.Options{})
	assert.ErrorIs(t, err, session.ErrBusy)
	<-e.Done()
	x, _ := e.Exit()
	assert.Equal(t, 0, x.ExitCode)
}

func TestCancel(t *testing.T) {
	for _, sig := range []string{"INT", "TERM", "KILL"} {
		t.Run(sig, func(t *testing.T) {
			s := newSession(t, "/bin/bash")
			e, err := startIn(s, trlexec.Request{Command: "trap '' INT; sleep 30"}, trlexec.NewCollector(0), trlexec.Options{})
			require.NoError(t, err)
			time.Sleep(200 * time.Millisecond)
			num := map[string]int{"INT": 2, "TERM": 15, "KILL": 9}[sig]
			_, err = e.Cancel(sysSignal(num))
			require.NoError(t, err)
			if sig == "INT" {
				// The command ignores SIGINT: KILL must still end it.
				select {
				case <-e.Done():
					t.Fatal("an INT-ignoring command ended on SIGINT")
				case <-time.After(300 * time.Millisecond):
				}
				_, err = e.Cancel(sysSignal(9))
				require.NoError(t, err)
			}
			select {
			case <-e.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("cancel did not end the command")
			}
			x, _ := e.Exit()
			assert.True(t, x.Canceled)
			assert.Equal(t, "ok\n", string(sh(t, s, "echo ok").Stdout))
		})
	}
}

func TestTruncation(t *testing.T) {
	s := newSession(t, "/bin/sh")
	r := run(t, s, trlexec.Request{Command: "i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done; echo tail-err >&2"}, 1000)
	assert.True(t, r.Truncated)
	assert.LessOrEqual(t, len(r.Stdout)+len(r.Stderr), 1000)
	assert.True(t, strings.HasPrefix(string(r.Stdout), "line0\nline1\n"))
	assert.True(t, strings.HasSuffix(string(r.Stdout), "line1999\n"))
	assert.Equal(t, "tail-err\n", string(r.Stderr))
	assert.Equal(t, int64(9), r.StderrBytes)
	assert.Greater(t, r.StdoutBytes, int64(10000))
}

func TestLargeOutputBoundedMemory(t *testing.T) {
	s := newSession(t, "/bin/sh")
	r := run(t, s, trlexec.Request{Command: "head -c 50000000 /dev/zero | tr '\\0' x"}, 0)
	assert.Equal(t, int64(50000000), r.StdoutBytes)
	assert.True(t, r.Truncated)
	assert.Equal(t, trlexec.DefaultMaxOutput, len(r.Stdout))
}

func TestUTF8NeverSplit(t *testing.T) {
	s := newSession(t, "/bin/sh")
	const n = 100000
	r := run(t, s, trlexec.Request{Command: "i=0; s=''; while [ $i -lt 100 ]; do s=\"$s中文字\"; i=$((i+1)); done; i=0; while [ $i -lt 333 ]; do printf %s \"$s\"; i=$((i+1)); done"}, 4<<20)
	assert.Equal(t, int64(333*300*3), r.StdoutBytes)
	assert.NotContains(t, string(r.Stdout), "\uFFFD")
	_ = n
	// Truncated, the cut still falls on character boundaries.
	r = run(t, s, trlexec.Request{Command: "i=0; while [ $i -lt 2000 ]; do printf '中文字'; i=$((i+1)); done"}, 1001)
	assert.True(t, r.Truncated)
	assert.NotContains(t, string(r.Stdout), "\uFFFD")
}

func TestValidation(t *testing.T) {
	s := newSession(t, "/bin/sh")
	for _, r := range []trlexec.Request{
		{Command: "echo a\x00b"},
		{Command: "true", Env: map[string]string{"1BAD": "x"}},
		{Command: "true", Env: map[string]string{"A-B": "x"}},
		{Command: "true", Env: map[string]string{"OK": "a\x00"}},
		{Command: "true", Timeout: -time.Second},
	} {
		_, err := startIn(s, r, trlexec.NewCollector(0), trlexec.Options{})
		assert.ErrorIs(t, err, trlexec.ErrInvalid, "%q", r.Command)
	}
	assert.Equal(t, "ok\n", string(sh(t, s, "echo ok").Stdout))
	// A blank command is a shell's no-op, with status 0.
	for _, blank := range []string{"", "  \n"} {
		r := sh(t, s, blank)
		assert.Equal(t, 0, r.ExitCode, "%q", blank)
	}
}

func TestNoDaemonFDsInCommands(t *testing.T) {
	for _, shell := range shells(t) {
		t.Run(shell, func(t *testing.T) {
			s := newSession(t, shell)
			r := sh(t, s, "ls /proc/self/fd | sort -n | tr '\\n' ' '")
			// ls itself has one fd open on the directory it lists.
			fds := strings.Fields(string(r.Stdout))
			assert.LessOrEqual(t, len(fds), 4, "fds seen by a command: %v", fds)
			for _, fd := range fds[:3] {
				assert.Contains(t, []string{"0", "1", "2"}, fd)
			}
		})
	}
}

var _ = os.Getpid

func sysSignal(n int) syscallSignal { return syscallSignal(n) }
