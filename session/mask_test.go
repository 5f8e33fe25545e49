package session

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/screen"
)

// TestMaskAcrossChunks: a secret is masked wherever the stream is cut,
// and only a tail that could start a secret is ever held back.
func TestMaskAcrossChunks(t *testing.T) {
	ss := secretSet(nil).with(secretParts([]byte("sk-123456\r\n")))
	ss = ss.with(secretParts([]byte("hunter2")))
	ss = ss.with(secretParts([]byte("sk-1234567890"))) // overlaps the first, longer
	cases := []struct{ in, want string }{
		{"key=sk-123456\r\n", "key=***\r\n"},
		{"sk-123456sk-123456", "******"},
		{"sk-1234567890!", "***!"},
		{"sk-12345 sk-12 hunter hunter2", "sk-12345 sk-12 hunter ***"},
		{"no secret at all", "no secret at all"},
		{"ends in a prefix sk-12", "ends in a prefix sk-12"},
		{"hhunter2", "h***"},
	}
	for _, c := range cases {
		// Every way of cutting the input in two, and byte by byte.
		for cut := 0; cut <= len(c.in); cut++ {
			var out, held []byte
			for _, part := range []string{c.in[:cut], c.in[cut:]} {
				var o []byte
				o, held = ss.mask(held, []byte(part), false)
				out = append(out, o...)
			}
			o, _ := ss.mask(held, nil, true)
			out = append(out, o...)
			assert.Equal(t, c.want, string(out), "%q cut at %d", c.in, cut)
		}
		var out, held []byte
		for i := 0; i < len(c.in); i++ {
			var o []byte
			o, held = ss.mask(held, []byte{c.in[i]}, false)
			out = append(out, o...)
			assert.LessOrEqual(t, len(held), len("sk-1234567890")-1)
		}
		o, _ := ss.mask(held, nil, true)
		assert.Equal(t, c.want, string(append(out, o...)), "%q byte by byte", c.in)
	}
	assert.Empty(t, secretParts([]byte("ab\r")), "too short to mask")
	assert.Equal(t, [][]byte{[]byte("pasted-key"), []byte("line2")}, secretParts([]byte("\x1b[200~pasted-key\rline2\x1b[201~\r")), "a bracketed paste's markers are not part of it")
	assert.Equal(t, "a *** b", string(ss.maskAll([]byte("a hunter2 b"))))
}

// tapped is a session with an observer recording all it sees.
type tapped struct {
	mu  sync.Mutex
	buf bytes.Buffer
	in  bytes.Buffer
}

func tap(s *Session) *tapped {
	tp := &tapped{}
	s.Subscribe(func(st Stream, p []byte) {
		tp.mu.Lock()
		defer tp.mu.Unlock()
		switch st {
		case Input:
			tp.in.Write(p)
		case Stdout, Stderr:
			tp.buf.Write(p)
		}
	})
	return tp
}

func (tp *tapped) String() string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.buf.String()
}

func (tp *tapped) input() string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.in.String()
}

// screenText is the session's screen as text.
func screenText(s *Session) string {
	s.Screen().Settle()
	return strings.Join(s.Screen().Snapshot(screen.SnapshotOptions{ScrollbackLines: 1000}).Lines, "\n")
}

// TestSessionSecretsMasked: session.create's secrets are in the shell's
// environment and masked in the command's output, the screen and the
// observers, even when the program writes a secret in two pieces.
func TestSessionSecretsMasked(t *testing.T) {
	m := newManager(t)
	const key = "sk-live-0123456789"
	s, err := m.Create(Config{Secrets: map[string]string{"API_KEY": key}})
	require.NoError(t, err)
	tp := tap(s)
	out, errOut, st := run2(t, s, `printf '%s\n' "$API_KEY"; printf '%s' "$API_KEY" >&2; printf 'sk-live-01'; sleep 0.3; printf '23456789 end\n'; printf '%s' "${#API_KEY}"`)
	assert.Equal(t, 0, st.ExitCode)
	assert.Equal(t, "***\n*** end\n18", out)
	assert.Equal(t, "***", errOut)
	for what, got := range map[string]string{"observer": tp.String(), "screen": screenText(s)} {
		assert.NotContains(t, got, "sk-live", what)
	}
	// A partial secret at the end of a command is handed on at its end.
	out, _, _ = run2(t, s, `printf 'sk-live'`)
	assert.Equal(t, "sk-live", out)
	_, err = m.Create(Config{Env: map[string]string{"A": "x"}, Secrets: map[string]string{"A": "y"}})
	assert.ErrorIs(t, err, ErrInvalid)
}

// waitWaiting waits until the session's command waits for input.
func waitWaiting(t *testing.T, s *Session) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, err := s.InputWait()
		return err == nil && st.Waiting
	}, 20*time.Second, 10*time.Millisecond, "the command never waited for input; screen:\n%s", screenText(s))
}

// TestSecretReadlineEcho is issue 23 §2's first reproduction: a program
// that echoes for itself (readline) printed a secret typed with echo off.
func TestSecretReadlineEcho(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	if exec.Command("python3", "-c", "import readline").Run() != nil {
		t.Skip("python3 has no readline module")
	}
	m := newManager(t)
	s, err := m.Create(Config{})
	require.NoError(t, err)
	tp := tap(s)
	k := &splitSink{}
	j, err := s.Start(Command{Text: `python3 -c "import readline; v = input('API key: '); print('length', len(v))"`}, k)
	require.NoError(t, err)
	waitWaiting(t, s)
	require.NoError(t, s.WriteSecret([]byte("sk-readline-98765\r")))
	select {
	case <-j.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("python did not end")
	}
	out, _ := k.get()
	assert.Contains(t, out, "length 17")
	assert.NotContains(t, out, "sk-readline")
	assert.NotContains(t, tp.String(), "sk-readline")
	assert.NotContains(t, screenText(s), "sk-readline")
	assert.Equal(t, strings.Repeat("*", 18), tp.input(), "what observers see typed")
}

// TestSecretTypedWhileQueueFull is issue 23 §2's second reproduction: a
// secret typed while the terminal's input queue is full (4,094 bytes
// typed to a reader that has not read them yet) was echoed once the
// reader made room, since echo was off for only 30 ms. The secret here
// is too short to be masked, so only the echo stays in question.
func TestSecretTypedWhileQueueFull(t *testing.T) {
	m := newManager(t)
	s, err := m.Create(Config{})
	require.NoError(t, err)
	k := &splitSink{}
	j, err := s.Start(Command{Text: "sleep 1; cat >/dev/null"}, k)
	require.NoError(t, err)
	line := strings.Repeat("a", 62) + "\r"
	fill := strings.Repeat(line, 4094/len(line))
	fill += strings.Repeat("b", 4094-len(fill)-1) + "\r"
	require.Len(t, fill, 4094)
	require.NoError(t, s.WriteInput([]byte(fill)))
	require.Eventually(t, s.typedUnread, 5*time.Second, time.Millisecond, "the filler waits unread")
	require.NoError(t, s.WriteSecret([]byte("QQ\r")))
	require.NoError(t, s.WriteInput([]byte{4})) // ^D: cat ends
	select {
	case <-j.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("cat did not end")
	}
	out, _ := k.get()
	assert.Contains(t, out, "aaaa", "the filler was echoed")
	assert.False(t, strings.Contains(out, "Q"), "the secret was echoed: %q", out[max(0, len(out)-80):])
}

// TestSecretMaskedInOutput: a secret typed with exec.input's secret is
// masked when a program prints it back, in the result and to observers.
func TestSecretMaskedInOutput(t *testing.T) {
	m := newManager(t)
	s, err := m.Create(Config{})
	require.NoError(t, err)
	tp := tap(s)
	k := &splitSink{}
	j, err := s.Start(Command{Text: `read -r v; echo "you typed $v"`}, k)
	require.NoError(t, err)
	waitWaiting(t, s)
	require.NoError(t, s.WriteSecret([]byte("pa55word!\r")))
	<-j.Done()
	out, _ := k.get()
	assert.Equal(t, "you typed ***\n", out)
	assert.NotContains(t, tp.String(), "pa55word")
}

// TestTypedAtPasswordPromptIsSecret: what a person types at a password
// prompt (read -s) is a secret: observers (recordings) see stars, and the
// program printing it back shows it masked.
func TestTypedAtPasswordPromptIsSecret(t *testing.T) {
	m := newManager(t)
	s, err := m.Create(Config{Shell: "/bin/bash"})
	require.NoError(t, err)
	tp := tap(s)
	k := &splitSink{}
	j, err := s.Start(Command{Text: `read -r -s -p 'Password: ' v; echo; echo "got $v"; read -r w; echo "and $w"`}, k)
	require.NoError(t, err)
	waitWaiting(t, s)
	for _, c := range "t0ps3crex\x7ft\r" { // with an erase, as people type
		secret, err := s.WriteTyped([]byte(string(c)))
		require.NoError(t, err)
		assert.True(t, secret, "%q at a password prompt", c)
	}
	require.Eventually(t, func() bool { out, _ := k.get(); return strings.Contains(out, "got") }, 20*time.Second, 10*time.Millisecond)
	waitWaiting(t, s)
	secret, err := s.WriteTyped([]byte("plain\r"))
	require.NoError(t, err)
	assert.False(t, secret, "at a line prompt")
	<-j.Done()
	out, _ := k.get()
	assert.Contains(t, out, "got ***")
	assert.Contains(t, out, "and plain")
	assert.NotContains(t, out, "t0ps3cret")
	assert.Equal(t, "************plain\r", tp.input())
	s.ioMu.Lock()
	assert.Len(t, s.secrets, 1, "only the whole line is a secret, not each prefix: %q", s.secrets)
	s.ioMu.Unlock()
}

// TestSecretSelfEchoingPrograms: the other programs issue 23 §2 names as
// echoing for themselves — the python3 REPL and node's readline — do not
// show a secret typed to them either.
func TestSecretSelfEchoingPrograms(t *testing.T) {
	cases := []struct {
		name, tool, cmd, secret, after, want string
	}{
		{"python3 REPL", "python3", "python3 -q", "k = 'sk-repl-24680'\r", "print(len(k)); exit()\r", "13"},
		{"node readline", "node", `node -e "const rl = require('readline').createInterface({input: process.stdin, output: process.stdout}); rl.question('API key: ', a => { console.log('len ' + a.length); rl.close(); })"`,
			"sk-node-13579\r", "", "len 13"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath(c.tool); err != nil {
				t.Skipf("%s is not installed", c.tool)
			}
			m := newManager(t)
			s, err := m.Create(Config{})
			require.NoError(t, err)
			k := &splitSink{}
			j, err := s.Start(Command{Text: c.cmd}, k)
			require.NoError(t, err)
			waitWaiting(t, s)
			require.NoError(t, s.WriteSecret([]byte(c.secret)))
			if c.after != "" {
				waitWaiting(t, s)
				require.NoError(t, s.WriteInput([]byte(c.after)))
			}
			select {
			case <-j.Done():
			case <-time.After(30 * time.Second):
				t.Fatalf("%s did not end; screen:\n%s", c.tool, screenText(s))
			}
			out, errOut := k.get()
			assert.Contains(t, out+errOut, c.want)
			assert.NotContains(t, out+errOut, "sk-", "the secret was shown")
			assert.NotContains(t, screenText(s), "sk-")
		})
	}
}

// TestSecretsForgottenOldestFirst: past maxSecrets typed secrets the
// oldest typed ones are forgotten, never the secrets the session was
// created with. The set dropped the longest instead (usually the named
// API key), and a fork copies the set.
func TestSecretsForgottenOldestFirst(t *testing.T) {
	m := newManager(t)
	const key = "sk-named-0123456789"
	s, err := m.Create(Config{Secrets: map[string]string{"API_KEY": key}})
	require.NoError(t, err)
	for i := range maxSecrets + 6 {
		s.AddSecret([]byte(fmt.Sprintf("typed-%03d", i)))
	}
	assert.Equal(t, "***", s.MaskText(key), "the named secret is kept")
	assert.Equal(t, "typed-000", s.MaskText("typed-000"), "the oldest typed one is forgotten")
	assert.Equal(t, "***", s.MaskText(fmt.Sprintf("typed-%03d", maxSecrets+5)), "the newest is kept")
	assert.Equal(t, "***", s.MaskText(fmt.Sprintf("typed-%03d", 6)), "the oldest kept")
}
