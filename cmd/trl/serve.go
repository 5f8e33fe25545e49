package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/trl-project/trl/approval"
	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/internal/procs"
	"github.com/trl-project/trl/policy"
	"github.com/trl-project/trl/runtime"
	"github.com/trl-project/trl/session"
	"github.com/trl-project/trl/transport"
)

// limits are the flags serve and stdio share.
type limits struct {
	logLevel        string
	maxSessions     int
	maxMessageBytes int
	maxInFlight     int
	streamWindow    int
	streamRetain    time.Duration
	maxStreams      int
	maxRetained     int64
	auditLog        string
	isolate         isolateFlags
	policyFile      string
	approvalTimeout time.Duration
	// policy is the loaded policy, for SIGHUP (nil without --policy).
	policy        *policy.Evaluator
	sessionLimits limitFlags
	fsRoots       fsRoots
}

// register adds the flags to fs, the flag set of `trl serve`, `trl
// stdio` or `trl mcp`; the help says what each does under that command.
func (l *limits) register(fs *flag.FlagSet) {
	fs.StringVar(&l.logLevel, "log-level", "info", "log level: trace, debug, info, warn, error")
	fs.IntVar(&l.maxSessions, "max-sessions", 256, "most live sessions at once (at least 1)")
	fs.IntVar(&l.maxMessageBytes, "max-message-bytes", 16<<20, "largest request accepted, in bytes")
	inflight := "most requests running at once on one socket connection"
	switch fs.Name() {
	case "trl stdio":
		inflight = "no effect: trl stdio runs requests one at a time, in order (system.stats reports the value)"
	case "trl mcp":
		inflight = "no effect: MCP's own transport carries the requests (system.stats reports the value)"
	}
	fs.IntVar(&l.maxInFlight, "max-inflight", 64, inflight)
	fs.IntVar(&l.streamWindow, "stream-window", exec.DefaultWindow, "bytes of recent output each exec.stream keeps for slow or returning readers")
	fs.DurationVar(&l.streamRetain, "stream-retain", 10*time.Minute, "how long a finished stream stays readable by exec.read and exec.attach")
	fs.IntVar(&l.maxStreams, "max-streams", 256, "most finished streams kept")
	fs.Int64Var(&l.maxRetained, "max-retained-bytes", exec.DefaultMaxRetained, "most bytes of output all finished commands keep together in memory; the oldest are forgotten first, the newest always kept")
	fs.StringVar(&l.auditLog, "audit-log", "", "also append the audit trail (one JSON line per command) to this file")
	fs.StringVar(&l.policyFile, "policy", "", "check every command line against this policy file (YAML: allow, deny, or ask a person); SIGHUP reloads it")
	timeout := "a command awaiting approval is denied when no one decides within this (fail-closed). A person approves over --http with TRL_APPROVER_TOKEN, or in a console with --console-approve; with neither, a command the policy asks about is denied at once"
	if fs.Name() != "trl serve" {
		timeout = "no effect: approval needs trl serve --http (TRL_APPROVER_TOKEN or --console-approve), so here a command the policy asks about is denied at once"
	}
	fs.DurationVar(&l.approvalTimeout, "approval-timeout", approval.DefaultTimeout, timeout)
	l.isolate.register(fs)
	l.sessionLimits.register(fs)
	l.fsRoots.register(fs)
}

// check refuses values the flags cannot take.
func (l *limits) check() error {
	if l.maxSessions < 1 {
		return fmt.Errorf("--max-sessions must be at least 1, got %d", l.maxSessions)
	}
	return nil
}

// runtime builds the method table these limits describe. noApprover,
// when set, says why no one can ever approve a command here: the policy's
// asks are then denied at once (runtime.Options.NoApprover), not held
// for --approval-timeout with nobody to decide.
func (l *limits) runtime(log zerolog.Logger, noApprover string) (*runtime.Runtime, func(), error) {
	iso, err := l.isolate.isolation()
	if err != nil {
		return nil, nil, err
	}
	var pol *policy.Evaluator
	var approvals *approval.Registry
	if l.policyFile != "" {
		p, err := policy.Load(l.policyFile)
		if err != nil {
			// A file that cannot be read is said once ("--policy: open
			// FILE: ..."), not as policy.Load words it for its other
			// callers ("--policy: policy: open ...").
			var pathErr *iofs.PathError
			if errors.As(err, &pathErr) {
				err = pathErr
			}
			return nil, nil, fmt.Errorf("--policy: %w", err)
		}
		pol = policy.NewEvaluator(p)
		approvals = approval.New(approval.Options{Timeout: l.approvalTimeout})
		log.Info().Str("policy", l.policyFile).Int("rules", p.Len()).Dur("approval_timeout", l.approvalTimeout).Msg("command policy loaded")
		if noApprover != "" {
			asks := p.Asks()
			ev := log.Warn()
			if len(asks) == 0 {
				ev = log.Info() // only the unknown action, which a policy has unless it says otherwise
			}
			ev.Strs("ask_rules", asks).Str("unknown", p.Unknown().String()).Str("why", noApprover).
				Msg("no one can approve commands here: those the policy asks a person about are denied at once")
		}
	}
	l.policy = pol
	lims, err := l.sessionLimits.defaults(log)
	if err != nil {
		return nil, nil, err
	}
	fsys, err := l.fsRoots.open()
	if err != nil {
		return nil, nil, err
	}
	gov := procs.New(procs.DefaultQuiet)
	if gov != nil {
		log.Debug().Int("max_procs", gov.Wide()).Msg("one processor while requests come one at a time, all of them for overlapping work")
	}
	opts := runtime.Options{
		Files:      fsys,
		Policy:     pol,
		Approvals:  approvals,
		NoApprover: noApprover,
		Sessions:   session.Options{MaxSessions: l.maxSessions, BaseEnv: daemonEnv(), Subreaper: true, Isolation: iso, Limits: lims},
		Commands:   exec.RegistryOptions{Window: l.streamWindow, Retain: l.streamRetain, MaxFinished: l.maxStreams, MaxRetainedBytes: l.maxRetained},
		Logger:     log,
		Procs:      gov,
		TransportLimits: map[string]int64{
			"max_message_bytes":     int64(l.maxMessageBytes),
			"max_inflight_per_conn": int64(l.maxInFlight),
		},
	}
	closeAudit := func() {}
	if l.auditLog != "" {
		f, err := openAuditLog(l.auditLog)
		if err != nil {
			return nil, nil, err
		}
		audit := zerolog.New(zerolog.MultiLevelWriter(f, log)).With().Timestamp().Logger()
		opts.Audit = &audit
		closeAudit = func() { f.Close() }
	}
	return runtime.New(opts), closeAudit, nil
}

// reloadOnHUP reloads the policy on SIGHUP until ctx ends (a bad file is
// refused and the one in force kept; both are logged). The returned func
// stops listening for the signal.
func (l *limits) reloadOnHUP(ctx context.Context, log zerolog.Logger) (stop func()) {
	if l.policy == nil {
		return func() {}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go l.policy.ReloadOn(ctx, hup, l.policyFile, func(p *policy.Policy, err error) {
		if err != nil {
			log.Error().Err(err).Str("policy", l.policyFile).Msg("policy reload refused; the policy in force is kept")
			return
		}
		log.Info().Str("policy", l.policyFile).Int("rules", p.Len()).Msg("policy reloaded")
	})
	return func() { signal.Stop(hup) }
}

func serve(args []string) int {
	fs := flag.NewFlagSet("trl serve", flag.ContinueOnError)
	var l limits
	l.register(fs)
	instance := fs.String("instance", "default", "instance name: the socket is /tmp/trl-NAME.sock")
	socket := fs.String("socket", "", "socket path (overrides --instance)")
	allowAnyUID := fs.Bool("allow-any-uid", false, "accept socket clients of any user (default: the daemon's own user and root); the socket stays mode 0600, so other users reach it once you widen it (chmod 0666 SOCKET, or a shared group)")
	var hf httpFlags
	hf.register(fs)
	var mf metricsFlags
	mf.register(fs)
	setUsage(fs, "trl serve [flags]   the daemon, on the socket (and HTTP with --http)\n\nThe socket: --socket, else --instance, else $TRL_SOCKET, else /tmp/trl-default.sock.")
	if code, ok := parseCommand(fs, args, os.Stdout, os.Stderr, l.check, hf.check); !ok {
		return code
	}
	log, err := newLogger(l.logLevel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "trl serve:", err)
		return 2
	}
	path := socketPath(fs, *socket, *instance)
	rt, closeAudit, err := l.runtime(log, hf.noApprover())
	if err != nil {
		log.Error().Err(err).Msg("cannot start")
		return 1
	}
	defer closeAudit()
	// The socket is claimed before anything else listens: a daemon
	// already on it ends this start before it logs an HTTP address or
	// a console login URL that would be dead a moment later.
	srv, err := transport.ListenUnix(path, transport.UnixOptions{
		Logger:          log,
		AllowAnyUID:     *allowAnyUID,
		MaxMessageBytes: l.maxMessageBytes,
		MaxInFlight:     l.maxInFlight,
	})
	if errors.Is(err, transport.ErrAlreadyListening) {
		err = fmt.Errorf("another trl daemon is already listening on %s: stop it first, or give this one a socket of its own with --instance NAME (/tmp/trl-NAME.sock) or --socket PATH", path)
	}
	if err != nil {
		log.Error().Err(err).Msg("cannot listen")
		return 1
	}
	obs, err := mf.install(log, rt)
	if err != nil {
		srv.Close()
		log.Error().Err(err).Msg("cannot listen on --metrics")
		return 1
	}
	defer obs.close()
	hf.probes, hf.metrics = obs.probes, obs.prom.Handler()
	hf.files = rt

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	defer l.reloadOnHUP(ctx, log)()

	hs, err := hf.listen(log, rt, l.maxMessageBytes)
	if err != nil {
		srv.Close()
		log.Error().Err(err).Msg("cannot start")
		return 1
	}
	stopRecording, err := record(hf.record, rt, log)
	if err != nil {
		hs.close()
		srv.Close()
		log.Error().Err(err).Msg("cannot start")
		return 1
	}
	defer stopRecording()
	log.Info().Str("socket", path).Str("version", runtime.Version).Int("pid", os.Getpid()).Msg("trl serving")
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), rt) }()
	hs.serve(rt)

	select {
	case <-ctx.Done():
	case err := <-served:
		log.Error().Err(err).Msg("serve failed")
		rt.Shutdown(context.Background())
		return 1
	case err := <-hs.failed():
		log.Error().Err(err).Msg("HTTP serve failed")
		rt.Shutdown(context.Background())
		return 1
	}
	// Stop accepting and let each connection finish while the runtime
	// ends every session: in-flight requests are answered SHUTTING_DOWN
	// on their own connections before those close.
	log.Info().Msg("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	rt.BeginShutdown()
	drained := make(chan error, 1)
	go func() { drained <- srv.Shutdown(shutdownCtx) }()
	httpDrained := hs.shutdown(shutdownCtx)
	if err := rt.Shutdown(shutdownCtx); err != nil {
		log.Warn().Err(err).Msg("requests still running at shutdown")
	}
	<-drained
	<-served
	httpDrained()
	stopRecording()
	log.Info().Msg("stopped")
	return 0
}

func stdio(args []string) int {
	fs := flag.NewFlagSet("trl stdio", flag.ContinueOnError)
	var l limits
	l.register(fs)
	setUsage(fs, "trl stdio [flags]   the method table on stdin/stdout, without a daemon")
	if code, ok := parseCommand(fs, args, os.Stdout, os.Stderr, l.check); !ok {
		return code
	}
	log, err := newLogger(l.logLevel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "trl stdio:", err)
		return 2
	}
	rt, closeAudit, err := l.runtime(log, "trl stdio has no approver; approval is given over HTTP (TRL_APPROVER_TOKEN) or in the web console of a trl serve --http")
	if err != nil {
		log.Error().Err(err).Msg("cannot start")
		return 1
	}
	defer closeAudit()
	sig, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	defer l.reloadOnHUP(sig, log)()
	// A signal begins the shutdown before it stops the transport, so a
	// request in flight is answered SHUTTING_DOWN, as on the socket, not
	// with a status of a command about to be killed.
	ctx, stopServing := context.WithCancel(context.Background())
	defer stopServing()
	defer context.AfterFunc(sig, func() { rt.BeginShutdown(); stopServing() })()
	in := pollableStdin()
	defer in.Close()
	err = transport.ServeStdio(ctx, in, os.Stdout, rt, transport.ConnOptions{MaxMessageBytes: l.maxMessageBytes, Actor: fmt.Sprintf("stdio pid=%d", os.Getppid())})
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	rt.Shutdown(shutdownCtx)
	if err != nil {
		log.Error().Err(err).Msg("stdio")
		return 1
	}
	return 0
}

// openAuditLog opens the audit trail for appending: created 0600, never
// through a symlink (O_NOFOLLOW), and an existing file's mode narrowed to
// 0600, since the trail names every command run.
func openAuditLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("--audit-log %s is a symlink; give the file's real path", path)
		}
		return nil, fmt.Errorf("open --audit-log: %w", err)
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("--audit-log %s is not a regular file", path)
	}
	if err == nil && info.Mode().Perm() != 0o600 {
		err = f.Chmod(0o600)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// pollableStdin is the process's stdin in a form whose Close ends a
// read that waits: a signal then ends `trl stdio` while its client keeps
// stdin open, where a read of os.Stdin (blocking, in the kernel) held it
// until the client wrote or closed.
//   - A pipe, FIFO or terminal is opened anew (/proc/self/fd/0), a file
//     description of its own, so that Go's poller reads it and the
//     non-blocking mode it sets is not the client's; O_NONBLOCK keeps the
//     open of a FIFO whose writer has gone from waiting, O_NOCTTY a
//     terminal from becoming this process's.
//   - A socket (Node's and Python's asyncio's child processes get one)
//     is shut down for reading on Close, which ends a read with EOF.
//   - A regular file is used as it is: its reads never wait, and a new
//     open would lose its offset.
func pollableStdin() io.ReadCloser {
	st, err := os.Stdin.Stat()
	switch {
	case err != nil:
		return os.Stdin
	case st.Mode()&os.ModeSocket != 0:
		return socketStdin{os.Stdin}
	case st.Mode()&(os.ModeNamedPipe|os.ModeCharDevice) == 0:
		return os.Stdin
	}
	f, err := os.OpenFile("/proc/self/fd/0", os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return os.Stdin
	}
	return f
}

// socketStdin is a socket stdin whose Close shuts it down for reading.
type socketStdin struct{ *os.File }

func (s socketStdin) Close() error {
	rc, err := s.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Shutdown(int(fd), syscall.SHUT_RD) }); err != nil {
		return err
	}
	return serr
}
