package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Codes of the protocol's Errors table.
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
	codeVersion        = -32002
	codeNotInit        = -32003
	codeCancelled      = -32800
)

// implemented lists the methods of the spec that answer for real so far;
// every other method of the spec must say "not implemented yet".
var implemented = map[string]bool{
	"initialize": true, "shutdown": true, "provider/capabilities": true, "provider/listModels": true,
	"provider/models": true, "provider/contextWindow": true, "provider/test": true, "chat/send": true,
}

// specRequests is every request method of runtime-protocol.md.
var specRequests = []string{
	"initialize", "shutdown", "provider/capabilities", "provider/listModels", "provider/models",
	"provider/contextWindow", "provider/test", "chat/send", "workspace/open", "workspace/refresh",
	"context/inspect", "context/retrieve", "graph/project", "graph/file", "prompt/refine",
	"agent/run", "agent/cancelTool", "agent/cancelSubagent", "agent/steer", "agent/bestOf",
	"agent/tasks", "agent/task", "agent/deleteTask", "worktrees/apply", "worktrees/discard",
	"worktrees/list", "tools/list", "tools/call", "edits/list", "edits/pending", "edits/keep",
	"edits/revert", "edits/undo", "config/hooks", "mcp/configure", "mcp/status", "skills/list",
	"skills/resolve", "claude/run",
}

func TestRequestsBeforeInitializeFailWithNotInitialized(t *testing.T) {
	t.Parallel()
	r := Start(t)
	for _, method := range []string{"provider/capabilities", "shutdown", "agent/run", "no/such/method"} {
		r.Request(method, method, nil)
		ExpectError(t, r.Response(method), codeNotInit, "initialize")
	}
	// A notification before initialize is dropped, and initialize still works.
	r.Notify("workspace/filesChanged", map[string]any{"paths": []string{"a.go"}})
	r.Initialize()
}

func TestInitializeAnswersTheServerAndTheFourProviders(t *testing.T) {
	t.Parallel()
	r := Start(t)
	var res struct {
		ProtocolVersion int `json:"protocolVersion"`
		ServerInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
		Providers []struct {
			Kind           string          `json:"kind"`
			Capabilities   map[string]bool `json:"capabilities"`
			RequiresAPIKey *bool           `json:"requiresApiKey"`
		} `json:"providers"`
	}
	init := r.Initialize()
	ExpectResult(t, init, &res)
	if res.ProtocolVersion != 1 || res.ServerInfo.Name != "task-x-runtime" || res.ServerInfo.Version == "" {
		t.Fatalf("unexpected initialize result: %+v", res)
	}
	wantKey := map[string]bool{"anthropic": true, "openai": true, "openaiCompatible": true, "ollama": false}
	var kinds []string
	for _, p := range res.Providers {
		kinds = append(kinds, p.Kind)
		if p.RequiresAPIKey == nil || *p.RequiresAPIKey != wantKey[p.Kind] {
			t.Errorf("%s: requiresApiKey should be %v", p.Kind, wantKey[p.Kind])
		}
		if !p.Capabilities["streaming"] || !p.Capabilities["tools"] {
			t.Errorf("%s: capabilities %v lack streaming or tools", p.Kind, p.Capabilities)
		}
	}
	if got := strings.Join(kinds, ","); got != "anthropic,openai,openaiCompatible,ollama" {
		t.Fatalf("providers are %s", got)
	}

	// provider/capabilities is the same list.
	var first struct {
		Providers json.RawMessage `json:"providers"`
	}
	ExpectResult(t, init, &first)
	var again json.RawMessage
	ExpectResult(t, r.Call("provider/capabilities", nil), &again)
	if !jsonEqual(t, first.Providers, again) {
		t.Fatalf("provider/capabilities %s differs from initialize's providers %s", again, first.Providers)
	}

	ExpectError(t, r.Call("initialize", map[string]any{"protocolVersion": 1}), codeInvalidRequest, "already initialized")
}

func TestInitializeParams(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	aFile := filepath.Join(tmp, "file")
	if err := os.WriteFile(aFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		params    any
		code      int
		fragments []string
	}{
		{"a different protocol version fails with -32002", map[string]any{"protocolVersion": 2}, codeVersion, []string{"2", "1"}},
		{"a newer client's unknown fields still get the version error", map[string]any{"protocolVersion": 3, "future": true}, codeVersion, nil},
		{"a missing protocol version is invalid", map[string]any{}, codeInvalidParams, []string{"protocolVersion", "required"}},
		{"a string protocol version is invalid", map[string]any{"protocolVersion": "1"}, codeInvalidParams, []string{"protocolVersion", "integer"}},
		{"a fractional protocol version is invalid", map[string]any{"protocolVersion": 1.5}, codeInvalidParams, []string{"protocolVersion"}},
		{"an unknown field is named", map[string]any{"protocolVersion": 1, "colour": "blue"}, codeInvalidParams, []string{"colour", "unknown field"}},
		{"an unknown nested field is named with its path", map[string]any{"protocolVersion": 1, "clientInfo": map[string]any{"name": "x", "nam": "y"}}, codeInvalidParams, []string{"clientInfo.nam"}},
		{"field names match exactly", map[string]any{"ProtocolVersion": 1}, codeInvalidParams, []string{"ProtocolVersion"}},
		{"a wrong type is named", map[string]any{"protocolVersion": 1, "sandbox": "yes"}, codeInvalidParams, []string{"sandbox", "boolean"}},
		{"a relative dataDir is refused", map[string]any{"protocolVersion": 1, "dataDir": "relative/dir"}, codeInvalidParams, []string{"dataDir", "absolute"}},
		{"a dataDir that is a file is refused", map[string]any{"protocolVersion": 1, "dataDir": aFile}, codeInvalidParams, []string{"dataDir"}},
		{"params that are an array are refused", []any{1}, codeInvalidParams, []string{"object"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := Start(t)
			ExpectError(t, r.Call("initialize", tc.params), tc.code, tc.fragments...)
			// A failed initialize leaves the runtime waiting for a good one.
			ExpectError(t, r.Call("provider/capabilities", nil), codeNotInit)
			r.Initialize()
		})
	}

	t.Run("the version error carries the server's version", func(t *testing.T) {
		t.Parallel()
		r := Start(t)
		m := r.Call("initialize", map[string]any{"protocolVersion": 7})
		ExpectError(t, m, codeVersion)
		var data struct {
			ServerProtocolVersion int `json:"serverProtocolVersion"`
		}
		if err := json.Unmarshal(m.Error.Data, &data); err != nil || data.ServerProtocolVersion != 1 {
			t.Fatalf("error.data = %s, want serverProtocolVersion 1", m.Error.Data)
		}
	})

	t.Run("dataDir is created when missing and sandbox is accepted", func(t *testing.T) {
		t.Parallel()
		r := Start(t)
		dir := filepath.Join(t.TempDir(), "nested", "data")
		ExpectResult(t, r.Call("initialize", map[string]any{"protocolVersion": 1, "dataDir": dir, "sandbox": false,
			"clientInfo": map[string]string{"name": "task-x-vscode", "version": "0.1.0"}}), nil)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("dataDir %s was not created: %v", dir, err)
		}
	})
}

func TestEveryMethodOfTheSpecIsRegistered(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	for _, method := range specRequests {
		if implemented[method] {
			continue
		}
		t.Run(method, func(t *testing.T) {
			m := r.Call(method, map[string]any{})
			ExpectError(t, m, codeInternal, "not implemented yet: "+method)
		})
	}
	ExpectError(t, r.Call("no/such/method", nil), codeMethodNotFound, "no/such/method")
	// A notification of an unknown method is ignored; exit, a notification,
	// is refused when sent as a request.
	r.Notify("no/such/notification", nil)
	r.ExpectNoMessage()
	ExpectError(t, r.Call("exit", nil), codeInvalidRequest, "notification")
}

func TestEnvelopeErrors(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	cases := []struct {
		name string
		line string
		code int
		id   string // the reply's id, as JSON
	}{
		{"bad syntax is a parse error with a null id", `{"jsonrpc":"2.0","id":1,"method":`, codeParse, "null"},
		{"a batch gets one invalid-request error", `[{"jsonrpc":"2.0","id":1,"method":"provider/capabilities"},{"jsonrpc":"2.0","id":2,"method":"provider/capabilities"}]`, codeInvalidRequest, "null"},
		{"an empty batch gets one invalid-request error", `[]`, codeInvalidRequest, "null"},
		{"a fractional id is refused", `{"jsonrpc":"2.0","id":1.5,"method":"provider/capabilities"}`, codeInvalidRequest, "null"},
		{"an exponent id is refused", `{"jsonrpc":"2.0","id":1e3,"method":"provider/capabilities"}`, codeInvalidRequest, "null"},
		{"a boolean id is refused", `{"jsonrpc":"2.0","id":true,"method":"provider/capabilities"}`, codeInvalidRequest, "null"},
		{"an object id is refused", `{"jsonrpc":"2.0","id":{"a":1},"method":"provider/capabilities"}`, codeInvalidRequest, "null"},
		{"an array id is refused", `{"jsonrpc":"2.0","id":[1],"method":"provider/capabilities"}`, codeInvalidRequest, "null"},
		{"a null id is refused", `{"jsonrpc":"2.0","id":null,"method":"provider/capabilities"}`, codeInvalidRequest, "null"},
		{"a message that is not an object is refused", `42`, codeInvalidRequest, "null"},
		{"a wrong version is refused with the id", `{"jsonrpc":"1.0","id":9,"method":"provider/capabilities"}`, codeInvalidRequest, "9"},
		{"a missing version is refused with the id", `{"id":"v","method":"provider/capabilities"}`, codeInvalidRequest, `"v"`},
		{"an id without a method is refused", `{"jsonrpc":"2.0","id":10}`, codeInvalidRequest, "10"},
		{"a string params is refused", `{"jsonrpc":"2.0","id":11,"method":"provider/capabilities","params":"x"}`, codeInvalidRequest, "11"},
		{"an unknown member is refused", `{"jsonrpc":"2.0","id":12,"method":"provider/capabilities","extra":1}`, codeInvalidRequest, "12"},
		{"unknown params fields are invalid params", `{"jsonrpc":"2.0","id":13,"method":"provider/capabilities","params":{"x":1}}`, codeInvalidParams, "13"},
	}
	for _, tc := range cases {
		r.Send(tc.line)
		m := r.Next()
		if !m.IsResponse() || m.Error == nil || m.Error.Code != tc.code || string(m.ID) != tc.id {
			t.Errorf("%s: got %s, want error %d with id %s", tc.name, describe(m), tc.code, tc.id)
		}
	}
}

func TestIDs(t *testing.T) {
	t.Parallel()

	t.Run("1 and \"1\" are different ids and may be in flight together", func(t *testing.T) {
		t.Parallel()
		r := Start(t)
		r.Initialize()
		r.Request(1, "$/diagnostics/sleep", map[string]int{"ms": 300})
		r.Request("1", "$/diagnostics/sleep", map[string]int{"ms": 200})
		ExpectResult(t, r.Response("1"), nil)
		ExpectResult(t, r.Response(1), nil)
	})

	t.Run("a duplicate id in flight is refused and the first request still answers", func(t *testing.T) {
		t.Parallel()
		r := Start(t)
		r.Initialize()
		r.Request("dup", "$/diagnostics/sleep", map[string]int{"ms": 60000})
		r.Request("dup", "provider/capabilities", nil)
		ExpectError(t, r.Next(), codeInvalidRequest, "duplicate")
		r.Notify("$/cancelRequest", map[string]any{"id": "dup"})
		ExpectError(t, r.Response("dup"), codeCancelled)
		// Once answered, the id may be used again.
		r.Request("dup", "provider/capabilities", nil)
		ExpectResult(t, r.Response("dup"), nil)
	})

	t.Run("the same string written with an escape is the same id", func(t *testing.T) {
		t.Parallel()
		r := Start(t)
		r.Initialize()
		r.Send(`{"jsonrpc":"2.0","id":"a1","method":"$/diagnostics/sleep","params":{"ms":60000}}`)
		r.Send(`{"jsonrpc":"2.0","id":"a\u0031","method":"provider/capabilities"}`)
		ExpectError(t, r.Next(), codeInvalidRequest, "duplicate")
		r.Send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"\u00611"}}`)
		ExpectError(t, r.Response("a1"), codeCancelled)
	})
}

func TestCancelRequest(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	r.Request("slow", "$/diagnostics/sleep", map[string]int{"ms": 600000})
	r.Notify("$/cancelRequest", map[string]any{"id": "slow"})
	m := r.Response("slow")
	ExpectError(t, m, codeCancelled)
	var data struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(m.Error.Data, &data); err != nil || data.Kind != "cancelled" {
		t.Fatalf("error.data = %s, want kind cancelled", m.Error.Data)
	}

	// An unknown id is ignored: no reply, and the runtime goes on.
	r.Notify("$/cancelRequest", map[string]any{"id": "nobody"})
	r.Notify("$/cancelRequest", map[string]any{"id": 12345})
	r.ExpectNoMessage()

	// Cancelling 1 leaves "1" running.
	r.Request(1, "$/diagnostics/sleep", map[string]int{"ms": 600000})
	r.Request("1", "$/diagnostics/sleep", map[string]int{"ms": 200})
	r.Notify("$/cancelRequest", map[string]any{"id": 1})
	ExpectError(t, r.Response(1), codeCancelled)
	ExpectResult(t, r.Response("1"), nil)
}

func TestPanicInOneRequestLeavesTheRuntimeUp(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	ExpectError(t, r.Call("$/diagnostics/panic", nil), codeInternal, "panic")
	ExpectResult(t, r.Call("provider/capabilities", nil), nil)
}

func TestDiagnosticsAreOffByDefault(t *testing.T) {
	t.Parallel()
	r := Start(t, Env("TASK_X_DIAGNOSTICS="))
	r.Initialize()
	ExpectError(t, r.Call("$/diagnostics/sleep", map[string]int{"ms": 0}), codeMethodNotFound)
}

func TestRepliesToUnknownRequestsAreDropped(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	r.Send(`{"jsonrpc":"2.0","id":77,"result":{"decision":"allow"}}`)
	r.Send(`{"jsonrpc":"2.0","id":78,"error":{"code":-1,"message":"no"}}`)
	r.Send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"the client could not parse a line"}}`)
	r.ExpectNoMessage()
}

func TestShutdownCancelsWorkAndRefusesNewRequests(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	r.Request("long", "$/diagnostics/sleep", map[string]int{"ms": 600000})
	ExpectResult(t, r.Call("shutdown", nil), nil)
	m := r.Response("long")
	ExpectError(t, m, codeCancelled, "shutting down")
	ExpectError(t, r.Call("provider/capabilities", nil), codeInvalidRequest, "shutting down")
	ExpectError(t, r.Call("shutdown", nil), codeInvalidRequest, "shutting down")
	r.Notify("exit", nil)
	if rest := r.ExitedCleanly(); len(rest) != 0 {
		t.Fatalf("unread messages %v", rest)
	}
}

func TestExitWaitsForOpenReplies(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	r.Request("open", "$/diagnostics/sleep", map[string]int{"ms": 500})
	r.Notify("exit", nil)
	rest := r.ExitedCleanly()
	if len(rest) != 1 || string(rest[0].ID) != `"open"` || rest[0].Error != nil {
		t.Fatalf("the open request was not answered before exit: %v", rest)
	}
}

func TestExitGivesUpOnRepliesAfterFiveSeconds(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	r.Request("stuck", "$/diagnostics/sleep", map[string]any{"ms": 600000, "ignoreCancel": true})
	start := time.Now()
	r.Notify("exit", nil)
	rest := r.ExitedCleanly()
	if len(rest) != 0 {
		t.Fatalf("a reply came from a request that never ends: %v", rest)
	}
	if waited := time.Since(start); waited < 5*time.Second {
		t.Fatalf("exit waited %s for the open reply, want 5s", waited)
	}
}

func TestRequestsAfterExitAreRefused(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	r.Request("open", "$/diagnostics/sleep", map[string]int{"ms": 300})
	r.Notify("exit", nil)
	r.Request("late", "provider/capabilities", nil)
	ExpectError(t, r.Response("late"), codeInvalidRequest)
	ExpectResult(t, r.Response("open"), nil)
	r.ExitedCleanly()
}

func TestEndOfInputActsAsExit(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	r.Request("open", "$/diagnostics/sleep", map[string]int{"ms": 300})
	r.Request("quick", "provider/capabilities", nil)
	r.CloseStdin()
	rest := r.ExitedCleanly()
	ids := map[string]bool{}
	for _, m := range rest {
		if m.Error != nil {
			t.Errorf("request %s failed: %s", m.ID, m.Error.Message)
		}
		ids[string(m.ID)] = true
	}
	if !ids[`"open"`] || !ids[`"quick"`] {
		t.Fatalf("requests sent before the end of input were not all answered: %v", rest)
	}
}

func TestSIGTERMActsAsExit(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	r.Request("open", "$/diagnostics/sleep", map[string]int{"ms": 300})
	// Requests are admitted in order: once this one is answered, "open" is
	// in flight, and the signal comes after it.
	ExpectResult(t, r.Call("provider/capabilities", nil), nil)
	r.Signal(syscall.SIGTERM)
	rest := r.ExitedCleanly()
	if len(rest) != 1 || rest[0].Error != nil {
		t.Fatalf("the open request was not answered: %v", rest)
	}
}

func TestPipelinedRequestsWaitForInitialize(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Request(1, "initialize", map[string]any{"protocolVersion": 1})
	r.Request(2, "provider/capabilities", nil)
	r.Request(3, "shutdown", nil)
	r.Request(4, "provider/capabilities", nil)
	ExpectResult(t, r.Response(1), nil)
	ExpectResult(t, r.Response(3), nil)
	ExpectError(t, r.Response(4), codeInvalidRequest, "shutting down")
	if m := r.Response(2); m.Error != nil && m.Error.Code != codeCancelled {
		t.Fatalf("a request sent before shutdown got %s", describe(m))
	}
}

func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return mustJSON(t, x) == mustJSON(t, y)
}

func TestExitWithUnexpectedParamsStillExits(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	r.Notify("exit", map[string]any{"reason": "user closed the window"})
	r.ExitedCleanly()
}

func TestExitBeforeInitializeExits(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Notify("exit", nil)
	r.ExitedCleanly()
}

func TestASecondSIGTERMStopsWaitingForOpenReplies(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	r.Request("stuck", "$/diagnostics/sleep", map[string]any{"ms": 600000, "ignoreCancel": true})
	ExpectResult(t, r.Call("provider/capabilities", nil), nil) // "stuck" is in flight
	r.Signal(syscall.SIGTERM)
	r.WaitStderr("exiting on a signal") // signals of one kind coalesce while pending
	r.Signal(syscall.SIGTERM)
	if rest := r.ExitedCleanly(); len(rest) != 0 {
		t.Fatalf("replies %v", rest)
	}
	if !strings.Contains(r.Stderr(), "second signal") {
		t.Fatalf("the second signal was not acted on:\n%s", r.Stderr())
	}
}

func TestInitializeMarksRunsLeftRunningAsInterrupted(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	runDir := filepath.Join(dataDir, "runs", "killed-run")
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	log := `{"runId":"killed-run","kind":"run","from":"pending","to":"running","seq":0,"ts":"2026-11-30T08:00:00Z"}` + "\n" +
		`{"runId":"killed-run","stepId":"a","kind":"subagent","from":"pending","to":"running","seq":1,"ts":"2026-11-30T08:00:01Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(runDir, "events.jsonl"), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	r := Start(t)
	ExpectResult(t, r.Call("initialize", map[string]any{"protocolVersion": 1, "dataDir": dataDir}), nil)
	data, err := os.ReadFile(filepath.Join(runDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	last := lines[len(lines)-1]
	if len(lines) != 3 || !strings.Contains(last, `"to":"failed"`) || !strings.Contains(last, "interrupted") || !strings.Contains(last, `"seq":2`) {
		t.Fatalf("the run was not marked interrupted:\n%s", data)
	}
}
