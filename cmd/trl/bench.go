package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/trl-project/trl/internal/bench"
)

// benchCmd runs the benchmark against a daemon it starts from this very
// binary, or against --socket, and prints the table or --json.
func benchCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("trl bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", "", "measure the daemon already serving this socket instead of starting one")
	httpAddr := fs.String("http", "", "with --socket: that daemon's HTTP address (host:port); the token is read from TRL_AUTH_TOKEN")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of a table")
	quick := fs.Bool("quick", false, "few iterations and small sizes: proves the benchmark runs, in seconds")
	sessions := fs.Int("sessions", 0, "sessions in the memory step (default 1000; 20 with --quick)")
	streamMB := fs.Int("stream-mb", 0, "MB of output exec.stream delivers (default 200; 8 with --quick)")
	only := fs.String("only", "", "comma-separated groups to run, of "+strings.Join(bench.Groups, ",")+" (default all)")
	setUsage(fs, "trl bench [flags]   measure a daemon: latency, throughput, memory")
	nonNegative := func() error {
		if *sessions < 0 || *streamMB < 0 {
			return errors.New("--sessions and --stream-mb may not be negative")
		}
		return nil
	}
	if code, ok := parseCommand(fs, args, stdout, stderr, nonNegative); !ok {
		return code
	}
	opts := bench.Options{Socket: *socket, HTTPAddr: *httpAddr, Quick: *quick, Sessions: *sessions, StreamMB: *streamMB, Progress: stderr}
	if *only != "" {
		opts.Only = strings.Split(*only, ",")
	}
	if *socket == "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(stderr, "trl bench: cannot find this binary to start a daemon:", err)
			return 1
		}
		opts.Exe = exe
	} else if *httpAddr != "" {
		opts.Token = os.Getenv("TRL_AUTH_TOKEN")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	rep, err := bench.Run(ctx, opts)
	if err != nil {
		fmt.Fprintln(stderr, "trl bench:", err)
		if rep == nil {
			return 1
		}
	}
	if *asJSON {
		err = bench.WriteJSON(stdout, rep)
	} else {
		err = bench.WriteTable(stdout, rep)
	}
	if err != nil {
		fmt.Fprintln(stderr, "trl bench:", err)
		return 1
	}
	return 0
}
