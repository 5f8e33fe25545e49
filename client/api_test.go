package client_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/client"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/runtime"
	"github.com/trl-project/trl/transport"
)

func ptr[T any](v T) *T { return &v }

// The typed API over both transports: the same calls and types the
// runtime serves in-process.
func TestTypedAPI(t *testing.T) {
	for name, c := range clients(t) {
		t.Run(name, func(t *testing.T) {
			var api protocol.API = c
			ctx := context.Background()
			info, err := api.SessionCreate(ctx, protocol.SessionCreateParams{Name: "t-" + name, Shell: "/bin/bash"})
			require.NoError(t, err)
			ref := info.SessionID

			st, err := api.ExecRun(ctx, protocol.ExecParams{SessionID: ref, Command: ptr("cd /; echo out; echo err >&2; (exit 2)")})
			require.NoError(t, err)
			require.NotNil(t, st.ExitCode)
			assert.Equal(t, 2, *st.ExitCode)
			assert.Equal(t, "out\n", st.Stdout)
			assert.Equal(t, "err\n", st.Stderr)
			assert.Equal(t, "/", st.Cwd)

			// A prompt answered with typed input items.
			st, err = api.ExecRun(ctx, protocol.ExecParams{SessionID: ref, Command: ptr("read -p 'name? ' n; echo hi $n")})
			require.NoError(t, err)
			require.Equal(t, protocol.StateWaitingInput, st.State)
			st, err = api.ExecInput(ctx, protocol.ExecInputParams{ExecID: st.ExecID, Input: protocol.InputList{protocol.Text("trl"), protocol.Key("Enter")}})
			require.NoError(t, err)
			assert.Equal(t, protocol.StateExited, st.State)
			assert.Contains(t, st.Stdout, "hi trl")

			// An explicit empty until (exit only) is sent as [] and kept.
			st, err = api.ExecRun(ctx, protocol.ExecParams{SessionID: ref, Command: ptr("sleep 0.3; echo waited"), YieldMS: ptr(int64(50)), Until: &[]string{}})
			require.NoError(t, err)
			require.Equal(t, protocol.StateRunning, st.State)
			st, err = api.ExecWait(ctx, protocol.ExecWaitParams{ExecID: st.ExecID, TimeoutMS: ptr(int64(10000))})
			require.NoError(t, err)
			assert.Equal(t, "waited\n", st.Stdout)

			// ExecStream's Follow delivers typed notifications in order.
			started, follow, err := api.ExecStream(ctx, protocol.ExecParams{SessionID: ref, Command: ptr("for i in 1 2 3; do echo line$i; done; echo e >&2")})
			require.NoError(t, err)
			require.NotEmpty(t, started.StreamID)
			var out, errOut strings.Builder
			var exit *protocol.ExitNotification
			require.NoError(t, follow(ctx, func(method string, p any) error {
				switch n := p.(type) {
				case protocol.OutputNotification:
					assert.Equal(t, protocol.NotifyExecOutput, method)
					if n.Stream == "stderr" {
						errOut.WriteString(n.Data)
					} else {
						out.WriteString(n.Data)
					}
				case protocol.ExitNotification:
					assert.Equal(t, protocol.NotifyExecExit, method)
					exit = &n
				default:
					t.Errorf("untyped notification %T", p)
				}
				return nil
			}))
			require.NotNil(t, exit)
			assert.Equal(t, started.StreamID, exit.StreamID)
			assert.Equal(t, "line1\nline2\nline3\n", out.String())
			assert.Equal(t, "e\n", errOut.String())
			require.Error(t, follow(ctx, func(string, any) error { return nil }), "a Follow runs once")

			// ExecAttach replays a finished stream from an offset.
			att, follow, err := api.ExecAttach(ctx, protocol.ExecAttachParams{StreamID: started.StreamID, Offset: 6})
			require.NoError(t, err)
			assert.False(t, att.Running)
			out.Reset()
			require.NoError(t, follow(ctx, func(_ string, p any) error {
				if n, ok := p.(protocol.OutputNotification); ok && n.Stream == "stdout" {
					out.WriteString(n.Data)
				}
				return nil
			}))
			assert.Equal(t, "line2\nline3\n", out.String())

			// Errors are *protocol.Error with the daemon's code.
			_, err = api.SessionInfo(ctx, protocol.SessionRef{SessionID: "no-such-session"})
			pe := protocol.AsError(err)
			assert.Equal(t, protocol.CodeSessionNotFound, pe.Code, "%v", err)
			var target *protocol.Error
			assert.True(t, errors.As(err, &target))

			list, err := api.SessionList(ctx, protocol.SessionListParams{})
			require.NoError(t, err)
			assert.NotEmpty(t, list.Sessions)
			scr, err := api.SessionResize(ctx, protocol.SessionResizeParams{SessionID: ref, Rows: ptr(30), Cols: ptr(100)})
			require.NoError(t, err)
			assert.Equal(t, 100, scr.Cols)
			ping, err := api.SystemPing(ctx, protocol.PingParams{})
			require.NoError(t, err)
			assert.NotEmpty(t, ping.Version)
			_, err = api.SessionDestroy(ctx, protocol.SessionDestroyParams{SessionID: ref, Force: true})
			require.NoError(t, err)
		})
	}
}

// A typed call whose context ends stops waiting, but never cancels the
// command (unlike Run and Stream): it goes on and can be waited for.
func TestTypedCallDoesNotCancel(t *testing.T) {
	for name, c := range clients(t) {
		t.Run(name, func(t *testing.T) {
			bg := context.Background()
			info, err := c.SessionCreate(bg, protocol.SessionCreateParams{})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
			defer cancel()
			_, err = c.ExecRun(ctx, protocol.ExecParams{SessionID: info.SessionID, Command: ptr("sleep 1.5; echo survived"), Until: &[]string{}})
			require.ErrorIs(t, err, context.DeadlineExceeded)
			list, err := c.ExecList(bg, protocol.ExecListParams{SessionID: info.SessionID})
			require.NoError(t, err)
			require.Len(t, list.Commands, 1)
			st, err := c.ExecWait(bg, protocol.ExecWaitParams{ExecID: list.Commands[0].ExecID, TimeoutMS: ptr(int64(10000))})
			require.NoError(t, err)
			assert.Equal(t, protocol.StateExited, st.State)
			assert.False(t, st.Canceled, "the command was not interrupted")
			require.NotNil(t, st.ExitCode)
			assert.Equal(t, 0, *st.ExitCode)

			// The same for a stream whose Follow's context ends.
			_, follow, err := c.ExecStream(bg, protocol.ExecParams{SessionID: info.SessionID, Command: ptr("sleep 1; echo streamed")})
			require.NoError(t, err)
			fctx, fcancel := context.WithTimeout(bg, 200*time.Millisecond)
			defer fcancel()
			require.ErrorIs(t, follow(fctx, func(string, any) error { return nil }), context.DeadlineExceeded)
			list, err = c.ExecList(bg, protocol.ExecListParams{SessionID: info.SessionID})
			require.NoError(t, err)
			var id string
			for _, s := range list.Commands {
				if s.Command == "sleep 1; echo streamed" {
					id = s.ExecID
				}
			}
			require.NotEmpty(t, id)
			st, err = c.ExecWait(bg, protocol.ExecWaitParams{ExecID: id, TimeoutMS: ptr(int64(10000))})
			require.NoError(t, err)
			assert.False(t, st.Canceled)
		})
	}
}

// A lost connection (the daemon restarted) fails the call in flight; the
// next call dials the socket again.
func TestRedialAfterRestart(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "trl.sock")
	serve := func() (stop func()) {
		rt := runtime.New(runtime.Options{Logger: zerolog.Nop()})
		us, err := transport.ListenUnix(socket, transport.UnixOptions{Logger: zerolog.Nop()})
		require.NoError(t, err)
		done := make(chan struct{})
		go func() { defer close(done); _ = us.Serve(context.Background(), rt) }()
		return func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = us.Shutdown(ctx)
			_ = rt.Shutdown(ctx)
			<-done
		}
	}
	stop := serve()
	c, err := client.Dial(context.Background(), socket)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.SystemPing(context.Background(), protocol.PingParams{})
	require.NoError(t, err)
	stop()
	stop = serve()
	defer stop()
	require.Eventually(t, func() bool {
		_, err := c.SystemPing(context.Background(), protocol.PingParams{})
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "the client dials the restarted daemon")
	st, err := c.ExecRun(context.Background(), protocol.ExecParams{Command: ptr("echo again")})
	require.NoError(t, err)
	assert.Equal(t, "again\n", st.Stdout)
	require.NoError(t, c.Close())
	_, err = c.SystemPing(context.Background(), protocol.PingParams{})
	require.Error(t, err, "a closed client does not redial")
}
