package conversations

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/internal/golden"
	"github.com/trl-project/trl/runtime"
	"github.com/trl-project/trl/transport"
)

var update = flag.Bool("update", false, "rewrite the expected responses in testdata/conversations")

// connOptions are the socket's and stdio's limits in the conversations:
// small enough that one pins LIMIT_EXCEEDED.
var connOptions = transport.ConnOptions{MaxMessageBytes: 4096}

func newRuntime(t *testing.T) *runtime.Runtime {
	rt := runtime.New(runtime.Options{Logger: zerolog.Nop()})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, rt.Shutdown(ctx))
	})
	return rt
}

func TestConversations(t *testing.T) {
	files, err := filepath.Glob("../../testdata/conversations/*.txtar")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	run := map[string]func(*testing.T, *golden.Conversation) []string{
		"stdio": overStdio, "socket": overSocket, "http": overHTTP,
	}
	for _, file := range files {
		c, err := golden.Load(file)
		require.NoError(t, err)
		for _, tr := range golden.Transports {
			want, ok := c.Want(tr)
			if !ok {
				continue
			}
			t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar")+"/"+tr, func(t *testing.T) {
				got := run[tr](t, c)
				if *update {
					require.NoError(t, c.Update(tr, got))
					return
				}
				assert.Equal(t, want, got)
			})
		}
	}
}

// overStdio answers the requests one at a time, in order, as `trl stdio`.
func overStdio(t *testing.T, c *golden.Conversation) []string {
	in, err := c.Input()
	require.NoError(t, err)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, transport.ServeStdio(ctx, bytes.NewReader(in), &out, newRuntime(t), connOptions))
	return golden.Lines(out.Bytes())
}

// overSocket pipelines the requests on one connection, served with the
// socket's concurrency (answers in the order they are ready), pausing
// where the conversation says; it reads until the connection has been
// quiet for a moment after the last request.
func overSocket(t *testing.T, c *golden.Conversation) []string {
	steps, err := c.Steps()
	require.NoError(t, err)
	client, server := net.Pipe()
	rt := newRuntime(t)
	served := make(chan struct{})
	go func() {
		defer close(served)
		opts := connOptions
		opts.Transport = "unix"
		transport.ServeConn(context.Background(), server, rt, opts)
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(client)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	wrote := make(chan error, 1)
	go func() {
		for _, s := range steps {
			if s.Sleep > 0 {
				time.Sleep(s.Sleep)
				continue
			}
			if _, err := io.WriteString(client, s.Line+"\n"); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	var got []string
	writing := true
	for {
		quiet := time.After(time.Hour)
		if !writing {
			quiet = time.After(1500 * time.Millisecond)
		}
		select {
		case err := <-wrote:
			require.NoError(t, err)
			writing = false
			continue
		case l, ok := <-lines:
			if ok {
				got = append(got, golden.Normalize(l))
				continue
			}
		case <-quiet:
		case <-time.After(time.Minute):
			t.Fatal("the conversation did not finish within a minute")
		}
		break
	}
	client.Close()
	<-served
	return got
}

// overHTTP posts each request to /rpc on its own, in order, and collects
// the bodies (a stream's body is its messages, one per line).
func overHTTP(t *testing.T, c *golden.Conversation) []string {
	steps, err := c.Steps()
	require.NoError(t, err)
	const token = "conversations-token-0123456789abcdef"
	srv, err := transport.ListenHTTP("127.0.0.1:0", transport.HTTPOptions{Token: token, Logger: zerolog.Nop()})
	require.NoError(t, err)
	rt := newRuntime(t)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), rt) }()
	t.Cleanup(func() {
		srv.Close()
		assert.NoError(t, <-done)
	})
	var got []string
	for _, s := range steps {
		if s.Sleep > 0 {
			time.Sleep(s.Sleep)
			continue
		}
		req, err := http.NewRequest(http.MethodPost, "http://"+srv.Addr().String()+"/rpc", strings.NewReader(s.Line))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		got = append(got, golden.Lines(body)...)
	}
	return got
}
