package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime/debug"
	"strings"

	"github.com/trl-project/trl/metrics"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

// The Runtime is trl's typed API (protocol.API). Every front-end calls
// these methods: the JSON-RPC method table below decodes params into
// their types and hands the results to the wire; MCP, the console, the
// gateway adapter and the recorder call them directly. What every call
// gets, whoever makes it, is done once, in serve.
var _ protocol.API = (*Runtime)(nil)

// serve is the middleware of every typed call: a call after shutdown has
// begun is refused, a running call holds Shutdown back, a panic becomes
// INTERNAL_ERROR (logged with its stack), a domain error becomes the one
// wire error its kind maps to, and the call is counted by front-end,
// method and code.
func serve[R any](rt *Runtime, ctx context.Context, method string, f func() (R, error)) (r R, err error) {
	defer func() {
		if p := recover(); p != nil {
			c := protocol.CallerFrom(ctx)
			rt.log.Error().Str("method", method).Str("actor", c.Actor).
				Interface("panic", p).Bytes("stack", debug.Stack()).Msg("request handler panicked")
			err = protocol.Errorf(protocol.CodeInternal, "internal error while handling %s; the daemon log has details", method)
		}
		if err != nil {
			err = wireError(err)
		}
		metrics.Get().Request(protocol.CallerFrom(ctx).Transport, method, metrics.Code(err))
	}()
	rt.mu.Lock()
	if rt.closing {
		rt.mu.Unlock()
		return r, session.ErrShuttingDown
	}
	rt.calls.Add(1)
	rt.mu.Unlock()
	defer rt.calls.Done()
	rt.opts.Procs.Enter()
	defer rt.opts.Procs.Leave()
	return f()
}

// wireMethod is one entry of the JSON-RPC method table: params from the
// wire in, a reply out.
type wireMethod func(rt *Runtime, ctx context.Context, params json.RawMessage) (*protocol.Reply, error)

// unary makes a wire method of a typed one.
func unary[P, R any](method string, f func(*Runtime, context.Context, P) (R, error)) wireMethod {
	return func(rt *Runtime, ctx context.Context, raw json.RawMessage) (*protocol.Reply, error) {
		var p P
		if err := decode(ctx, method, raw, &p); err != nil {
			return nil, err
		}
		r, err := f(rt, ctx, p)
		if err != nil {
			return nil, err
		}
		return &protocol.Reply{Data: r}, nil
	}
}

// streaming makes a wire method of a typed one whose notifications
// follow its answer.
func streaming[P, R any](method string, f func(*Runtime, context.Context, P) (R, protocol.Follow, error)) wireMethod {
	return func(rt *Runtime, ctx context.Context, raw json.RawMessage) (*protocol.Reply, error) {
		var p P
		if err := decode(ctx, method, raw, &p); err != nil {
			return nil, err
		}
		r, follow, err := f(rt, ctx, p)
		if err != nil {
			return nil, err
		}
		return &protocol.Reply{Data: r, Follow: follow}, nil
	}
}

// decode reads params strictly; a failure, which never reaches serve, is
// counted here. A session_id given as "" to exec.run, exec.stream or fs.*
// is refused at the wire, where it differs from an absent one: absent means
// the session named "default", an empty string is a mistake (a variable
// that was not set) and must not quietly start a command in default.
func decode(ctx context.Context, method string, raw json.RawMessage, dst any) (err error) {
	defer func() {
		if err != nil {
			metrics.Get().Request(protocol.CallerFrom(ctx).Transport, method, metrics.Code(err))
		}
	}()
	if err := protocol.DecodeParams(raw, dst); err != nil {
		return err
	}
	if refusesEmptySession(method) && bytes.Contains(raw, []byte(`"session_id"`)) {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) == nil && string(m["session_id"]) == `""` {
			return protocol.Errorf(protocol.CodeInvalidParams, "session_id is empty: give a session's id or name, or leave session_id out to use the session named \"default\"")
		}
	}
	return nil
}

// refusesEmptySession says which methods refuse a session_id given as ""
// (the ones that would otherwise act in the session named "default").
func refusesEmptySession(method string) bool {
	return method == protocol.MethodExecRun || method == protocol.MethodExecStream || strings.HasPrefix(method, "fs.")
}

// table is the JSON-RPC method table, in the order METHOD_NOT_FOUND
// lists it.
var table = []struct {
	name string
	m    wireMethod
}{
	{protocol.MethodSessionCreate, unary(protocol.MethodSessionCreate, (*Runtime).SessionCreate)},
	{protocol.MethodSessionList, unary(protocol.MethodSessionList, (*Runtime).SessionList)},
	{protocol.MethodSessionInfo, unary(protocol.MethodSessionInfo, (*Runtime).SessionInfo)},
	{protocol.MethodSessionDestroy, unary(protocol.MethodSessionDestroy, (*Runtime).SessionDestroy)},
	{protocol.MethodSessionScreen, unary(protocol.MethodSessionScreen, (*Runtime).SessionScreen)},
	{protocol.MethodSessionResize, unary(protocol.MethodSessionResize, (*Runtime).SessionResize)},
	{protocol.MethodSessionOutput, unary(protocol.MethodSessionOutput, (*Runtime).SessionOutput)},
	{protocol.MethodSessionState, unary(protocol.MethodSessionState, (*Runtime).SessionState)},
	{protocol.MethodSessionFork, unary(protocol.MethodSessionFork, (*Runtime).SessionFork)},
	{protocol.MethodExecRun, unary(protocol.MethodExecRun, (*Runtime).ExecRun)},
	{protocol.MethodExecStream, streaming(protocol.MethodExecStream, (*Runtime).ExecStream)},
	{protocol.MethodExecRead, unary(protocol.MethodExecRead, (*Runtime).ExecRead)},
	{protocol.MethodExecAttach, streaming(protocol.MethodExecAttach, (*Runtime).ExecAttach)},
	{protocol.MethodExecCancel, unary(protocol.MethodExecCancel, (*Runtime).ExecCancel)},
	{protocol.MethodExecInput, unary(protocol.MethodExecInput, (*Runtime).ExecInput)},
	{protocol.MethodExecWait, unary(protocol.MethodExecWait, (*Runtime).ExecWait)},
	{protocol.MethodExecList, unary(protocol.MethodExecList, (*Runtime).ExecList)},
	{protocol.MethodExecApprove, unary(protocol.MethodExecApprove, (*Runtime).ExecApprove)},
	{protocol.MethodFSRead, unary(protocol.MethodFSRead, (*Runtime).FSRead)},
	{protocol.MethodFSWrite, unary(protocol.MethodFSWrite, (*Runtime).FSWrite)},
	{protocol.MethodFSEdit, unary(protocol.MethodFSEdit, (*Runtime).FSEdit)},
	{protocol.MethodFSList, unary(protocol.MethodFSList, (*Runtime).FSList)},
	{protocol.MethodFSStat, unary(protocol.MethodFSStat, (*Runtime).FSStat)},
	{protocol.MethodFSMkdir, unary(protocol.MethodFSMkdir, (*Runtime).FSMkdir)},
	{protocol.MethodFSRemove, unary(protocol.MethodFSRemove, (*Runtime).FSRemove)},
	{protocol.MethodFSMove, unary(protocol.MethodFSMove, (*Runtime).FSMove)},
	{protocol.MethodSystemPing, unary(protocol.MethodSystemPing, (*Runtime).SystemPing)},
	{protocol.MethodSystemStats, unary(protocol.MethodSystemStats, (*Runtime).SystemStats)},
}

var (
	methods     = map[string]wireMethod{}
	methodNames string
)

func init() {
	names := make([]string, len(table))
	for i, e := range table {
		methods[e.name] = e.m
		names[i] = e.name
	}
	methodNames = strings.Join(names, ", ")
}

// Methods lists the wire methods in table order.
func Methods() []string { return strings.Split(methodNames, ", ") }

// Handle implements protocol.Handler: the method table as transports
// see it.
func (rt *Runtime) Handle(ctx context.Context, call *protocol.Call) (*protocol.Reply, error) {
	m, ok := methods[call.Method]
	if !ok {
		err := protocol.Errorf(protocol.CodeMethodNotFound, "unknown method %q; methods are %s", clip(call.Method, 64), methodNames)
		metrics.Get().Request(protocol.CallerFrom(ctx).Transport, call.Method, metrics.Code(err))
		return nil, err
	}
	reply, err := m(rt, ctx, call.Params)
	if err != nil {
		return nil, wireError(err)
	}
	return reply, nil
}
