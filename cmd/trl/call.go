package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	trlclient "github.com/trl-project/trl/client"
	"github.com/trl-project/trl/protocol"
)

// call sends one request with the Go client and prints the response
// line, then, for exec.stream and exec.attach, each notification until
// exec.exit, all in trl's own envelope ({"id":1,"ok":...}). It exits 1
// when the response says ok:false or the daemon cannot be reached.
func call(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("trl call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	instance := fs.String("instance", "default", "instance name: the socket is /tmp/trl-NAME.sock (without --socket or --instance, $TRL_SOCKET comes first)")
	socket := fs.String("socket", "", "socket path (overrides --instance)")
	var timeout time.Duration
	fs.Var((*durationOrSeconds)(&timeout), "timeout", "give up after this long, e.g. 30s or 2m (a bare number is seconds; 0: wait as long as the call takes); a command exec.run or exec.stream started is then interrupted, as on Ctrl-C")
	httpURL := fs.String("http", "", "call a daemon's HTTP transport at this URL (e.g. http://127.0.0.1:8765) with the token in TRL_AUTH_TOKEN")
	setUsage(fs, callSynopsis+"\n\nThe socket: --socket, else --instance, else $TRL_SOCKET, else /tmp/trl-default.sock.")
	// Flags may also follow METHOD or PARAMS_JSON (`trl call system.ping
	// --timeout 1s`): each stretch of arguments is parsed in turn.
	var pos []string
	for rest := args; ; {
		if code, ok := parseFlags(fs, rest, stdout, stderr); !ok {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		pos, rest = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	switch {
	case len(pos) < 1:
		fmt.Fprintln(stderr, "trl call: METHOD is missing (e.g. trl call system.ping)\nusage: "+callSynopsis)
		return 2
	case len(pos) > 2:
		fmt.Fprintf(stderr, "trl call: too many arguments: %q after METHOD and PARAMS_JSON (quote the JSON as one argument)\nusage: %s\n", pos[2:], callSynopsis)
		return 2
	}
	method := pos[0]
	params := json.RawMessage("{}")
	if len(pos) == 2 {
		params = json.RawMessage(pos[1])
		if !json.Valid(params) {
			fmt.Fprintf(stderr, "trl call: PARAMS_JSON is not valid JSON: %s\n", pos[1])
			return 2
		}
	}
	// Ctrl-C or SIGTERM ends the call like --timeout does (see gaveUp).
	// Once it has, a second Ctrl-C ends trl call at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var c *trlclient.Client
	if *httpURL != "" {
		c = dialHTTP(*httpURL, stderr)
		if c == nil {
			return 2
		}
	} else {
		path := socketPath(fs, *socket, *instance)
		var err error
		if c, err = trlclient.Dial(ctx, path); err != nil {
			fmt.Fprintf(stderr, "trl call: cannot reach a daemon at %s: %v (start one with `%s`)\n", path, err, serveCommand(fs, *socket))
			return 1
		}
	}
	defer c.Close()
	return printCall(ctx, c, method, params, stdout, stderr)
}

const callSynopsis = "trl call [--socket PATH | --instance NAME | --http URL] [--timeout DURATION] METHOD [PARAMS_JSON]"

// serveCommand is the `trl serve` that serves the socket trl call looked
// for: with its --socket or --instance (`trl call --instance nope` said
// to start a plain `trl serve`, which serves another socket).
func serveCommand(fs *flag.FlagSet, socket string) string {
	if socket != "" {
		return "trl serve --socket " + socket
	}
	cmd := "trl serve"
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "instance" {
			cmd += " --instance " + f.Value.String()
		}
	})
	return cmd
}

// callID is the id `trl call` prints its response with.
var callID = &protocol.Request{Dialect: protocol.TRL, ID: json.RawMessage("1")}

// printCall makes the call and prints what it answered in trl's
// envelope, encoded as the daemon encodes it.
func printCall(ctx context.Context, c *trlclient.Client, method string, params json.RawMessage, stdout, stderr io.Writer) int {
	var raw json.RawMessage
	var follow protocol.Follow
	var err error
	if method == protocol.MethodExecStream || method == protocol.MethodExecAttach {
		raw, follow, err = c.Open(ctx, method, params)
	} else {
		err = c.Call(ctx, method, params, &raw)
	}
	if err != nil && ctx.Err() != nil {
		return gaveUp(ctx, c, method, params, raw, stderr)
	}
	if err != nil {
		var ce *trlclient.Error
		if !errors.As(err, &ce) {
			fmt.Fprintln(stderr, "trl call:", err)
			return 1
		}
		stdout.Write(protocol.ErrorMessage(callID, envelopeError(ce)).Bytes())
		return 1
	}
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	m, err := protocol.Result(callID, raw)
	if err != nil {
		fmt.Fprintln(stderr, "trl call:", err)
		return 1
	}
	stdout.Write(m.Bytes())
	if follow == nil {
		return 0
	}
	err = follow(ctx, func(method string, params any) error {
		b, err := protocol.EncodeNotification(protocol.TRL, method, params)
		if err == nil {
			_, err = stdout.Write(b)
		}
		return err
	})
	if err != nil && ctx.Err() != nil {
		return gaveUp(ctx, c, method, params, raw, stderr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "trl call:", err)
		return 1
	}
	return 0
}

// gaveUp ends a call whose context ended first: --timeout passed, or
// Ctrl-C or SIGTERM came. A command the call started (exec.run's, or
// exec.stream's, named by the exec_id it answered with) is interrupted
// as Ctrl-C at its terminal would, with exec.cancel SIGINT, as the Go
// client's Run and Stream do; without that it would run on in the
// daemon, its session busy, after `trl call` had returned. Any other
// call only stops waiting. It exits 1 after --timeout, 130 after a
// signal.
func gaveUp(ctx context.Context, c *trlclient.Client, method string, params, opened json.RawMessage, stderr io.Writer) int {
	why, code := "interrupted", 130
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why, code = "gave up (--timeout)", 1
	}
	if method != protocol.MethodExecRun && method != protocol.MethodExecStream {
		fmt.Fprintf(stderr, "trl call: %s before %s answered\n", why, method)
		return code
	}
	var target struct {
		ExecID    string `json:"exec_id"`
		SessionID string `json:"session_id"`
	}
	_ = json.Unmarshal(params, &target) // the daemon accepted params: it is an object
	if len(opened) > 0 {
		if err := json.Unmarshal(opened, &target); err != nil {
			fmt.Fprintf(stderr, "trl call: %s; the daemon's answer to %s was not understood (%v): the command may still be running\n", why, method, err)
			return code
		}
	}
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	canceled, err := c.Cancel(cctx, target.ExecID, target.SessionID, "SIGINT")
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "trl call: %s; interrupting the command failed: %v: it may still be running (exec.cancel stops it)\n", why, err)
	case canceled:
		fmt.Fprintf(stderr, "trl call: %s; sent SIGINT to the command (exec.cancel)\n", why)
	default:
		fmt.Fprintf(stderr, "trl call: %s; the command had already ended\n", why)
	}
	return code
}

// envelopeError is the error as trl's envelope carries it: a JSON-RPC
// error's data is {"code", ...the data's fields} (or {"code", "detail"}
// for data that is not an object); the envelope has the data apart.
func envelopeError(ce *trlclient.Error) *protocol.Error {
	e := &protocol.Error{Code: protocol.Code(ce.Code), Message: ce.Message}
	code, _ := json.Marshal(ce.Code)
	rest, ok := bytes.CutPrefix(bytes.TrimSpace(ce.Data), append([]byte(`{"code":`), code...))
	switch {
	case !ok || string(rest) == "}":
	case bytes.HasPrefix(rest, []byte(`,"detail":`)):
		e.Data = json.RawMessage(rest[len(`,"detail":`) : len(rest)-1])
	case rest[0] == ',':
		e.Data = json.RawMessage(append([]byte{'{'}, rest[1:]...))
	}
	return e
}

// dialHTTP is `trl call --http URL`'s client, with the token from
// TRL_AUTH_TOKEN (nil after printing why when it is missing). A URL
// without a scheme is http://.
func dialHTTP(base string, stderr io.Writer) *trlclient.Client {
	token := os.Getenv("TRL_AUTH_TOKEN")
	if token == "" {
		fmt.Fprintln(stderr, "trl call: --http needs the daemon's token in TRL_AUTH_TOKEN")
		return nil
	}
	if !strings.Contains(base, "://") {
		base = "http://" + base // --http 127.0.0.1:8765, as --http serve takes it
	}
	return trlclient.DialHTTP(strings.TrimSuffix(strings.TrimRight(base, "/"), "/rpc"), token)
}

// durationOrSeconds is a flag taking a Go duration ("30s", "2m") or a
// bare number of seconds ("1", "0.5"): `--timeout 1` was a parse error
// that did not say a unit was wanted.
type durationOrSeconds time.Duration

func (d *durationOrSeconds) String() string { return time.Duration(*d).String() }

func (d *durationOrSeconds) Set(v string) error {
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 && secs < math.MaxInt64/float64(time.Second) {
		*d = durationOrSeconds(time.Duration(secs * float64(time.Second)))
		return nil
	}
	t, err := time.ParseDuration(v)
	if err != nil || t < 0 {
		return fmt.Errorf("want a duration such as 30s or 2m, or a number of seconds")
	}
	*d = durationOrSeconds(t)
	return nil
}
