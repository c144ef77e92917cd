package rpc

import (
	"context"
	"errors"
	"fmt"

	"github.com/creachadair/jrpc2"

	"github.com/task-x/runtime/steps/llm"
)

// The protocol's error codes (runtime-protocol.md, Errors). This table is the
// one place that maps failures to codes.
const (
	CodeParseError        jrpc2.Code = -32700
	CodeInvalidRequest    jrpc2.Code = -32600
	CodeMethodNotFound    jrpc2.Code = -32601
	CodeInvalidParams     jrpc2.Code = -32602
	CodeInternal          jrpc2.Code = -32603
	CodeProvider          jrpc2.Code = -32001
	CodeProtocolVersion   jrpc2.Code = -32002
	CodeNotInitialized    jrpc2.Code = -32003
	CodeNoWorkspace       jrpc2.Code = -32004
	CodeTool              jrpc2.Code = -32005
	CodeRequestCancelled  jrpc2.Code = -32800
	cancelledKind                    = "cancelled"
	notImplementedMessage            = "not implemented yet: %s"
)

// Sentinel causes of a request's cancellation.
var (
	errCancelledByClient = errors.New("cancelled by $/cancelRequest")
	errShuttingDown      = errors.New("the runtime is shutting down")
)

// rpcError builds a protocol error with optional data.
func rpcError(code jrpc2.Code, data any, format string, args ...any) *jrpc2.Error {
	return jrpc2.Errorf(code, format, args...).WithData(data)
}

// invalidParams is the -32602 error; its message names the field and the rule.
func invalidParams(format string, args ...any) *jrpc2.Error {
	return jrpc2.Errorf(CodeInvalidParams, format, args...)
}

// notImplemented is the answer of a method whose feature has not landed yet.
func notImplemented(method string) *jrpc2.Error {
	return rpcError(CodeInternal, map[string]string{"kind": "notImplemented", "method": method},
		notImplementedMessage, method)
}

// cancelledError is the -32800 reply of a request whose context ended.
func cancelledError(cause error) *jrpc2.Error {
	reason := "cancelled"
	if cause != nil && !errors.Is(cause, context.Canceled) {
		reason = cause.Error()
	}
	return rpcError(CodeRequestCancelled, map[string]string{"kind": cancelledKind, "reason": reason},
		"request cancelled: %s", reason)
}

// toProtocolError maps any error a handler returns to the error on the wire.
// Errors that already carry a protocol code keep it; anything else is a
// failure of the machinery and becomes -32603.
func toProtocolError(err error) *jrpc2.Error {
	var je *jrpc2.Error
	if errors.As(err, &je) {
		return je
	}
	var pe *llm.ProviderError
	if errors.As(err, &pe) {
		return rpcError(CodeProvider, pe, "provider error: %s", pe.Error())
	}
	var coded interface{ ErrCode() jrpc2.Code }
	if errors.As(err, &coded) {
		return jrpc2.Errorf(coded.ErrCode(), "%s", err.Error())
	}
	return jrpc2.Errorf(CodeInternal, "internal error: %s", err.Error())
}

// panicError is the -32603 reply of a handler that panicked.
func panicError(method string, v any) *jrpc2.Error {
	return rpcError(CodeInternal, map[string]string{"kind": "panic"}, "internal error in %s: %v", method, fmt.Sprint(v))
}
