package rpc

import (
	"context"
	"encoding/json"

	"github.com/creachadair/jrpc2"
)

// Method names the server handles itself.
const (
	methodInitialize    = "initialize"
	methodShutdown      = "shutdown"
	methodExit          = "exit"
	methodCancelRequest = "$/cancelRequest"
)

// handlerFunc is a method's handler as jrpc2 calls it.
type handlerFunc = func(ctx context.Context, req *jrpc2.Request) (any, error)

// methodSpec is one registered method. A notification's handler must return
// promptly: jrpc2 runs the messages after a notification only once it has
// returned (exit included), so long work belongs to a goroutine with an owner.
type methodSpec struct {
	notification bool // sent without an id; never answered
	handler      handlerFunc
}

// specMethods lists every client-to-runtime method of the protocol, request
// or notification. Each is registered from the start; one whose feature has
// not landed answers "not implemented yet" until its group binds it.
var specMethods = []struct {
	name         string
	notification bool
}{
	{methodInitialize, false},
	{methodShutdown, false},
	{methodExit, true},
	{methodCancelRequest, true},
	{"provider/capabilities", false},
	{"provider/listModels", false},
	{"provider/models", false},
	{"provider/contextWindow", false},
	{"provider/test", false},
	{"chat/send", false},
	{"workspace/open", false},
	{"workspace/refresh", false},
	{"workspace/filesChanged", true},
	{"context/inspect", false},
	{"context/retrieve", false},
	{"graph/project", false},
	{"graph/file", false},
	{"prompt/refine", false},
	{"agent/run", false},
	{"agent/cancelTool", false},
	{"agent/cancelSubagent", false},
	{"agent/steer", false},
	{"agent/bestOf", false},
	{"agent/tasks", false},
	{"agent/task", false},
	{"agent/deleteTask", false},
	{"worktrees/apply", false},
	{"worktrees/discard", false},
	{"worktrees/list", false},
	{"tools/list", false},
	{"tools/call", false},
	{"edits/list", false},
	{"edits/pending", false},
	{"edits/keep", false},
	{"edits/revert", false},
	{"edits/undo", false},
	{"config/hooks", false},
	{"mcp/configure", false},
	{"mcp/status", false},
	{"skills/list", false},
	{"skills/resolve", false},
	{"claude/run", false},
}

// registerMethods fills the method table: every method of the protocol as
// not implemented, then the handlers that exist.
func (s *Server) registerMethods() {
	s.methods = make(map[string]methodSpec, len(specMethods))
	for _, m := range specMethods {
		name := m.name
		s.methods[name] = methodSpec{notification: m.notification, handler: func(context.Context, *jrpc2.Request) (any, error) {
			return nil, notImplemented(name)
		}}
	}
	s.bind(methodInitialize, s.initializeHandler())
	s.bind(methodShutdown, typed(s, s.shutdown))
	s.bind(methodExit, s.exit) // params, if any, cannot stop an exit
	s.bind(methodCancelRequest, typed(s, s.cancelRequest))
	s.bind("provider/capabilities", typed(s, s.providerCapabilities))
	s.bindProviders()
	if s.opts.Diagnostics {
		s.bindDiagnostics()
	}
}

// bind sets the handler of a method of the table, or adds a method of the
// runtime's own (listed in docs/protocol-additions.md).
func (s *Server) bind(name string, h handlerFunc) {
	spec := s.methods[name]
	spec.handler = h
	s.methods[name] = spec
}

// typed adapts a handler of decoded params to jrpc2. This is the one place
// params are decoded: strictly, with errors that name the field, and with
// secret fields registered with the log redactor before anything can log.
func typed[P any, R any](s *Server, fn func(context.Context, *P) (R, error)) handlerFunc {
	return func(ctx context.Context, req *jrpc2.Request) (any, error) {
		var raw json.RawMessage
		if err := req.UnmarshalParams(&raw); err != nil {
			return nil, err
		}
		p := new(P)
		err := DecodeParams(raw, p)
		for _, secret := range secretsOf(p) {
			s.redactor.Add(secret)
		}
		if err != nil {
			return nil, err
		}
		return fn(ctx, p)
	}
}

// noParams is the params of a method that takes none: absent, null or {}.
type noParams struct{}
