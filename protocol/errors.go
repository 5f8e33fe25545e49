package protocol

import (
	"errors"
	"fmt"
)

// Code is an application error code as it appears in the TRL envelope's
// error.code and in a JSON-RPC error's data.code.
type Code string

// The error codes of seed 001, extended as SPEC §3 says.
const (
	CodeSessionNotFound Code = "SESSION_NOT_FOUND"
	CodeSessionBusy     Code = "SESSION_BUSY"
	CodeCommandTimeout  Code = "COMMAND_TIMEOUT"
	CodeCommandFailed   Code = "COMMAND_FAILED"
	CodeInvalidParams   Code = "INVALID_PARAMS"
	CodeInternal        Code = "INTERNAL_ERROR"
	CodeAuthFailed      Code = "AUTH_FAILED"
	CodeMethodNotFound  Code = "METHOD_NOT_FOUND"
	CodeSessionExited   Code = "SESSION_EXITED"
	CodeLimitExceeded   Code = "LIMIT_EXCEEDED"
	CodeStreamNotFound  Code = "STREAM_NOT_FOUND"
	CodeShuttingDown    Code = "SHUTTING_DOWN"

	// The file methods' codes (SPEC §15).
	CodeFileNotFound     Code = "FILE_NOT_FOUND"
	CodePermissionDenied Code = "PERMISSION_DENIED"
	CodeConflict         Code = "CONFLICT"
	CodeIsADirectory     Code = "IS_A_DIRECTORY"
	CodeNotADirectory    Code = "NOT_A_DIRECTORY"
	CodeOutsideRoot      Code = "OUTSIDE_ROOT"
)

// JSON-RPC 2.0 error numbers. The standard ones are fixed by the JSON-RPC
// specification; the application codes take the -32000…-32099 range.
const (
	RPCParseError     = -32700
	RPCInvalidRequest = -32600
	RPCMethodNotFound = -32601
	RPCInvalidParams  = -32602
	RPCInternalError  = -32603
)

// rpcCodes maps every application code to its JSON-RPC number. It is the
// single table the README documents.
var rpcCodes = map[Code]int{
	CodeInvalidParams:    RPCInvalidParams,
	CodeMethodNotFound:   RPCMethodNotFound,
	CodeInternal:         RPCInternalError,
	CodeSessionNotFound:  -32001,
	CodeSessionBusy:      -32002,
	CodeCommandTimeout:   -32003,
	CodeCommandFailed:    -32004,
	CodeAuthFailed:       -32005,
	CodeSessionExited:    -32006,
	CodeLimitExceeded:    -32007,
	CodeStreamNotFound:   -32008,
	CodeShuttingDown:     -32009,
	CodeInvalidState:     -32010,
	CodeFileNotFound:     -32011,
	CodePermissionDenied: -32012,
	CodeConflict:         -32013,
	CodeIsADirectory:     -32014,
	CodeNotADirectory:    -32015,
	CodeOutsideRoot:      -32016,
	CodeCommandDenied:    -32017,
}

// RPCCode returns the JSON-RPC 2.0 error number for c.
func RPCCode(c Code) int {
	if n, ok := rpcCodes[c]; ok {
		return n
	}
	return RPCInternalError
}

// Error is an error a client sees: a code from the table above, a message a
// person can act on, and optional structured data (for COMMAND_FAILED, the
// full command result).
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`

	// rpc overrides the JSON-RPC number for the framing errors (-32700,
	// -32600) that have no application code of their own.
	rpc int
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ParseError is the error for bytes that are not a JSON object.
func ParseError(format string, args ...any) *Error {
	e := Errorf(CodeInvalidParams, format, args...)
	e.rpc = RPCParseError
	return e
}

// InvalidRequest is the error for a JSON object that is not a request.
func InvalidRequest(format string, args ...any) *Error {
	e := Errorf(CodeInvalidParams, format, args...)
	e.rpc = RPCInvalidRequest
	return e
}

// rpcNumber is the JSON-RPC number this error is sent with.
func (e *Error) rpcNumber() int {
	if e.rpc != 0 {
		return e.rpc
	}
	return RPCCode(e.Code)
}

// AsError turns any error into an *Error: one the method table built is
// kept as it is; anything else becomes INTERNAL_ERROR.
func AsError(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return &Error{Code: CodeInternal, Message: "internal error: " + err.Error()}
}
