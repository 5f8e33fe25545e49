// Command trl is the terminal runtime layer: a daemon that gives AI agents
// long-lived shells on real terminals, and its client.
//
//	trl serve   the daemon, on the socket (and HTTP with --http)
//	trl stdio   the method table on stdin/stdout
//	trl call    one request to a daemon
//	trl mcp     MCP on stdio
//	trl console a one-time login URL for the web console
//	trl bench   measurements
//	trl version
//
// `trl COMMAND --help` lists each command's flags; the README's command
// line summary lists them all (a test keeps it complete).
package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/rs/zerolog"
	"github.com/trl-project/trl/internal/rawio"
	"github.com/trl-project/trl/runtime"
	"golang.org/x/sys/unix"
)

const usage = `trl — the terminal runtime layer

usage:
  trl serve  [--instance NAME | --socket PATH] [--http ADDR] [--log-level LEVEL] [limits...]
  trl stdio  [limits...]
  trl call   [--socket PATH | --instance NAME | --http URL] [--timeout DURATION] METHOD [PARAMS_JSON]
  trl bench  [--socket PATH [--http ADDR]] [--json] [--quick] [--only GROUPS] [--sessions N] [--stream-mb N]
  trl console [--http URL] [--approver]   print a one-time login URL for the web console
  trl mcp    [--socket PATH | --instance NAME]   MCP on stdio (bridges to a daemon, else in-process)
  trl version

serve, call and mcp find the socket by --socket, else --instance, else
$TRL_SOCKET, else /tmp/trl-default.sock. Run "trl COMMAND --help" for a
command's flags (or "trl help COMMAND").
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if os.Args[1] == "serve" || os.Args[1] == "stdio" || os.Args[1] == "mcp" {
		hideSecrets()
	}
	os.Exit(run(os.Args[1], os.Args[2:]))
}

// run runs the command named cmd with its arguments and returns the exit
// status.
func run(cmd string, args []string) int {
	var code int
	switch cmd {
	case "serve":
		code = serve(args)
	case "stdio":
		code = stdio(args)
	case "call":
		code = call(args, os.Stdout, os.Stderr)
	case "bench":
		code = benchCmd(args, os.Stdout, os.Stderr)
	case "console":
		code = consoleCmd(args, os.Stdout, os.Stderr)
	case "mcp":
		code = mcpCmd(args)
	case "version", "--version", "-v":
		fmt.Println("trl", runtime.Version)
	case "help", "--help", "-h":
		// `trl help serve` is `trl serve --help`.
		switch {
		case len(args) == 0:
			fmt.Print(usage)
		case len(args) == 1 && slices.Contains(commands, args[0]):
			code = run(args[0], []string{"--help"})
		default:
			fmt.Fprintf(os.Stderr, "trl help: no command %q; the commands are %s\n", strings.Join(args, " "), strings.Join(commands, ", "))
			code = 2
		}
	default:
		fmt.Fprintf(os.Stderr, "trl: unknown command %q\n\n%s", cmd, usage)
		code = 2
	}
	return code
}

// commands are the commands that have flags, and so a --help of their own.
var commands = []string{"serve", "stdio", "call", "mcp", "console", "bench"}

// newLogger writes to stderr: JSON, or a readable console format when
// stderr is a terminal. Nothing but the protocol ever goes to stdout.
func newLogger(level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil || level == "" {
		return zerolog.Logger{}, fmt.Errorf("--log-level must be one of trace, debug, info, warn, error; got %q", level)
	}
	// Every command writes an audit line: to a pipe or socket it goes
	// with a raw call that never waits (rawio.Writer).
	w := rawio.NewWriter(os.Stderr)
	if isTerminal(os.Stderr) {
		w = zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: "15:04:05.000"}
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

func isTerminal(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	rc.Control(func(fd uintptr) {
		_, e := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		ok = e == nil
	})
	return ok
}

// daemonEnv is the environment shells start from: the daemon's own, less
// every TRL_* variable (TRL_AUTH_TOKEN above all), so that no command can
// read trl's secrets.
func daemonEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TRL_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
