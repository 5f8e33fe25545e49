package client_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"
	"github.com/trl-project/trl/client"
	"github.com/trl-project/trl/runtime"
	"github.com/trl-project/trl/transport"
)

// exampleDaemon starts what `trl serve --socket PATH` starts, in-process,
// so that the examples run as written.
func exampleDaemon() (socket string, stop func()) {
	dir, _ := os.MkdirTemp("", "trl-example-")
	socket = filepath.Join(dir, "trl.sock")
	rt := runtime.New(runtime.Options{Logger: zerolog.Nop()})
	srv, err := transport.ListenUnix(socket, transport.UnixOptions{Logger: zerolog.Nop()})
	if err != nil {
		panic(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(context.Background(), rt) }()
	return socket, func() {
		ctx := context.Background()
		_ = srv.Shutdown(ctx)
		_ = rt.Shutdown(ctx)
		<-done
		os.RemoveAll(dir)
	}
}

func Example() {
	socket, stop := exampleDaemon() // or "/tmp/trl-default.sock" of a running `trl serve`
	defer stop()

	ctx := context.Background()
	c, err := client.Dial(ctx, socket)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	c.Run(ctx, client.RunRequest{Command: "cd /tmp && export GREETING=hello"})
	st, _ := c.Run(ctx, client.RunRequest{Command: "echo $GREETING from $(pwd)"})
	fmt.Print(st.Stdout)
	fmt.Println("exit", *st.ExitCode)
	// Output:
	// hello from /tmp
	// exit 0
}

func ExampleClient_Input() {
	socket, stop := exampleDaemon()
	defer stop()

	ctx := context.Background()
	c, _ := client.Dial(ctx, socket)
	defer c.Close()
	st, _ := c.Run(ctx, client.RunRequest{Command: "printf 'Continue? [Y/n] '; read a; echo answer=$a"})
	fmt.Println(st.State, st.Input.Kind, fmt.Sprintf("%q", st.Input.Prompt))
	st, _ = c.Input(ctx, client.InputRequest{ExecID: st.ExecID, Input: []client.InputItem{client.Text("y"), client.Key("Enter")}})
	fmt.Print(st.State, " ", st.Stdout)
	// Output:
	// waiting_input line "Continue? [Y/n] "
	// exited y
	// answer=y
}

func ExampleClient_Stream() {
	socket, stop := exampleDaemon()
	defer stop()

	ctx := context.Background()
	c, _ := client.Dial(ctx, socket)
	defer c.Close()
	exit, _ := c.Stream(ctx, client.RunRequest{Command: "for i in 1 2 3; do echo step $i; done"},
		client.StreamHandlers{Stdout: func(p []byte) { fmt.Print(string(p)) }})
	fmt.Println("exit", exit.ExitCode)
	// Output:
	// step 1
	// step 2
	// step 3
	// exit 0
}
