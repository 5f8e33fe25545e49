package client_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/client"
	"github.com/trl-project/trl/policy"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/runtime"
	"github.com/trl-project/trl/transport"
)

const token = "client-test-token"

// daemon serves a real runtime on a socket and HTTP, as trl serve does.
func daemon(t *testing.T) (socket, httpURL string) {
	t.Helper()
	return daemonWith(t, runtime.Options{})
}

// daemonWith is daemon with opts for the runtime.
func daemonWith(t *testing.T, opts runtime.Options) (socket, httpURL string) {
	t.Helper()
	opts.Logger = zerolog.Nop()
	rt := runtime.New(opts)
	socket = filepath.Join(t.TempDir(), "trl.sock")
	us, err := transport.ListenUnix(socket, transport.UnixOptions{Logger: zerolog.Nop()})
	require.NoError(t, err)
	hs, err := transport.ListenHTTP("127.0.0.1:0", transport.HTTPOptions{Token: token, Logger: zerolog.Nop(), Files: rt})
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = us.Serve(context.Background(), rt) }()
	go func() { defer wg.Done(); _ = hs.Serve(context.Background(), rt) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = us.Shutdown(ctx)
		_ = hs.Shutdown(ctx)
		_ = rt.Shutdown(ctx)
		wg.Wait()
	})
	return socket, "http://" + hs.Addr().String()
}

func clients(t *testing.T) map[string]*client.Client {
	socket, url := daemon(t)
	c, err := client.Dial(context.Background(), socket)
	require.NoError(t, err)
	h := client.DialHTTP(url, token)
	t.Cleanup(func() { c.Close(); h.Close() })
	return map[string]*client.Client{"socket": c, "http": h}
}

func TestEveryMethod(t *testing.T) {
	for name, c := range clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			info, err := c.CreateSession(ctx, client.SessionOptions{Name: "c-" + name, Shell: "/bin/bash"})
			require.NoError(t, err)
			assert.Equal(t, "c-"+name, info.Name)
			got, err := c.Session(ctx, info.SessionID)
			require.NoError(t, err)
			assert.Equal(t, info.SessionID, got.SessionID)
			list, err := c.Sessions(ctx)
			require.NoError(t, err)
			assert.NotEmpty(t, list)

			st, err := c.Run(ctx, client.RunRequest{Session: info.Name, Command: "cd /; echo out; echo err >&2; (exit 2)"})
			require.NoError(t, err)
			require.NotNil(t, st.ExitCode)
			assert.Equal(t, 2, *st.ExitCode)
			assert.Equal(t, "out\n", st.Stdout)
			assert.Equal(t, "err\n", st.Stderr)
			assert.Equal(t, "/", st.Cwd)

			// A prompt, answered.
			st, err = c.Run(ctx, client.RunRequest{Session: info.Name, Command: "read -p 'name? ' n; echo hi $n"})
			require.NoError(t, err)
			require.Equal(t, "waiting_input", st.State)
			assert.Equal(t, "name? ", st.Input.Prompt)
			st, err = c.Input(ctx, client.InputRequest{ExecID: st.ExecID, Input: []client.InputItem{client.Text("trl"), client.Key("Enter")}})
			require.NoError(t, err)
			assert.Equal(t, "exited", st.State)
			assert.Contains(t, st.Stdout, "hi trl")

			// Wait on a yielded command.
			st, err = c.Run(ctx, client.RunRequest{Session: info.Name, Command: "sleep 0.3; echo waited", YieldMS: 50})
			require.NoError(t, err)
			require.Equal(t, "running", st.State)
			st, err = c.Wait(ctx, client.WaitRequest{ExecID: st.ExecID, TimeoutMS: 10000})
			require.NoError(t, err)
			assert.Equal(t, "exited", st.State)
			assert.Equal(t, "waited\n", st.Stdout)

			// Stream: output in order, then the exit.
			var mu sync.Mutex
			var out strings.Builder
			exit, err := c.Stream(ctx, client.RunRequest{Session: info.Name, Command: "for i in 1 2 3 4 5; do echo line$i; done"},
				client.StreamHandlers{Stdout: func(p []byte) { mu.Lock(); out.Write(p); mu.Unlock() }})
			require.NoError(t, err)
			assert.Equal(t, 0, exit.ExitCode)
			assert.Equal(t, "line1\nline2\nline3\nline4\nline5\n", out.String())

			require.NoError(t, c.Resize(ctx, info.SessionID, 30, 100))
			scr, err := c.Screen(ctx, info.SessionID)
			require.NoError(t, err)
			assert.Equal(t, 30, scr.Rows)
			assert.Equal(t, 100, scr.Cols)

			st, err = c.Run(ctx, client.RunRequest{Session: info.Name, Command: "sleep 30", YieldMS: 50})
			require.NoError(t, err)
			ok, err := c.Cancel(ctx, st.ExecID, "", "")
			require.NoError(t, err)
			assert.True(t, ok)

			// Errors are typed.
			_, err = c.Session(ctx, "no-such-session")
			assert.True(t, errors.Is(err, client.ErrSessionNotFound), "%v", err)
			_, err = c.Input(ctx, client.InputRequest{ExecID: "x-0000000000000000", Input: []client.InputItem{client.Text("x")}})
			assert.True(t, errors.Is(err, client.ErrStreamNotFound), "%v", err)
			assert.False(t, errors.Is(err, client.ErrSessionNotFound))

			require.NoError(t, c.DestroySession(ctx, info.SessionID, true))
		})
	}
}

// A context cancelled while Run or Stream waits interrupts the command.
func TestContextCancelInterrupts(t *testing.T) {
	for name, c := range clients(t) {
		t.Run(name, func(t *testing.T) {
			bg := context.Background()
			info, err := c.CreateSession(bg, client.SessionOptions{})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(bg, 500*time.Millisecond)
			defer cancel()
			_, err = c.Run(ctx, client.RunRequest{Session: info.SessionID, Command: "sleep 30", Until: []string{}})
			require.ErrorIs(t, err, context.DeadlineExceeded)
			// The session is free again soon: the command was interrupted.
			require.Eventually(t, func() bool {
				st, err := c.Run(bg, client.RunRequest{Session: info.SessionID, Command: "echo free"})
				return err == nil && st.Stdout == "free\n"
			}, 10*time.Second, 50*time.Millisecond)

			ctx2, cancel2 := context.WithTimeout(bg, 500*time.Millisecond)
			defer cancel2()
			_, err = c.Stream(ctx2, client.RunRequest{Session: info.SessionID, Command: "sleep 30"}, client.StreamHandlers{})
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.Eventually(t, func() bool {
				st, err := c.Run(bg, client.RunRequest{Session: info.SessionID, Command: "echo free"})
				return err == nil && st.Stdout == "free\n"
			}, 10*time.Second, 50*time.Millisecond)
		})
	}
}

func TestBadToken(t *testing.T) {
	_, url := daemon(t)
	c := client.DialHTTP(url, "wrong")
	_, err := c.Sessions(context.Background())
	assert.True(t, errors.Is(err, client.ErrAuthFailed), "%v", err)
}

// A stream's command that waits for input is told to StreamHandlers.Waiting,
// which can answer it, over the socket and HTTP alike.
func TestStreamWaiting(t *testing.T) {
	for name, c := range clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			info, err := c.CreateSession(ctx, client.SessionOptions{})
			require.NoError(t, err)
			var prompts []string
			var out strings.Builder
			var answering sync.WaitGroup
			exit, err := c.Stream(ctx, client.RunRequest{Session: info.SessionID, Command: `printf 'name? '; read n; echo "hello $n"`}, client.StreamHandlers{
				Stdout: func(p []byte) { out.Write(p) },
				Waiting: func(in protocol.InputWait) {
					prompts = append(prompts, in.Prompt)
					answering.Go(func() {
						_, err := c.Input(ctx, client.InputRequest{Session: info.SessionID, Input: []client.InputItem{client.Text("ada\r")}})
						assert.NoError(t, err)
					})
				},
			})
			answering.Wait()
			require.NoError(t, err)
			assert.Equal(t, 0, exit.ExitCode)
			assert.Equal(t, []string{"name? "}, prompts)
			assert.Contains(t, out.String(), "hello ada\n")
		})
	}
}

// TestDeniedAndCheckedTyped: a policy's refusal is ErrCommandDenied (no
// sentinel existed), and Check makes a failing exit ErrCommandFailed (the
// request had no Check field).
func TestDeniedAndCheckedTyped(t *testing.T) {
	p, err := policy.Parse([]byte("default: allow\nrules:\n  - match: {program: [rm]}\n    action: deny\n    reason: no deleting\n"), "p.yaml")
	require.NoError(t, err)
	socket, _ := daemonWith(t, runtime.Options{Policy: policy.NewEvaluator(p)})
	c, err := client.Dial(context.Background(), socket)
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	_, err = c.Run(ctx, client.RunRequest{Command: "rm -f /tmp/nothing-here"})
	assert.ErrorIs(t, err, client.ErrCommandDenied)
	_, err = c.Run(ctx, client.RunRequest{Command: "(exit 3)", Check: true})
	assert.ErrorIs(t, err, client.ErrCommandFailed)
	st, err := c.Run(ctx, client.RunRequest{Command: "false"})
	require.NoError(t, err, "without Check a failing exit is a status")
	assert.Equal(t, 1, *st.ExitCode)
}
