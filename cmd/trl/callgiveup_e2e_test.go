package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	trlclient "github.com/trl-project/trl/client"
	"github.com/trl-project/trl/protocol"
)

// `trl call` that gives up on exec.run or exec.stream, after --timeout or
// on Ctrl-C, interrupts the command it started, as the Go client's Run
// does: the session is free at once, not busy with a command nobody
// waits for. Another call that gives up only stops waiting.
func TestCallGivingUpInterruptsItsCommand(t *testing.T) {
	d := startDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := trlclient.Dial(ctx, d.socket)
	require.NoError(t, err)
	defer c.Close()

	for _, tc := range []struct {
		name, method string
		ctrlC        bool
		exit         int
		says         string
	}{
		{"exec.run after --timeout", protocol.MethodExecRun, false, 1, "trl call: gave up (--timeout); sent SIGINT to the command (exec.cancel)"},
		{"exec.run on Ctrl-C", protocol.MethodExecRun, true, 130, "trl call: interrupted; sent SIGINT to the command (exec.cancel)"},
		{"exec.stream on Ctrl-C", protocol.MethodExecStream, true, 130, "trl call: interrupted; sent SIGINT to the command (exec.cancel)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.NewReplacer(" ", "-", ".", "-").Replace(tc.name)
			_, err := c.SessionCreate(ctx, protocol.SessionCreateParams{Name: name})
			require.NoError(t, err)
			args := []string{"call", "--socket", d.socket}
			if !tc.ctrlC {
				args = append(args, "--timeout", "1s")
			}
			args = append(args, tc.method, fmt.Sprintf(`{"session_id":%q,"command":"sleep 60"}`, name))
			cmd := exec.Command(trlBin, args...)
			var stderr lockedBuffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			if tc.ctrlC {
				require.Eventually(t, func() bool {
					info, err := c.SessionInfo(ctx, protocol.SessionRef{SessionID: name})
					return err == nil && info.Command != nil
				}, 10*time.Second, 20*time.Millisecond, "the command never started")
				require.NoError(t, cmd.Process.Signal(os.Interrupt))
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "trl call exits with a status, not by the signal: %v", err)
			assert.Equal(t, tc.exit, ee.ExitCode())
			assert.Equal(t, tc.says+"\n", stderr.String())

			// The session is free again, well before sleep 60 ends.
			require.Eventually(t, func() bool {
				info, err := c.SessionInfo(ctx, protocol.SessionRef{SessionID: name})
				return err == nil && info.Command == nil
			}, 10*time.Second, 20*time.Millisecond, "the command still runs")
		})
	}

	t.Run("exec.wait only stops waiting", func(t *testing.T) {
		_, err := c.SessionCreate(ctx, protocol.SessionCreateParams{Name: "waiting"})
		require.NoError(t, err)
		cmdText, yield := "sleep 60", int64(100)
		st, err := c.ExecRun(ctx, protocol.ExecParams{SessionID: "waiting", Command: &cmdText, YieldMS: &yield})
		require.NoError(t, err)
		require.Equal(t, "running", st.State)
		cmd := exec.Command(trlBin, "call", "--socket", d.socket, "--timeout", "1s", "exec.wait", fmt.Sprintf(`{"exec_id":%q,"timeout_ms":30000}`, st.ExecID))
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		err = cmd.Run()
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "%v", err)
		assert.Equal(t, 1, ee.ExitCode())
		assert.Equal(t, "trl call: gave up (--timeout) before exec.wait answered\n", stderr.String())
		info, err := c.SessionInfo(ctx, protocol.SessionRef{SessionID: "waiting"})
		require.NoError(t, err)
		require.NotNil(t, info.Command, "the command goes on")
		assert.Equal(t, st.ExecID, info.Command.ExecID)
		_, err = c.ExecCancel(ctx, protocol.ExecCancelParams{ExecID: st.ExecID, Signal: "SIGKILL"})
		require.NoError(t, err)
	})
}
