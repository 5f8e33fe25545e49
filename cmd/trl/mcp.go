package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
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
func mcpCmd(args []string) int {
	fs := flag.NewFlagSet("trl mcp", flag.ContinueOnError)
	var l limits
	l.register(fs)
	instance := fs.String("instance", "default", "the daemon's instance: its socket is /tmp/trl-NAME.sock")
	socket := fs.String("socket", "", "the daemon's socket (overrides --instance)")
	setUsage(fs, "trl mcp [flags]   MCP on stdio: bridges to the daemon on the socket, else runs one in-process\n\nThe socket: --socket, else --instance, else $TRL_SOCKET, else /tmp/trl-default.sock.")
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
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
	if c := dialDaemon(ctx, path); c != nil {
		defer c.Close()
		log.Info().Str("socket", path).Msg("trl mcp: bridging to the daemon; sessions outlive this MCP client")
		api = c
	} else {
		rt, closeAudit, err := l.runtime(log)
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
	srv := mcpserver.New(mcpserver.Options{API: api, Version: runtime.Version})
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

// dialDaemon returns a client of the daemon on socket when one answers
// system.ping within 2 s, else nil.
func dialDaemon(ctx context.Context, socket string) *trlclient.Client {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := trlclient.Dial(ctx, socket)
	if err != nil {
		return nil
	}
	if _, err := c.SystemPing(ctx, protocol.PingParams{}); err != nil {
		c.Close()
		return nil
	}
	return c
}
