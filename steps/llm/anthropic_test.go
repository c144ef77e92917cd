package llm

import (
	"bytes"
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

// The tests of this file and openai_test.go drive each dialect through the
// public Client against llmtest's fake servers. What every streaming kind
// must do the same way (events, tool calls, usage, errors, timeouts,
// cancellation) is written once, in testStreamContract and
// testCancelClosesTheStream below; the request bodies, the stop reasons and
// the model endpoints differ, and have a test per kind.

// fakeProvider starts a fake of kind that answers with turns, and a client
// of it for model. timeoutMs 0 keeps the default.
func fakeProvider(t *testing.T, kind llmtest.Kind, model string, timeoutMs int, turns ...llmtest.Turn) (*llmtest.Server, *Client) {
	t.Helper()
	srv := llmtest.New(t, llmtest.Options{Kind: kind}, turns...)
	return srv, fakeClient(t, srv, kind, model, timeoutMs)
}

func fakeClient(t *testing.T, srv *llmtest.Server, kind llmtest.Kind, model string, timeoutMs int) *Client {
	t.Helper()
	cfg := ProviderConfig{Kind: Kind(kind), Model: model, BaseURL: srv.BaseURL(), APIKey: "sk-test-" + string(kind)}
	if timeoutMs > 0 {
		cfg.TimeoutMs = &timeoutMs
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

// userSays is the smallest valid request.
func userSays(text string) *ChatRequest {
	return &ChatRequest{Messages: []Message{{Role: RoleUser, Content: []ContentPart{{Type: PartText, Text: text}}}}}
}

// chatEvents runs one Chat and returns its result, every event it emitted
// and its error.
func chatEvents(ctx context.Context, c *Client, req *ChatRequest) (*ChatResult, []Event, error) {
	var events []Event
	res, err := c.Chat(ctx, req, func(e Event) { events = append(events, e) })
	return res, events, err
}

func textEvent(s string) Event { return Event{Type: EventTextDelta, Text: s} }

func toolCallEvent(id, name, input string) Event {
	return Event{Type: EventToolCall, ToolCall: &ToolCall{ID: id, Name: name, Input: json.RawMessage(input)}}
}

func usageEvent(in, out int) Event {
	return Event{Type: EventUsage, Usage: &Usage{InputTokens: in, OutputTokens: out}}
}

func doneEvent(stop StopReason) Event { return Event{Type: EventDone, StopReason: stop} }

// checkProviderError fails unless err is a ProviderError with want's kind,
// status, retryable and retryAfterMs (and message, when want has one).
func checkProviderError(t *testing.T, err error, want ProviderError) {
	t.Helper()
	var pe *ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want a ProviderError of kind %s", err, err, want.Kind)
	}
	got := *pe
	if want.Message == "" {
		got.Message = ""
	}
	if got != want {
		t.Errorf("error %+v, want %+v", got, want)
	}
}

// streamContract is what differs between kinds in the shared stream tests.
type streamContract struct {
	kind  llmtest.Kind
	model string
	// streamErrorKind is the kind of the fake's in-stream error event.
	streamErrorKind ErrorKind
}

// testStreamContract runs the cases every streaming dialect must pass.
func testStreamContract(t *testing.T, sc streamContract) {
	cases := []struct {
		name      string
		turn      llmtest.Turn
		timeoutMs int
		// wantEvents, when the call succeeds, are all its events in order.
		wantEvents []Event
		wantErr    *ProviderError
	}{
		{
			name:       "text arrives as deltas in order, then usage and done",
			turn:       llmtest.Turn{Text: []string{"Hel", "lo, ", "wörld"}},
			wantEvents: []Event{textEvent("Hel"), textEvent("lo, "), textEvent("wörld"), usageEvent(10, 5), doneEvent(StopEndTurn)},
		},
		{
			name: "tool arguments split in many chunks, inside characters and escapes, arrive whole",
			turn: llmtest.Turn{Text: []string{"Reading."}, ToolCalls: []llmtest.ToolCall{
				{ID: "call_1", Name: "read_file", Args: `{"path":"日本/é.go"}`, Chunks: 7},
				{ID: "call_2", Name: "grep", Args: `{"q":"\u00e9\"x\\y","n":3}`, Chunks: 9},
			}},
			wantEvents: []Event{
				textEvent("Reading."),
				toolCallEvent("call_1", "read_file", `{"path":"日本/é.go"}`),
				toolCallEvent("call_2", "grep", `{"q":"\u00e9\"x\\y","n":3}`),
				usageEvent(10, 5), doneEvent(StopToolUse),
			},
		},
		{
			name: "a tool call without arguments gets an empty object",
			turn: llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "list_files"}}},
			wantEvents: []Event{
				toolCallEvent("call_1", "list_files", `{}`), usageEvent(10, 5), doneEvent(StopToolUse),
			},
		},
		{
			name: "arguments that are not JSON arrive with a parse error for the model",
			turn: llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "read_file", Args: `{"path":`, Chunks: 2}}},
			wantEvents: []Event{
				{Type: EventToolCall, ToolCall: &ToolCall{ID: "call_1", Name: "read_file", Input: json.RawMessage(`{}`),
					ParseError: "the arguments are not valid JSON", RawInput: `{"path":`}},
				usageEvent(10, 5), doneEvent(StopToolUse),
			},
		},
		{
			name:       "usage carries the provider's counts",
			turn:       llmtest.Turn{Text: []string{"ok"}, Usage: &llmtest.Usage{InputTokens: 1234, OutputTokens: 56}},
			wantEvents: []Event{textEvent("ok"), usageEvent(1234, 56), doneEvent(StopEndTurn)},
		},
		{
			name:    "a 401 is auth and not retryable",
			turn:    llmtest.Turn{Error: &llmtest.HTTPError{Status: 401, Message: "invalid key"}},
			wantErr: &ProviderError{Kind: KindAuth, Status: 401, Message: "invalid key"},
		},
		{
			name:    "a 429 is rateLimited with the Retry-After in milliseconds",
			turn:    llmtest.Turn{Error: &llmtest.HTTPError{Status: 429, Message: "slow down", RetryAfter: "7"}},
			wantErr: &ProviderError{Kind: KindRateLimited, Status: 429, Retryable: true, RetryAfterMs: 7000, Message: "slow down"},
		},
		{
			name:    "a 500 is a retryable server error",
			turn:    llmtest.Turn{Error: &llmtest.HTTPError{Status: 500, Message: "boom"}},
			wantErr: &ProviderError{Kind: KindServer, Status: 500, Retryable: true, Message: "boom"},
		},
		{
			name:    "a 400 is invalidRequest",
			turn:    llmtest.Turn{Error: &llmtest.HTTPError{Status: 400, Message: "messages: required"}},
			wantErr: &ProviderError{Kind: KindInvalidRequest, Status: 400, Message: "messages: required"},
		},
		{
			name:    "an error event inside the stream ends the call with its kind",
			turn:    llmtest.Turn{Text: []string{"Hel", "lo"}, StreamError: "the model is busy"},
			wantErr: &ProviderError{Kind: sc.streamErrorKind, Retryable: sc.streamErrorKind.Retryable(), Message: "the model is busy"},
		},
		{
			name:    "a stream cut mid-way is a network error",
			turn:    llmtest.Turn{Text: []string{"Hel", "lo", "!"}, CutAfter: 5},
			wantErr: &ProviderError{Kind: KindNetwork, Retryable: true},
		},
		{
			name:    "an event that is not JSON is a protocol error",
			turn:    llmtest.Turn{Text: []string{"Hel", "lo"}, Malformed: true},
			wantErr: &ProviderError{Kind: KindProtocol},
		},
		{
			name:      "an idle gap longer than timeoutMs is a timeout",
			turn:      llmtest.Turn{Text: []string{"Hel", "lo"}, Gap: 1500 * time.Millisecond},
			timeoutMs: 1000,
			wantErr:   &ProviderError{Kind: KindTimeout, Retryable: true, Message: errIdleTimeout.Error()},
		},
		{
			name:      "headers later than timeoutMs are a timeout",
			turn:      llmtest.Turn{Text: []string{"Hel", "lo"}, HeaderDelay: 1500 * time.Millisecond},
			timeoutMs: 1000,
			wantErr:   &ProviderError{Kind: KindTimeout, Retryable: true, Message: errHeaderTimeout.Error()},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c := fakeProvider(t, sc.kind, sc.model, tc.timeoutMs, tc.turn)
			res, events, err := chatEvents(context.Background(), c, userSays("hi"))
			if tc.wantErr != nil {
				checkProviderError(t, err, *tc.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if !reflect.DeepEqual(events, tc.wantEvents) {
				t.Errorf("events:\n%s\nwant:\n%s", eventsString(events), eventsString(tc.wantEvents))
			}
			checkResultCombinesEvents(t, res, events)
		})
	}
}

// checkResultCombinesEvents fails unless the result holds what the events
// said: the joined text, the calls, the usage and the stop reason.
func checkResultCombinesEvents(t *testing.T, res *ChatResult, events []Event) {
	t.Helper()
	want := &ChatResult{ToolCalls: []ToolCall{}}
	var sb strings.Builder
	for _, e := range events {
		switch e.Type {
		case EventTextDelta:
			sb.WriteString(e.Text)
		case EventToolCall:
			want.ToolCalls = append(want.ToolCalls, *e.ToolCall)
		case EventUsage:
			want.Usage = *e.Usage
		case EventDone:
			want.StopReason = e.StopReason
		}
	}
	want.Text = sb.String()
	if !reflect.DeepEqual(res, want) {
		t.Errorf("result %+v, want %+v", res, want)
	}
}

func eventsString(events []Event) string {
	var b strings.Builder
	for _, e := range events {
		j, _ := json.Marshal(e)
		fmt.Fprintf(&b, "  %s\n", j)
	}
	return b.String()
}

// testCancelClosesTheStream cancels a call from its first text delta: the
// call ends as cancelled at once, and the server sees its connection close.
func testCancelClosesTheStream(t *testing.T, kind llmtest.Kind, model string) {
	t.Parallel()
	chunks := make([]string, 20)
	for i := range chunks {
		chunks[i] = fmt.Sprintf("part %d ", i)
	}
	// The pace keeps the stream open for seconds after its first delta.
	srv, c := fakeProvider(t, kind, model, 0, llmtest.Turn{Text: chunks, Delay: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var deltas []string
	_, err := c.Chat(ctx, userSays("hi"), func(e Event) {
		if e.Type == EventTextDelta {
			deltas = append(deltas, e.Text)
			cancel()
		}
	})
	checkProviderError(t, err, ProviderError{Kind: KindCancelled})
	if len(deltas) != 1 {
		t.Errorf("%d text deltas before the call ended, want 1: %q", len(deltas), deltas)
	}
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := srv.WaitClosed(wait, 1); err != nil {
		t.Error(err)
	}
}

// checkJSON fails unless raw holds the same JSON value as want.
func checkJSON(t *testing.T, what string, raw []byte, want string) {
	t.Helper()
	var got, exp any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("%s: %v in %s", what, err, raw)
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatalf("%s: the test's JSON: %v", what, err)
	}
	if !reflect.DeepEqual(got, exp) {
		var pretty bytes.Buffer
		_ = json.Indent(&pretty, raw, "", "  ")
		t.Errorf("%s:\n%s\nwant:\n%s", what, pretty.String(), want)
	}
}

// A conversation with every kind of part, for the request body tests.
var (
	readSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	tinyPNG    = "iVBORw0KGgo="
)

func conversation() *ChatRequest {
	return &ChatRequest{
		System: "Be brief.",
		Messages: []Message{
			{Role: RoleUser, Content: []ContentPart{
				{Type: PartText, Text: "What do these show?"},
				{Type: PartImage, MediaType: "image/png", Data: tinyPNG},
				{Type: PartText, Text: "And a.go?"},
			}},
			{Role: RoleAssistant, Content: []ContentPart{
				{Type: PartText, Text: "Reading it."},
				{Type: PartToolUse, ID: "call_1", Name: "read_file", Input: json.RawMessage(`{"path":"a.go"}`)},
				{Type: PartToolUse, ID: "call_2", Name: "read_file", Input: json.RawMessage(`{"path":"b.go"}`)},
			}},
			{Role: RoleUser, Content: []ContentPart{
				{Type: PartToolResult, ToolUseID: "call_1", ToolName: "read_file", Content: "package a"},
				{Type: PartToolResult, ToolUseID: "call_2", ToolName: "read_file", Content: "no such file", IsError: true},
				{Type: PartText, Text: "Go on."},
			}},
		},
		Tools: []ToolSpec{{Name: "read_file", Description: "Read a file.", InputSchema: readSchema}},
	}
}

func TestAnthropicStream(t *testing.T) {
	t.Parallel()
	testStreamContract(t, streamContract{kind: llmtest.Anthropic, model: "claude-sonnet-4-5", streamErrorKind: KindOverloaded})
}

func TestAnthropicCancelClosesTheStream(t *testing.T) {
	testCancelClosesTheStream(t, llmtest.Anthropic, "claude-sonnet-4-5")
}

func TestAnthropicStopReasons(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		turn llmtest.Turn
		want StopReason
	}{
		{"end_turn is endTurn", llmtest.Turn{Text: []string{"ok"}}, StopEndTurn},
		{"max_tokens is maxTokens", llmtest.Turn{Text: []string{"o"}, Stop: llmtest.StopMaxTokens}, StopMaxTokens},
		{"tool_use is toolUse", llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "ls"}}}, StopToolUse},
		{"stop_sequence is stopSequence", llmtest.Turn{Text: []string{"ok"}, Stop: llmtest.StopSequence}, StopSequence},
		{"refusal is contentFilter", llmtest.Turn{Stop: llmtest.StopContentFilter}, StopContentFilter},
		{"a reason the API never documented is unknown", llmtest.Turn{Text: []string{"ok"}, Stop: llmtest.StopUnknown}, StopUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c := fakeProvider(t, llmtest.Anthropic, "claude-sonnet-4-5", 0, tc.turn)
			res, events, err := chatEvents(context.Background(), c, userSays("hi"))
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if res.StopReason != tc.want || events[len(events)-1] != doneEvent(tc.want) {
				t.Errorf("stop %q, last event %+v, want %q", res.StopReason, events[len(events)-1], tc.want)
			}
		})
	}
}

func TestAnthropicRequestBody(t *testing.T) {
	t.Parallel()
	eight, warm, hot := 8, 0.5, 1.7
	withLimits := userSays("hi")
	withLimits.MaxTokens, withLimits.Temperature = &eight, &warm
	tooHot := userSays("hi")
	tooHot.Temperature = &hot
	emptyText := &ChatRequest{Messages: []Message{
		{Role: RoleUser, Content: []ContentPart{{Type: PartText, Text: "hi"}}},
		{Role: RoleAssistant, Content: []ContentPart{{Type: PartText}}},
		{Role: RoleUser, Content: []ContentPart{{Type: PartText}, {Type: PartText, Text: "again"}}},
	}}
	cases := []struct {
		name string
		req  *ChatRequest
		want string
	}{
		{
			name: "a conversation keeps its parts in order as Messages API blocks, with max_tokens 4096 by default",
			req:  conversation(),
			want: `{
				"model": "claude-sonnet-4-5", "max_tokens": 4096, "system": "Be brief.", "stream": true,
				"messages": [
					{"role": "user", "content": [
						{"type": "text", "text": "What do these show?"},
						{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
						{"type": "text", "text": "And a.go?"}]},
					{"role": "assistant", "content": [
						{"type": "text", "text": "Reading it."},
						{"type": "tool_use", "id": "call_1", "name": "read_file", "input": {"path": "a.go"}},
						{"type": "tool_use", "id": "call_2", "name": "read_file", "input": {"path": "b.go"}}]},
					{"role": "user", "content": [
						{"type": "tool_result", "tool_use_id": "call_1", "content": "package a", "is_error": false},
						{"type": "tool_result", "tool_use_id": "call_2", "content": "no such file", "is_error": true},
						{"type": "text", "text": "Go on."}]}
				],
				"tools": [{"name": "read_file", "description": "Read a file.",
					"input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]
			}`,
		},
		{
			name: "maxTokens and temperature pass through",
			req:  withLimits,
			want: `{"model": "claude-sonnet-4-5", "max_tokens": 8, "temperature": 0.5, "stream": true,
				"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}`,
		},
		{
			name: "a temperature above the API's maximum of 1 is sent as 1",
			req:  tooHot,
			want: `{"model": "claude-sonnet-4-5", "max_tokens": 4096, "temperature": 1, "stream": true,
				"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}`,
		},
		{
			name: "empty text, which the API refuses, is left out",
			req:  emptyText,
			want: `{"model": "claude-sonnet-4-5", "max_tokens": 4096, "stream": true, "messages": [
				{"role": "user", "content": [{"type": "text", "text": "hi"}]},
				{"role": "user", "content": [{"type": "text", "text": "again"}]}]}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.req.Validate(); err != nil {
				t.Fatalf("the test's request is invalid: %v", err)
			}
			srv, c := fakeProvider(t, llmtest.Anthropic, "claude-sonnet-4-5", 0, llmtest.TextTurn("ok"))
			if _, err := c.Chat(context.Background(), tc.req, nil); err != nil {
				t.Fatalf("Chat: %v", err)
			}
			reqs := srv.ChatRequests()
			if len(reqs) != 1 {
				t.Fatalf("%d chat requests, want 1", len(reqs))
			}
			checkJSON(t, "body", reqs[0].Body, tc.want)
		})
	}
}

func TestAnthropicRequestHeaders(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic, APIKey: "sk-test-anthropic"}, llmtest.TextTurn("ok"))
	c := fakeClient(t, srv, llmtest.Anthropic, "claude-sonnet-4-5", 0)
	if _, err := c.Chat(context.Background(), userSays("hi"), nil); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	r := srv.ChatRequests()[0]
	want := map[string]string{
		"X-Api-Key": "sk-test-anthropic", "Anthropic-Version": "2023-06-01",
		"Accept": "text/event-stream", "Content-Type": "application/json",
	}
	for k, v := range want {
		if got := r.Header.Get(k); got != v {
			t.Errorf("header %s: %q, want %q", k, got, v)
		}
	}
	if r.Method != http.MethodPost || r.Path != "/v1/messages" {
		t.Errorf("%s %s, want POST /v1/messages", r.Method, r.Path)
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		t.Errorf("Authorization %q: the key goes in x-api-key only", auth)
	}
}

// TestAnthropicDecode feeds the decoder events the fake does not send.
func TestAnthropicDecode(t *testing.T) {
	t.Parallel()
	sse := func(events ...string) string {
		var b strings.Builder
		for _, e := range events {
			var typ struct{ Type string }
			_ = json.Unmarshal([]byte(e), &typ)
			fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ.Type, e)
		}
		return b.String()
	}
	start := `{"type":"message_start","message":{"usage":{"input_tokens":7,"output_tokens":1}}}`
	end := []string{`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`, `{"type":"message_stop"}`}
	cases := []struct {
		name       string
		stream     string
		wantEvents []Event // after finish, as Chat emits them
		wantErr    *ProviderError
		// wantEnded: the stream stops before its final event.
		wantEnded bool
	}{
		{
			name: "thinking blocks, pings and unknown events are ignored",
			stream: sse(append([]string{start,
				`{"type":"ping"}`,
				`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}`,
				`{"type":"content_block_stop","index":0}`,
				`{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"x"}}`,
				`{"type":"content_block_stop","index":1}`,
				`{"type":"something_new","index":2}`,
				`{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`,
				`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Hi"}}`,
				`{"type":"content_block_stop","index":2}`}, end...)...),
			wantEvents: []Event{textEvent("Hi"), usageEvent(7, 3), doneEvent(StopEndTurn)},
		},
		{
			name: "a tool block whose start carries the whole input stands alone",
			stream: sse(append([]string{start,
				`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"ls","input":{"dir":"."}}}`,
				`{"type":"content_block_stop","index":0}`}, end...)...),
			wantEvents: []Event{toolCallEvent("toolu_1", "ls", `{"dir":"."}`), usageEvent(7, 3), doneEvent(StopEndTurn)},
		},
		{
			name:      "a stream that ends before message_stop has ended early",
			stream:    sse(start, `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hi"}}`),
			wantEnded: true,
		},
		{
			name:    "an error event with a type the table knows has its kind",
			stream:  sse(start, `{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}`),
			wantErr: &ProviderError{Kind: KindRateLimited, Retryable: true, Message: "slow"},
		},
		{
			name:    "an error event of another type is the server's",
			stream:  sse(start, `{"type":"error","error":{"type":"api_error","message":"Internal"}}`),
			wantErr: &ProviderError{Kind: KindServer, Retryable: true, Message: "Internal"},
		},
		{
			name:    "an event that is not JSON is a protocol error",
			stream:  "event: message_start\ndata: {\"type\":\n\n",
			wantErr: &ProviderError{Kind: KindProtocol},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var events []Event
			tr := newTurn(func(e Event) { events = append(events, e) })
			stop, err := anthropicDialect{}.decode(strings.NewReader(tc.stream), tr)
			switch {
			case tc.wantEnded:
				if !errors.Is(err, errStreamEnded) {
					t.Fatalf("error %v, want errStreamEnded", err)
				}
				return
			case tc.wantErr != nil:
				checkProviderError(t, err, *tc.wantErr)
				return
			case err != nil:
				t.Fatalf("decode: %v", err)
			}
			tr.finish(stop) // as Chat does: usage and done
			if !reflect.DeepEqual(events, tc.wantEvents) {
				t.Errorf("events:\n%swant:\n%s", eventsString(events), eventsString(tc.wantEvents))
			}
		})
	}
}

func TestAnthropicModels(t *testing.T) {
	t.Parallel()
	// 1001 models take two pages of 1000; the second holds the only one
	// that sorts first.
	models := []llmtest.Model{{ID: "claude-opus-4-6", ContextWindow: 900_000}, {ID: "claude-3-5-haiku-20241022"}}
	for i := range 998 {
		models = append(models, llmtest.Model{ID: fmt.Sprintf("claude-x-%04d", i)})
	}
	models = append(models, llmtest.Model{ID: "claude-3-7-sonnet-latest", ContextWindow: 150_000})
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic, Models: models, APIKey: "sk-test-anthropic"})
	c := fakeClient(t, srv, llmtest.Anthropic, "claude-opus-4-6", 0)

	got, err := c.Models(context.Background())
	if err != nil {
		t.Fatalf("Models: %v", err)
	}
	if len(got) != MaxModels {
		t.Errorf("%d models, want the first %d", len(got), MaxModels)
	}
	want := []ModelInfo{
		{ID: "claude-3-5-haiku-20241022", ContextWindow: 200_000, Capabilities: []Capability{CapTools, CapVision}},
		{ID: "claude-3-7-sonnet-latest", ContextWindow: 150_000, Capabilities: []Capability{CapTools, CapVision, CapThinking}},
		{ID: "claude-opus-4-6", ContextWindow: 900_000, Capabilities: []Capability{CapTools, CapVision, CapThinking}},
		{ID: "claude-x-0000", ContextWindow: 200_000, Capabilities: []Capability{CapTools, CapVision}},
	}
	if !reflect.DeepEqual(got[:len(want)], want) {
		t.Errorf("models %+v,\nwant %+v", got[:len(want)], want)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2 pages", len(reqs))
	}
	for i, after := range []string{"", "claude-x-0997"} {
		q := reqs[i].Query
		if reqs[i].Path != "/v1/models" || q.Get("limit") != "1000" || q.Get("after_id") != after {
			t.Errorf("request %d: %s?%s, want limit=1000 and after_id=%q", i+1, reqs[i].Path, q.Encode(), after)
		}
	}
}

func TestAnthropicContextWindow(t *testing.T) {
	t.Parallel()
	models := []llmtest.Model{{ID: "claude-sonnet-4-5", ContextWindow: 180_000}, {ID: "claude-haiku-4-5"}, {ID: "odd/id?x", ContextWindow: 123_000}}
	cases := []struct {
		name, model string
		want        int
		// wantAsked is 0 when the endpoint does not say and the client
		// gives the estimate.
		wantAsked int
	}{
		{"the endpoint's max_input_tokens", "claude-sonnet-4-5", 180_000, 180_000},
		{"a model without max_input_tokens gets the estimate", "claude-haiku-4-5", 200_000, 0},
		{"an unknown model (404) gets the estimate", "claude-opus-4-6", 1_000_000, 0},
		{"an id that is not a path segment is escaped", "odd/id?x", 123_000, 123_000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic, Models: models})
			c := fakeClient(t, srv, llmtest.Anthropic, tc.model, 0)
			asked, err := anthropicDialect{}.contextWindow(context.Background(), &c.cfg, tc.model)
			if err != nil || asked != tc.wantAsked {
				t.Errorf("contextWindow: %d, %v; want %d, nil", asked, err, tc.wantAsked)
			}
			if got := c.ContextWindow(context.Background()); got != tc.want {
				t.Errorf("ContextWindow: %d, want %d", got, tc.want)
			}
			for _, r := range srv.Requests() {
				if r.Path != "/v1/models/"+tc.model {
					t.Errorf("asked %s, want /v1/models/%s", r.Path, tc.model)
				}
			}
		})
	}
}

func TestAnthropicTest(t *testing.T) {
	t.Parallel()
	models := []llmtest.Model{{ID: "claude-sonnet-4-5"}, {ID: "claude-3-5-haiku-latest"}}
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic, Models: models, APIKey: "sk-test-anthropic"})
	cases := []struct {
		name, model, key string
		wantAvailable    bool
		wantCaps         []Capability
		wantErr          ErrorKind
	}{
		{"a listed model is available with its family's capabilities", "claude-sonnet-4-5", "sk-test-anthropic", true, []Capability{CapTools, CapVision, CapThinking}, ""},
		{"a model not listed is not available", "claude-2", "sk-test-anthropic", false, []Capability{}, ""},
		{"a wrong key fails with auth", "claude-sonnet-4-5", "sk-test-wrong", false, nil, KindAuth},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := NewClient(ProviderConfig{Kind: Anthropic, Model: tc.model, BaseURL: srv.BaseURL(), APIKey: tc.key})
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Test(context.Background())
			if tc.wantErr != "" {
				checkProviderError(t, err, ProviderError{Kind: tc.wantErr, Status: 401})
				return
			}
			if err != nil {
				t.Fatalf("Test: %v", err)
			}
			wantModels := []string{"claude-3-5-haiku-latest", "claude-sonnet-4-5"}
			if !reflect.DeepEqual(res.Models, wantModels) || res.ModelAvailable == nil || *res.ModelAvailable != tc.wantAvailable ||
				!reflect.DeepEqual(res.ModelCapabilities, tc.wantCaps) || !res.Capabilities.Tools {
				t.Errorf("Test: %+v (available %v), want models %v, available %v, capabilities %v",
					res, res.ModelAvailable, wantModels, tc.wantAvailable, tc.wantCaps)
			}
		})
	}
}
