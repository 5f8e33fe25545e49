package main

import (
	"encoding/json"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSocketHalfCloseGetsTheAnswer: a client that sends exec.run and shuts
// down its write side (as `echo … | socat - UNIX-CONNECT:…` does) reads
// the command's whole result, then end of input. Before, the half-close
// was taken for a client that left: the answer was `"state": "running",
// "reason": "yield"` with no output.
func TestSocketHalfCloseGetsTheAnswer(t *testing.T) {
	d := startDaemon(t)
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: d.socket, Net: "unix"})
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte(`{"id":1,"method":"exec.run","params":{"command":"sleep 0.5; echo first; echo second >&2"}}` + "\n"))
	require.NoError(t, err)
	require.NoError(t, conn.CloseWrite())
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	out, err := io.ReadAll(conn)
	require.NoError(t, err, "the daemon should close the connection after answering")
	var r struct {
		ID   int  `json:"id"`
		OK   bool `json:"ok"`
		Data struct {
			Stdout   string `json:"stdout"`
			Stderr   string `json:"stderr"`
			ExitCode *int   `json:"exit_code"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(out, &r), "%s", out)
	require.True(t, r.OK, "%s", out)
	require.Equal(t, "first\n", r.Data.Stdout, "%s", out)
	require.Equal(t, "second\n", r.Data.Stderr)
	require.NotNil(t, r.Data.ExitCode)
	require.Equal(t, 0, *r.Data.ExitCode)
}
