package bench

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/runtime"
	"github.com/trl-project/trl/session"
)

// The layers of one exec.run, each measured in this process with the
// daemon's own code, so that the latency table shows where exec.run's time
// goes between the shell floor and the socket:
//
//	shell floor     /bin/sh reading `true; echo $? >&3` from a pipe
//	session line    trl's command line in a session: an interactive shell
//	                on a terminal, its start and prompt records, the
//	                redirections that give the command the terminal and
//	                keep trl's descriptors from it (session.Session.Start)
//	runtime         exec.run through the typed API, with no transport:
//	                params, the Job, its output, its end, the status
//	socket          exec.run over the unix socket (the daemon)

// sessionLine times `true` sent as trl's own command line to a session of
// /bin/sh (the daemon's default shell) in this process.
func sessionLine(warm, n int) ([]time.Duration, error) {
	m := session.NewManager(session.Options{BaseEnv: os.Environ(), Logger: zerolog.Nop()})
	defer m.CloseAll()
	s, err := m.Create(session.Config{Shell: "/bin/sh"})
	if err != nil {
		return nil, err
	}
	return sample(warm, n, func() error {
		line, err := s.Start(session.Command{Text: "true"}, discard{})
		if err != nil {
			return err
		}
		<-line.Done()
		if st := line.Status(); st.ExitCode != 0 || st.Exited {
			return fmt.Errorf("true in a session: exit %d, shell exited %v", st.ExitCode, st.Exited)
		}
		return nil
	})
}

// discard is a sink that keeps nothing.
type discard struct{}

func (discard) Output(session.Stream, []byte) {}

// runtimeInProcess times exec.run `true` through a runtime in this process
// (its typed API, as the method table calls it) with no transport.
func runtimeInProcess(warm, n int) ([]time.Duration, error) {
	rt := runtime.New(runtime.Options{Logger: zerolog.Nop()})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx)
	}()
	ctx := context.Background()
	cmd := "true"
	return sample(warm, n, func() error {
		st, err := rt.ExecRun(ctx, protocol.ExecParams{Command: &cmd})
		if err != nil {
			return err
		}
		if st.ExitCode == nil || *st.ExitCode != 0 {
			return fmt.Errorf("true through the runtime: %+v", st)
		}
		return nil
	})
}
