package client_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/client"
)

// An answer that comes after its caller gave up is dropped without a word,
// also when it crosses the client's Close: a library must not print to
// its program's stderr. (trl call's "gave up (--timeout)" was followed,
// now and then, by "jsonrpc2: ignoring response #0 with no corresponding
// request".) The crossing is a race, so it is tried many times.
func TestLateAnswerIsDroppedQuietly(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	saved := os.Stderr
	os.Stderr = w
	t.Cleanup(func() { os.Stderr = saved })
	printed := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(r); printed <- b }()

	socket := filepath.Join(t.TempDir(), "late.sock")
	ln, err := net.Listen("unix", socket)
	require.NoError(t, err)
	defer ln.Close()
	for i := 0; i < 200; i++ {
		gaveUp := make(chan struct{})
		served := make(chan error, 1)
		go func() {
			served <- func() error {
				nc, err := ln.Accept()
				if err != nil {
					return err
				}
				defer nc.Close()
				var req struct{ ID json.RawMessage }
				if err := json.NewDecoder(bufio.NewReader(nc)).Decode(&req); err != nil {
					return err
				}
				<-gaveUp
				_, _ = fmt.Fprintf(nc, `{"jsonrpc":"2.0","id":%s,"result":{"sessions":[]}}`+"\n", req.ID)
				return nil
			}()
		}()
		c, err := client.Dial(context.Background(), socket)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		_, err = c.Sessions(ctx)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		close(gaveUp)
		if i%2 == 1 {
			time.Sleep(time.Duration(i%7) * 20 * time.Microsecond)
		}
		c.Close()
		require.NoError(t, <-served)
	}

	os.Stderr = saved
	require.NoError(t, w.Close())
	assert.Empty(t, string(<-printed))
}
