package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/task-x/runtime/steps/llm/llmtest"
)

// testKey is the API key of every test config.
const testKey = "sk-test-7f3a"

// clientFor is a client of srv's kind with model "test-model", the test
// key, and timeoutMs when it is not 0.
func clientFor(t *testing.T, srv *llmtest.Server, kind Kind, timeoutMs int) *Client {
	t.Helper()
	cfg := ProviderConfig{Kind: kind, Model: "test-model", BaseURL: srv.BaseURL(), APIKey: testKey}
	if timeoutMs != 0 {
		cfg.TimeoutMs = &timeoutMs
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

// chatRun is what one Chat call gave.
type chatRun struct {
	res    *ChatResult
	events []Event
	err    error
}

func runChat(ctx context.Context, c *Client, req *ChatRequest) chatRun {
	var r chatRun
	r.res, r.err = c.Chat(ctx, req, func(e Event) { r.events = append(r.events, e) })
	return r
}

// mustChat runs a chat that must succeed.
func mustChat(t *testing.T, c *Client, req *ChatRequest) chatRun {
	t.Helper()
	r := runChat(t.Context(), c, req)
	if r.err != nil {
		t.Fatalf("Chat: %v", r.err)
	}
	return r
}

// userText is a request with one user message of text.
func userText(text string) *ChatRequest {
	return &ChatRequest{Messages: []Message{{Role: RoleUser, Content: []ContentPart{{Type: PartText, Text: text}}}}}
}

// providerError asserts err is a ProviderError of kind.
func providerError(t *testing.T, err error, kind ErrorKind) *ProviderError {
	t.Helper()
	var pe *ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want a ProviderError of kind %s", err, err, kind)
	}
	if pe.Kind != kind {
		t.Fatalf("error kind %s (%v), want %s", pe.Kind, pe, kind)
	}
	if pe.Retryable != kind.Retryable() {
		t.Errorf("retryable %v for kind %s", pe.Retryable, kind)
	}
	return pe
}

// eventTypes lists the types of events in order, with adjacent text
// deltas folded into one.
func eventTypes(events []Event) []EventType {
	var out []EventType
	for _, e := range events {
		if e.Type == EventTextDelta && len(out) > 0 && out[len(out)-1] == EventTextDelta {
			continue
		}
		out = append(out, e.Type)
	}
	return out
}

// sameJSON asserts that two JSON texts hold the same value.
func sameJSON(t *testing.T, what string, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s: %q is not JSON: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want %q is not JSON: %v", what, want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s: %s, want %s", what, got, want)
	}
}

// bodyJSON re-encodes part of a recorded request body for sameJSON.
func bodyJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func lastChat(t *testing.T, srv *llmtest.Server) llmtest.Request {
	t.Helper()
	reqs := srv.ChatRequests()
	if len(reqs) == 0 {
		t.Fatal("the server got no chat request")
	}
	return reqs[len(reqs)-1]
}

func TestCompatStreamsTextAndSendsTheRequestTheAPIExpects(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible}, llmtest.TextTurn("Hel", "lo, ", "wörld"))
	c := clientFor(t, srv, OpenAICompatible, 0)
	req := userText("hi")
	req.System = "be brief"
	temp := 0.5
	req.Temperature = &temp
	r := mustChat(t, c, req)
	if r.res.Text != "Hello, wörld" || r.res.StopReason != StopEndTurn || len(r.res.ToolCalls) != 0 {
		t.Errorf("result %+v, want the text and endTurn", r.res)
	}
	if got, want := eventTypes(r.events), []EventType{EventTextDelta, EventUsage, EventDone}; !reflect.DeepEqual(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if n := len(r.events); n != 5 {
		t.Errorf("%d events, want 3 text deltas, usage and done", n)
	}
	got := lastChat(t, srv)
	if got.Path != "/v1/chat/completions" || got.Header.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("request to %s with Authorization %q", got.Path, got.Header.Get("Authorization"))
	}
	sameJSON(t, "body", string(got.Body), `{
		"model": "test-model",
		"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
		"max_tokens": 4096, "temperature": 0.5,
		"stream": true, "stream_options": {"include_usage": true}
	}`)
}

func TestCompatToolCalls(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		calls []llmtest.ToolCall
		want  []ToolCall
	}{
		{
			name:  "arguments in 7 chunks split inside multi-byte characters are joined byte for byte",
			calls: []llmtest.ToolCall{{ID: "call_a", Name: "read", Args: `{"path":"日本/é.go"}`, Chunks: 7}},
			want:  []ToolCall{{ID: "call_a", Name: "read", Input: json.RawMessage(`{"path":"日本/é.go"}`)}},
		},
		{
			name:  "arguments in 7 chunks split inside escapes keep whole characters",
			calls: []llmtest.ToolCall{{ID: "call_b", Name: "read", Args: `{"path":"\u65e5\u672c/\u00e9.go","n":"a\"b"}`, Chunks: 7}},
			want:  []ToolCall{{ID: "call_b", Name: "read", Input: json.RawMessage(`{"path":"日本/é.go","n":"a\"b"}`)}},
		},
		{
			name: "two calls in one turn keep their order",
			calls: []llmtest.ToolCall{
				{ID: "call_1", Name: "read", Args: `{"path":"a.go"}`, Chunks: 3},
				{ID: "call_2", Name: "grep", Args: `{"pattern":"func"}`, Chunks: 2},
			},
			want: []ToolCall{
				{ID: "call_1", Name: "read", Input: json.RawMessage(`{"path":"a.go"}`)},
				{ID: "call_2", Name: "grep", Input: json.RawMessage(`{"pattern":"func"}`)},
			},
		},
		{
			name:  "arguments that are not JSON come back with a parse error",
			calls: []llmtest.ToolCall{{ID: "call_c", Name: "read", Args: `{"path":`, Chunks: 2}},
			want:  []ToolCall{{ID: "call_c", Name: "read", Input: json.RawMessage(`{}`), ParseError: "the arguments are not valid JSON", RawInput: `{"path":`}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible}, llmtest.ToolTurn(tc.calls...))
			r := mustChat(t, clientFor(t, srv, OpenAICompatible, 0), userText("go"))
			assertToolCalls(t, r, tc.want)
		})
	}
}

// assertToolCalls checks the result's calls, the toolCall events, and the
// stop reason toolUse.
func assertToolCalls(t *testing.T, r chatRun, want []ToolCall) {
	t.Helper()
	if r.res.StopReason != StopToolUse {
		t.Errorf("stop %s, want toolUse", r.res.StopReason)
	}
	if len(r.res.ToolCalls) != len(want) {
		t.Fatalf("%d tool calls %+v, want %d", len(r.res.ToolCalls), r.res.ToolCalls, len(want))
	}
	var emitted []ToolCall
	for _, e := range r.events {
		if e.Type == EventToolCall {
			emitted = append(emitted, *e.ToolCall)
		}
	}
	if !reflect.DeepEqual(emitted, r.res.ToolCalls) {
		t.Errorf("toolCall events %+v, want the result's %+v", emitted, r.res.ToolCalls)
	}
	for i, got := range r.res.ToolCalls {
		w := want[i]
		if got.ID != w.ID || got.Name != w.Name || got.ParseError != w.ParseError || got.RawInput != w.RawInput {
			t.Errorf("call %d: %+v, want %+v", i, got, w)
		}
		sameJSON(t, fmt.Sprintf("call %d input", i), string(got.Input), string(w.Input))
	}
}

func TestCompatReportsUsage(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible},
		llmtest.Turn{Text: []string{"ok"}, Usage: &llmtest.Usage{InputTokens: 1234, OutputTokens: 56}})
	r := mustChat(t, clientFor(t, srv, OpenAICompatible, 0), userText("hi"))
	want := Usage{InputTokens: 1234, OutputTokens: 56}
	if r.res.Usage != want {
		t.Errorf("usage %+v, want %+v", r.res.Usage, want)
	}
	for _, e := range r.events {
		if e.Type == EventUsage && *e.Usage != want {
			t.Errorf("usage event %+v, want %+v", *e.Usage, want)
		}
	}
}

// stopCase is one stop reason a kind's API can express.
type stopCase struct {
	stop  string
	calls []llmtest.ToolCall
	want  StopReason
}

func testStopReasons(t *testing.T, kind llmtest.Kind, cases []stopCase) {
	for _, tc := range cases {
		t.Run(tc.stop, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: kind}, llmtest.Turn{Text: []string{"x"}, ToolCalls: tc.calls, Stop: tc.stop})
			r := mustChat(t, clientFor(t, srv, Kind(kind), 0), userText("hi"))
			if r.res.StopReason != tc.want {
				t.Errorf("stop %s, want %s", r.res.StopReason, tc.want)
			}
			last := r.events[len(r.events)-1]
			if last.Type != EventDone || last.StopReason != tc.want {
				t.Errorf("last event %+v, want done with %s", last, tc.want)
			}
		})
	}
}

func TestCompatStopReasons(t *testing.T) {
	t.Parallel()
	testStopReasons(t, llmtest.OpenAICompatible, []stopCase{
		{stop: llmtest.StopEndTurn, want: StopEndTurn},
		{stop: llmtest.StopMaxTokens, want: StopMaxTokens},
		{stop: llmtest.StopToolUse, calls: []llmtest.ToolCall{{Name: "read", Args: `{}`}}, want: StopToolUse},
		{stop: llmtest.StopContentFilter, want: StopContentFilter},
		{stop: llmtest.StopUnknown, want: StopUnknown},
	})
}

func TestCompatSendsTheConversation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		messages []Message
		want     string // the body's messages
	}{
		{
			name: "images become image_url data URLs beside the text",
			messages: []Message{{Role: RoleUser, Content: []ContentPart{
				{Type: PartText, Text: "what is this?"},
				{Type: PartImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
				{Type: PartImage, MediaType: "image/jpeg", Data: "/9j/4AA="},
			}}},
			want: `[{"role": "user", "content": [
				{"type": "text", "text": "what is this?"},
				{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
				{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AA="}}
			]}]`,
		},
		{
			name: "tool calls and their results, an error marked, follow each other",
			messages: []Message{
				{Role: RoleUser, Content: []ContentPart{{Type: PartText, Text: "read both"}}},
				{Role: RoleAssistant, Content: []ContentPart{
					{Type: PartText, Text: "reading"},
					{Type: PartToolUse, ID: "c1", Name: "read", Input: json.RawMessage(`{"path":"a.go"}`)},
					{Type: PartToolUse, ID: "c2", Name: "read", Input: json.RawMessage(`{"path":"b.go"}`)},
				}},
				{Role: RoleUser, Content: []ContentPart{
					{Type: PartToolResult, ToolUseID: "c1", ToolName: "read", Content: "package a"},
					{Type: PartToolResult, ToolUseID: "c2", ToolName: "read", Content: "no such file", IsError: true},
					{Type: PartText, Text: "go on"},
				}},
			},
			want: `[
				{"role": "user", "content": "read both"},
				{"role": "assistant", "content": "reading", "tool_calls": [
					{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.go\"}"}},
					{"id": "c2", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"b.go\"}"}}
				]},
				{"role": "tool", "tool_call_id": "c1", "content": "package a"},
				{"role": "tool", "tool_call_id": "c2", "content": "Error: no such file"},
				{"role": "user", "content": "go on"}
			]`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible}, llmtest.TextTurn("ok"))
			mustChat(t, clientFor(t, srv, OpenAICompatible, 0), &ChatRequest{Messages: tc.messages})
			sameJSON(t, "messages", bodyJSON(t, lastChat(t, srv).JSON["messages"]), tc.want)
		})
	}
}

func TestCompatSendsTools(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible}, llmtest.TextTurn("ok"))
	req := userText("hi")
	req.Tools = []ToolSpec{{Name: "read", Description: "Read a file", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
	mustChat(t, clientFor(t, srv, OpenAICompatible, 0), req)
	sameJSON(t, "tools", bodyJSON(t, lastChat(t, srv).JSON["tools"]), `[{"type": "function", "function": {
		"name": "read", "description": "Read a file",
		"parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]`)
}

// testFailures runs the failures every kind maps the same way.
func testFailures(t *testing.T, kind llmtest.Kind) {
	cases := []struct {
		name      string
		turn      llmtest.Turn
		timeoutMs int
		want      ErrorKind
		check     func(t *testing.T, pe *ProviderError)
	}{
		{name: "a 401 is auth", turn: llmtest.ErrorTurn(http.StatusUnauthorized, "bad key"), want: KindAuth},
		{
			name: "a 429 is rateLimited with its Retry-After",
			turn: llmtest.Turn{Error: &llmtest.HTTPError{Status: http.StatusTooManyRequests, Message: "slow down", RetryAfter: "7"}},
			want: KindRateLimited,
			check: func(t *testing.T, pe *ProviderError) {
				if pe.RetryAfterMs != 7000 || pe.Status != 429 || !strings.Contains(pe.Message, "slow down") {
					t.Errorf("error %+v, want status 429, retryAfterMs 7000 and the message", pe)
				}
			},
		},
		{name: "a 500 is server", turn: llmtest.ErrorTurn(http.StatusInternalServerError, "boom"), want: KindServer},
		{
			name: "an error inside the stream is the provider's error",
			turn: llmtest.Turn{Text: []string{"a", "b"}, StreamError: "the model crashed"},
			want: KindServer,
			check: func(t *testing.T, pe *ProviderError) {
				if !strings.Contains(pe.Message, "the model crashed") {
					t.Errorf("message %q, want the stream's", pe.Message)
				}
			},
		},
		{name: "a stream cut mid-way is network", turn: llmtest.Turn{Text: []string{"a", "b", "c", "d"}, CutAfter: 2}, want: KindNetwork},
		{name: "a malformed event is protocol", turn: llmtest.Turn{Text: []string{"a", "b"}, Malformed: true}, want: KindProtocol},
		{
			name: "an idle gap longer than timeoutMs is timeout",
			turn: llmtest.Turn{Text: []string{"a", "b"}, Gap: 1500 * time.Millisecond}, timeoutMs: 1000, want: KindTimeout,
		},
		{
			name: "headers later than timeoutMs are timeout",
			turn: llmtest.Turn{Text: []string{"a"}, HeaderDelay: 1500 * time.Millisecond}, timeoutMs: 1000, want: KindTimeout,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: kind}, tc.turn)
			r := runChat(t.Context(), clientFor(t, srv, Kind(kind), tc.timeoutMs), userText("hi"))
			if r.res != nil {
				t.Fatalf("result %+v, want an error", r.res)
			}
			pe := providerError(t, r.err, tc.want)
			if tc.check != nil {
				tc.check(t, pe)
			}
			for _, e := range r.events {
				if e.Type == EventDone {
					t.Errorf("a failed turn emitted done")
				}
			}
		})
	}
}

func TestCompatFailures(t *testing.T) {
	t.Parallel()
	testFailures(t, llmtest.OpenAICompatible)
}

// testCancel cancels the call at its first text delta: the call ends as
// cancelled and the server sees the connection close.
func testCancel(t *testing.T, kind llmtest.Kind) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: kind},
		llmtest.Turn{Text: []string{"a", "b", "c", "d"}, Delay: 200 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var texts int
	_, err := clientFor(t, srv, Kind(kind), 0).Chat(ctx, userText("hi"), func(e Event) {
		if e.Type == EventTextDelta {
			texts++
			cancel()
		}
	})
	providerError(t, err, KindCancelled)
	if texts != 1 {
		t.Errorf("%d text deltas, want 1 before the cancellation", texts)
	}
	wait, stop := context.WithTimeout(t.Context(), 10*time.Second)
	defer stop()
	if err := srv.WaitClosed(wait, 1); err != nil {
		t.Error(err)
	}
}

func TestCompatCancelClosesTheStream(t *testing.T) { testCancel(t, llmtest.OpenAICompatible) }

func TestCompatModels(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible, Models: []llmtest.Model{
		{ID: "m-len", ContextWindow: 1000, ContextField: "context_length"},
		{ID: "m-max", ContextWindow: 2000, ContextField: "max_context_length"},
		{ID: "m-win", ContextWindow: 3000, ContextField: "context_window"},
		{ID: "m-vllm", ContextWindow: 4000, ContextField: "max_model_len"},
		{ID: "m-or", ContextWindow: 5000, ContextField: "top_provider.context_length", Capabilities: []string{"thinking", "vision", "tools"}},
		{ID: "m-size", ContextWindow: 6000, ContextField: "max_token_size", Capabilities: []string{"tools"}},
		{ID: "a-none"},
	}})
	c := clientFor(t, srv, OpenAICompatible, 0)
	got, err := c.Models(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []ModelInfo{
		{ID: "a-none", Capabilities: []Capability{}},
		{ID: "m-len", ContextWindow: 1000, Capabilities: []Capability{}},
		{ID: "m-max", ContextWindow: 2000, Capabilities: []Capability{}},
		{ID: "m-or", ContextWindow: 5000, Capabilities: []Capability{CapTools, CapVision, CapThinking}},
		{ID: "m-size", ContextWindow: 6000, Capabilities: []Capability{CapTools}},
		{ID: "m-vllm", ContextWindow: 4000, Capabilities: []Capability{}},
		{ID: "m-win", ContextWindow: 3000, Capabilities: []Capability{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("models\n%+v, want\n%+v", got, want)
	}
	ids, err := c.ListModels(t.Context())
	if err != nil || !reflect.DeepEqual(ids, []string{"a-none", "m-len", "m-max", "m-or", "m-size", "m-vllm", "m-win"}) {
		t.Errorf("ListModels %v, %v", ids, err)
	}
	r := srv.Requests()[0]
	if r.Method != http.MethodGet || r.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("model request %s %s, Authorization %q", r.Method, r.Path, r.Header.Get("Authorization"))
	}
}

func TestCompatContextWindow(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts llmtest.Options
		want int
	}{
		{"the listed model's window", llmtest.Options{Models: []llmtest.Model{{ID: "test-model", ContextWindow: 131072, ContextField: "max_model_len"}}}, 131072},
		{"the estimate when the model is not listed", llmtest.Options{Models: []llmtest.Model{{ID: "other", ContextWindow: 8192}}}, 32768},
		{"the estimate when the endpoint cannot list", llmtest.Options{NoModels: true}, 32768},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.opts.Kind = llmtest.OpenAICompatible
			srv := llmtest.New(t, tc.opts)
			if got := clientFor(t, srv, OpenAICompatible, 0).ContextWindow(t.Context()); got != tc.want {
				t.Errorf("window %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCompatTest(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	cases := []struct {
		name  string
		opts  llmtest.Options
		turns []llmtest.Turn
		want  *bool
	}{
		{"the model is listed", llmtest.Options{Models: []llmtest.Model{{ID: "test-model"}, {ID: "b"}}}, nil, &yes},
		{"the model is not listed", llmtest.Options{Models: []llmtest.Model{{ID: "b"}}}, nil, &no},
		{"the endpoint cannot list: a one-token chat, availability null", llmtest.Options{NoModels: true}, []llmtest.Turn{llmtest.TextTurn("p")}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.opts.Kind = llmtest.OpenAICompatible
			srv := llmtest.New(t, tc.opts, tc.turns...)
			res, err := clientFor(t, srv, OpenAICompatible, 0).Test(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if (res.ModelAvailable == nil) != (tc.want == nil) || res.ModelAvailable != nil && *res.ModelAvailable != *tc.want {
				t.Errorf("modelAvailable %v, want %v", fmtBool(res.ModelAvailable), fmtBool(tc.want))
			}
			chats := srv.ChatRequests()
			if tc.want != nil && len(chats) != 0 {
				t.Errorf("%d chat requests, want none when the models are listed", len(chats))
			}
			if tc.want == nil && (len(chats) != 1 || chats[0].JSON["max_tokens"] != 1.0) {
				t.Errorf("chat requests %d, want one with max_tokens 1", len(chats))
			}
		})
	}
}

func fmtBool(b *bool) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprint(*b)
}

// The cases below feed decode streams llmtest does not send.

func TestCompatDecodeEdgeCases(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		stream   string
		wantStop StopReason
		wantErr  string
		check    func(t *testing.T, res *ChatResult)
	}{
		{
			name: "a body that ends after finish_reason and usage, without [DONE], is complete (llama.cpp)",
			stream: "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n",
			wantStop: StopEndTurn,
			check: func(t *testing.T, res *ChatResult) {
				if res.Text != "hi" || res.Usage != (Usage{3, 1}) {
					t.Errorf("result %+v", res)
				}
			},
		},
		{
			name:    "a body that ends before any finish_reason is cut",
			stream:  "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n",
			wantErr: errStreamEnded.Error(),
		},
		{
			name: "calls that share index 0 are told apart by their ids",
			stream: "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"x\",\"arguments\":\"{\\\"n\\\":1}\"}}]}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"b\",\"function\":{\"name\":\"y\",\"arguments\":\"{\\\"n\\\":\"}}]}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"2}\"}}]}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
			wantStop: StopToolUse,
			check: func(t *testing.T, res *ChatResult) {
				if len(res.ToolCalls) != 2 || res.ToolCalls[0].ID != "a" || string(res.ToolCalls[0].Input) != `{"n":1}` ||
					res.ToolCalls[1].ID != "b" || res.ToolCalls[1].Name != "y" || string(res.ToolCalls[1].Input) != `{"n":2}` {
					t.Errorf("calls %+v", res.ToolCalls)
				}
			},
		},
		{
			name:    "an error event names its kind by code",
			stream:  "data: {\"error\":{\"message\":\"quota\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}\n\n",
			wantErr: "rateLimited: quota",
		},
		{
			name:     "[DONE] without a finish_reason is unknown",
			stream:   "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
			wantStop: StopUnknown,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := newTurn(nil)
			stop, err := compatDialect{}.decode(strings.NewReader(tc.stream), tr)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || stop != tc.wantStop {
				t.Fatalf("stop %s, error %v; want %s", stop, err, tc.wantStop)
			}
			if tc.check != nil {
				tc.check(t, tr.finish(stop))
			}
		})
	}
}

func TestExactStringKeepsTheBytes(t *testing.T) {
	t.Parallel()
	cases := []struct{ raw, want string }{
		{`"plain"`, "plain"},
		{`"a\"b\\c\/d\n\t"`, "a\"b\\c/d\n\t"},
		{`"\u65e5\u00e9"`, "日é"},
		{`"\ud83d\ude00"`, "😀"},
		{"\"\xe6\x97\"", "\xe6\x97"}, // half a character stays half a character
		{`null`, ""},
	}
	for _, tc := range cases {
		var s exactString
		if err := json.Unmarshal([]byte(tc.raw), &s); err != nil || string(s) != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.raw, s, err, tc.want)
		}
	}
}
