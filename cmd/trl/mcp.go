package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	trlclient "github.com/trl-project/trl/client"
	"github.com/trl-project/trl/mcpserver"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/runtime"
)

// mcpCmd is `trl mcp`: MCP on stdio (SPEC §10). It bridges to a daemon
// answering on the socket, so sessions outlive the MCP client; without
// one it runs the runtime in-process. Logs go to stderr: stdout carries
// only MCP.
//
// The runtime's flags (--policy, --isolate, --fs-root, --max-sessions
// and the rest; all but --socket, --instance and --log-level) set up the
// in-process runtime only: a daemon keeps its own. When one of them is
// given and a daemon answers, trl mcp refuses to start rather than drop
// it: a --policy in an agent's MCP config that was silently not applied
// was a guard its user believed in.
func mcpCmd(args []string) int {
	fs := flag.NewFlagSet("trl mcp", flag.ContinueOnError)
	var l limits
	l.register(fs)
	instance := fs.String("instance", "default", "the daemon's instance: its socket is /tmp/trl-NAME.sock (without --socket or --instance, $TRL_SOCKET comes first)")
	socket := fs.String("socket", "", "the daemon's socket (overrides --instance)")
	setUsage(fs, "trl mcp [flags]   MCP on stdio: bridges to the daemon on the socket, else runs one in-process\n\n"+
		"The socket: --socket, else --instance, else $TRL_SOCKET, else /tmp/trl-default.sock.\n"+
		"Every flag but --socket, --instance and --log-level sets up the in-process runtime:\n"+
		"when one is given and a daemon answers on the socket, trl mcp refuses to start\n"+
		"(the daemon's own flags apply there; give it those, or pick a socket no daemon serves).")
	if code, ok := parseCommand(fs, args, os.Stdout, os.Stderr, l.check); !ok {
		return code
	}
	log, err := newLogger(l.logLevel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "trl mcp:", err)
		return 2
	}
	path := socketPath(fs, *socket, *instance)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	var api protocol.API
	var check func(context.Context, string) error
	if c, started := dialDaemon(ctx, path); c != nil {
		defer c.Close()
		if given := runtimeFlags(fs); len(given) > 0 {
			log.Error().Str("socket", path).Strs("flags", given).Msg("trl mcp: a trl daemon answers on " + path + ", so this would bridge to it, and " +
				strings.Join(given, ", ") + " would not apply: they set up the runtime trl mcp runs in-process, and the daemon keeps its own. " +
				"Give them to the daemon (trl serve " + given[0] + " ...), or leave them out to use the daemon as it is, " +
				"or give trl mcp --instance NAME or --socket PATH of a socket no daemon serves to run in-process with them")
			return 2
		}
		log.Info().Str("socket", path).Msg("trl mcp: bridging to the daemon; sessions outlive this MCP client")
		api = c
		check = (&daemonWatch{c: c, socket: path, started: started}).check
	} else {
		rt, closeAudit, err := l.runtime(log, "an in-process trl mcp has no approver; approval is given over HTTP (TRL_APPROVER_TOKEN) or in the web console of a trl serve --http, which trl mcp bridges to when it answers on the socket")
		if err != nil {
			log.Error().Err(err).Msg("cannot start")
			return 1
		}
		defer closeAudit()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			rt.Shutdown(sctx)
		}()
		log.Info().Str("socket", path).Msg("trl mcp: no daemon answers on the socket; running the runtime in-process (sessions end with this MCP client)")
		api = rt
	}
	srv := mcpserver.New(mcpserver.Options{API: api, Version: runtime.Version, Check: check})
	// A signal ends the server with a cause of its own: the tools
	// interrupt a command only for a cancel the client sent (cause
	// context.Canceled), never because this process is stopped.
	sctx, end := context.WithCancelCause(context.Background())
	defer end(nil)
	defer context.AfterFunc(ctx, func() { end(errSignalled) })()
	if err := srv.Run(sctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		log.Error().Err(err).Msg("trl mcp")
		return 1
	}
	return 0
}

var errSignalled = errors.New("trl mcp: stopped by a signal")

// runtimeFlags are the flags given on the command line that set up an
// in-process runtime, as --name.
func runtimeFlags(fs *flag.FlagSet) []string {
	var given []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "socket", "instance", "log-level":
		default:
			given = append(given, "--"+f.Name)
		}
	})
	return given
}

// dialDaemon returns a client of the daemon on socket when one answers
// system.ping within 2 s, with when that daemon started; else nil.
func dialDaemon(ctx context.Context, socket string) (*trlclient.Client, string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := trlclient.Dial(ctx, socket)
	if err != nil {
		return nil, ""
	}
	pong, err := c.SystemPing(ctx, protocol.PingParams{})
	if err != nil {
		c.Close()
		return nil, ""
	}
	return c, pong.StartedAt
}

// daemonWatch is `trl mcp`'s look at the daemon it bridges to, before
// every tool call but cancel. The client dials the socket again when its
// connection is lost, so without it a call after the daemon restarted
// would run in a new daemon's fresh shell, unannounced: a command meant
// for a session's directory and variables, run elsewhere. Instead, the
// first call after a restart (system.ping's started_at changed) answers
// that the sessions are gone and runs nothing, and a call while no
// daemon answers says how to start one. cancel is never held up: on a
// new daemon its command is not found anyway.
type daemonWatch struct {
	c      *trlclient.Client
	socket string

	mu      sync.Mutex
	started string // the started_at of the daemon last seen
}

func (w *daemonWatch) check(ctx context.Context, tool string) error {
	if tool == "cancel" {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	pong, err := w.c.SystemPing(pctx, protocol.PingParams{})
	var pe *protocol.Error
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &pe):
		return err // the daemon answered, as when it shuts down
	default:
		return protocol.Errorf(protocol.CodeInternal, "the trl daemon on %s is not running (%v), so nothing ran. Start it again (`trl serve --socket %s`), then call again: the sessions it had, and their shells, are gone", w.socket, err, w.socket)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if pong.StartedAt == w.started {
		return nil
	}
	w.started = pong.StartedAt
	up := time.Duration(pong.UptimeS * float64(time.Second))
	ago := "less than a second ago"
	if up >= time.Second {
		ago = up.Round(time.Second).String() + " ago"
	}
	return protocol.Errorf(protocol.CodeSessionNotFound, "the trl daemon on %s restarted %s: the sessions of the daemon before it are gone, with their working directories, variables and commands, so this call ran nothing. Call again to go on with the new daemon (session_list shows its sessions)", w.socket, ago)
}
