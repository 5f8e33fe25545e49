package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// call sends one request and prints the response line, then, for
// exec.stream and exec.attach, each notification until exec.exit. It
// exits 1 when the response says ok:false.
func call(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("trl call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	instance := fs.String("instance", "default", "instance name: the socket is /tmp/trl-NAME.sock")
	socket := fs.String("socket", "", "socket path (overrides --instance)")
	timeout := fs.Duration("timeout", 0, "give up after this long (0: wait as long as the call takes)")
	httpURL := fs.String("http", "", "call a daemon's HTTP transport at this URL (e.g. http://127.0.0.1:8765) with the token in TRL_AUTH_TOKEN")
	setUsage(fs, "trl call [--socket PATH | --instance NAME | --http URL] [--timeout DURATION] METHOD [PARAMS_JSON]\n\nThe socket: --socket, else --instance, else $TRL_SOCKET, else /tmp/trl-default.sock.")
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fmt.Fprintln(stderr, "usage: trl call [--socket PATH | --instance NAME | --http URL] METHOD [PARAMS_JSON]")
		return 2
	}
	method := fs.Arg(0)
	params := json.RawMessage("{}")
	if fs.NArg() == 2 {
		params = json.RawMessage(fs.Arg(1))
		if !json.Valid(params) {
			fmt.Fprintf(stderr, "trl call: PARAMS_JSON is not valid JSON: %s\n", fs.Arg(1))
			return 2
		}
	}
	if *httpURL != "" {
		return callHTTP(*httpURL, *timeout, method, params, stdout, stderr)
	}
	path := socketPath(fs, *socket, *instance)
	conn, err := net.Dial("unix", path)
	if err != nil {
		fmt.Fprintf(stderr, "trl call: cannot reach a daemon at %s: %v (start one with `trl serve`)\n", path, err)
		return 1
	}
	defer conn.Close()
	if *timeout > 0 {
		conn.SetDeadline(time.Now().Add(*timeout))
	}
	req, _ := json.Marshal(map[string]any{"id": 1, "method": method, "params": params})
	if _, err := conn.Write(append(req, '\n')); err != nil {
		fmt.Fprintln(stderr, "trl call:", err)
		return 1
	}
	return printResponses(bufio.NewReaderSize(conn, 64<<10), stdout, stderr)
}

// printResponses copies lines until the response and, when it started a
// stream, its exec.exit notification.
func printResponses(r *bufio.Reader, stdout, stderr io.Writer) int {
	code := 0
	streaming := false
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			stdout.Write(line)
			var msg struct {
				ID     json.RawMessage `json:"id"`
				OK     *bool           `json:"ok"`
				Method string          `json:"method"`
				Data   struct {
					StreamID string `json:"stream_id"`
				} `json:"data"`
			}
			if json.Unmarshal(line, &msg) == nil {
				switch {
				case msg.OK != nil:
					if !*msg.OK {
						return 1
					}
					if msg.Data.StreamID == "" {
						return code
					}
					streaming = true
				case msg.Method == "exec.exit" && streaming:
					return code
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				fmt.Fprintln(stderr, "trl call:", err)
			} else {
				fmt.Fprintln(stderr, "trl call: the daemon closed the connection")
			}
			return 1
		}
	}
}

var _ = os.Stdout
