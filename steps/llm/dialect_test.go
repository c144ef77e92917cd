package llm

import (
	"bytes"
	"cmp"
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

// The tests of anthropic_test.go, openai_test.go, compat_test.go and
// ollama_test.go drive each dialect through the public Client against
// llmtest's fake servers. What every kind must do the same way (stream
// events, tool calls, usage, failures, timeouts, cancellation) is written
// once here, with the helpers the four files share, and each kind runs it
// from its own file; what differs (request bodies and headers, stop
// reasons, the decoder's quirks, the model endpoints) has a test per kind.

// testKey is the API key of every test client.
const testKey = "sk-test-7f3a"

// dialectSpec is what the shared tests need to know of one kind.
type dialectSpec struct {
	kind llmtest.Kind
	// model is what the kind's clients ask for where a test does not say.
	model string
	// streamErrorKind is the kind of the fake's in-stream error event.
	streamErrorKind ErrorKind
	// objectArgs: the kind sends tool arguments as a JSON object, never as
	// text, so they cannot arrive broken (Ollama).
	objectArgs bool
}

// clientFor is a client of srv, which speaks kind, for model, with the test
// key and timeoutMs when it is not 0.
func clientFor(t *testing.T, srv *llmtest.Server, kind llmtest.Kind, model string, timeoutMs int) *Client {
	t.Helper()
	cfg := ProviderConfig{Kind: Kind(kind), Model: model, BaseURL: srv.BaseURL(), APIKey: testKey}
	if timeoutMs != 0 {
		cfg.TimeoutMs = &timeoutMs
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

// fakeProvider starts a fake of d's kind that answers with turns, and a
// client of it for d's model.
func fakeProvider(t *testing.T, d dialectSpec, timeoutMs int, turns ...llmtest.Turn) (*llmtest.Server, *Client) {
	t.Helper()
	srv := llmtest.New(t, llmtest.Options{Kind: d.kind}, turns...)
	return srv, clientFor(t, srv, d.kind, d.model, timeoutMs)
}

// userText is the smallest valid request: one user message of text.
func userText(text string) *ChatRequest {
	return &ChatRequest{Messages: []Message{{Role: RoleUser, Content: []ContentPart{{Type: PartText, Text: text}}}}}
}

// runChat runs one Chat and returns its result, every event it emitted and
// its error.
func runChat(ctx context.Context, c *Client, req *ChatRequest) (*ChatResult, []Event, error) {
	var events []Event
	res, err := c.Chat(ctx, req, func(e Event) { events = append(events, e) })
	return res, events, err
}

// mustChat runs a Chat that must succeed.
func mustChat(t *testing.T, c *Client, req *ChatRequest) (*ChatResult, []Event) {
	t.Helper()
	res, events, err := runChat(t.Context(), c, req)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	return res, events
}

// chatRequest is the one chat request srv received.
func chatRequest(t *testing.T, srv *llmtest.Server) llmtest.Request {
	t.Helper()
	reqs := srv.ChatRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d chat requests, want 1", len(reqs))
	}
	return reqs[0]
}

func textEvent(s string) Event { return Event{Type: EventTextDelta, Text: s} }

func toolCallEvent(id, name, input string) Event {
	return Event{Type: EventToolCall, ToolCall: &ToolCall{ID: id, Name: name, Input: json.RawMessage(input)}}
}

func usageEvent(in, out int) Event {
	return Event{Type: EventUsage, Usage: &Usage{InputTokens: in, OutputTokens: out}}
}

func doneEvent(stop StopReason) Event { return Event{Type: EventDone, StopReason: stop} }

// checkEvents fails unless got are the events of want, in order.
func checkEvents(t *testing.T, got, want []Event) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events:\n%swant:\n%s", eventsString(got), eventsString(want))
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

// checkChatRequest fails unless r is a POST to path with want's headers,
// where "" stands for a header that must be absent.
func checkChatRequest(t *testing.T, r llmtest.Request, path string, want map[string]string) {
	t.Helper()
	if r.Method != http.MethodPost || r.Path != path {
		t.Errorf("%s %s, want POST %s", r.Method, r.Path, path)
	}
	for k, v := range want {
		if got := r.Header.Get(k); got != v {
			t.Errorf("header %s: %q, want %q", k, got, v)
		}
	}
}

// fmtBool renders an optional flag as JSON does.
func fmtBool(b *bool) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprint(*b)
}

// conversation has every kind of part, for the request body tests.
func conversation() *ChatRequest {
	return &ChatRequest{
		System: "Be brief.",
		Messages: []Message{
			{Role: RoleUser, Content: []ContentPart{
				{Type: PartText, Text: "What do these show?"},
				{Type: PartImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
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
		Tools: []ToolSpec{{Name: "read_file", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}},
	}
}

// bodyCase is one request and the body the kind sends for it.
type bodyCase struct {
	name string
	// model is the client's; "" is the spec's.
	model string
	req   *ChatRequest
	want  string
}

// testRequestBody sends each case's request and compares the body the fake
// received with the case's, as JSON values.
func testRequestBody(t *testing.T, d dialectSpec, cases []bodyCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.req.Validate(); err != nil {
				t.Fatalf("the test's request is invalid: %v", err)
			}
			model := cmp.Or(tc.model, d.model)
			srv := llmtest.New(t, llmtest.Options{Kind: d.kind}, llmtest.TextTurn("ok"))
			mustChat(t, clientFor(t, srv, d.kind, model, 0), tc.req)
			checkJSON(t, "body", chatRequest(t, srv).Body, tc.want)
		})
	}
}

// testStream runs the successful turns every kind streams the same way:
// the events in order, and a result that combines them.
func testStream(t *testing.T, d dialectSpec) {
	cases := []struct {
		name string
		turn llmtest.Turn
		// brokenArgs: the turn sends arguments that are not JSON, which a
		// kind of objectArgs cannot.
		brokenArgs bool
		want       []Event
	}{
		{
			name: "text arrives as deltas in order, then usage and done",
			turn: llmtest.Turn{Text: []string{"Hel", "lo, ", "wörld"}},
			want: []Event{textEvent("Hel"), textEvent("lo, "), textEvent("wörld"), usageEvent(10, 5), doneEvent(StopEndTurn)},
		},
		{
			name: "tool arguments split in many chunks, inside characters and escapes, arrive whole",
			turn: llmtest.Turn{Text: []string{"Reading."}, ToolCalls: []llmtest.ToolCall{
				{ID: "call_1", Name: "read_file", Args: `{"path":"日本/é.go"}`, Chunks: 7},
				{ID: "call_2", Name: "grep", Args: `{"q":"\u00e9\"x\\y","n":3}`, Chunks: 9},
			}},
			want: []Event{
				textEvent("Reading."),
				toolCallEvent("call_1", "read_file", `{"path":"日本/é.go"}`),
				toolCallEvent("call_2", "grep", `{"q":"\u00e9\"x\\y","n":3}`),
				usageEvent(10, 5), doneEvent(StopToolUse),
			},
		},
		{
			name: "arguments split inside \\u escapes arrive byte for byte",
			turn: llmtest.ToolTurn(llmtest.ToolCall{ID: "call_1", Name: "read", Args: `{"path":"\u65e5\u672c/\u00e9.go","n":"a\"b"}`, Chunks: 7}),
			want: []Event{toolCallEvent("call_1", "read", `{"path":"\u65e5\u672c/\u00e9.go","n":"a\"b"}`), usageEvent(10, 5), doneEvent(StopToolUse)},
		},
		{
			name: "a tool call without arguments gets an empty object",
			turn: llmtest.ToolTurn(llmtest.ToolCall{ID: "call_1", Name: "list_files"}),
			want: []Event{toolCallEvent("call_1", "list_files", `{}`), usageEvent(10, 5), doneEvent(StopToolUse)},
		},
		{
			name:       "arguments that are not JSON arrive with a parse error for the model",
			turn:       llmtest.ToolTurn(llmtest.ToolCall{ID: "call_1", Name: "read_file", Args: `{"path":`, Chunks: 2}),
			brokenArgs: true,
			want: []Event{
				{Type: EventToolCall, ToolCall: &ToolCall{ID: "call_1", Name: "read_file", Input: json.RawMessage(`{}`),
					ParseError: "the arguments are not valid JSON", RawInput: `{"path":`}},
				usageEvent(10, 5), doneEvent(StopToolUse),
			},
		},
		{
			name: "usage carries the provider's counts",
			turn: llmtest.Turn{Text: []string{"ok"}, Usage: &llmtest.Usage{InputTokens: 1234, OutputTokens: 56}},
			want: []Event{textEvent("ok"), usageEvent(1234, 56), doneEvent(StopEndTurn)},
		},
	}
	for _, tc := range cases {
		if tc.brokenArgs && d.objectArgs {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c := fakeProvider(t, d, 0, tc.turn)
			res, events := mustChat(t, c, userText("hi"))
			checkEvents(t, events, tc.want)
			checkResultCombinesEvents(t, res, events)
		})
	}
}

// testFailures runs the failures every kind maps the same way: the call
// returns the ProviderError and no result, and emits no done.
func testFailures(t *testing.T, d dialectSpec) {
	cases := []struct {
		name      string
		turn      llmtest.Turn
		timeoutMs int
		want      ProviderError
		// text is how the error reads, where its message is known.
		text string
	}{
		{
			name: "a 401 is auth and not retryable",
			turn: llmtest.ErrorTurn(401, "invalid key"),
			want: ProviderError{Kind: KindAuth, Status: 401, Message: "invalid key"},
			text: "auth (HTTP 401): invalid key",
		},
		{
			name: "a 429 is rateLimited with the Retry-After in milliseconds",
			turn: llmtest.Turn{Error: &llmtest.HTTPError{Status: 429, Message: "slow down", RetryAfter: "7"}},
			want: ProviderError{Kind: KindRateLimited, Status: 429, Retryable: true, RetryAfterMs: 7000, Message: "slow down"},
			text: "rateLimited (HTTP 429): slow down",
		},
		{
			name: "a 500 is a retryable server error",
			turn: llmtest.ErrorTurn(500, "boom"),
			want: ProviderError{Kind: KindServer, Status: 500, Retryable: true, Message: "boom"},
			text: "server (HTTP 500): boom",
		},
		{
			name: "a 400 is invalidRequest",
			turn: llmtest.ErrorTurn(400, "messages: required"),
			want: ProviderError{Kind: KindInvalidRequest, Status: 400, Message: "messages: required"},
			text: "invalidRequest (HTTP 400): messages: required",
		},
		{
			name: "an error event inside the stream ends the call with its kind",
			turn: llmtest.Turn{Text: []string{"Hel", "lo"}, StreamError: "the model is busy"},
			want: ProviderError{Kind: d.streamErrorKind, Retryable: d.streamErrorKind.Retryable(), Message: "the model is busy"},
			text: string(d.streamErrorKind) + ": the model is busy",
		},
		{
			// Five events are past the first text delta of every kind, and
			// short of the end of the stream.
			name: "a stream cut mid-way is a network error",
			turn: llmtest.Turn{Text: []string{"a", "b", "c", "d", "e", "f"}, CutAfter: 5},
			want: ProviderError{Kind: KindNetwork, Retryable: true},
		},
		{
			name: "an event that is not JSON is a protocol error",
			turn: llmtest.Turn{Text: []string{"Hel", "lo"}, Malformed: true},
			want: ProviderError{Kind: KindProtocol},
		},
		{
			name:      "an idle gap longer than timeoutMs is a timeout",
			turn:      llmtest.Turn{Text: []string{"Hel", "lo"}, Gap: 1500 * time.Millisecond},
			timeoutMs: 1000,
			want:      ProviderError{Kind: KindTimeout, Retryable: true, Message: errIdleTimeout.Error()},
			text:      "timeout: " + errIdleTimeout.Error(),
		},
		{
			name:      "headers later than timeoutMs are a timeout",
			turn:      llmtest.Turn{Text: []string{"Hel", "lo"}, HeaderDelay: 1500 * time.Millisecond},
			timeoutMs: 1000,
			want:      ProviderError{Kind: KindTimeout, Retryable: true, Message: errHeaderTimeout.Error()},
			text:      "timeout: " + errHeaderTimeout.Error(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c := fakeProvider(t, d, tc.timeoutMs, tc.turn)
			res, events, err := runChat(t.Context(), c, userText("hi"))
			if res != nil {
				t.Errorf("result %+v, want none", res)
			}
			checkProviderError(t, err, tc.want)
			if tc.text != "" && err.Error() != tc.text {
				t.Errorf("the error reads %q, want %q", err.Error(), tc.text)
			}
			for _, e := range events {
				if e.Type == EventDone {
					t.Errorf("a failed turn emitted done")
				}
			}
		})
	}
}

// testCancel cancels a call from its first text delta: the call ends as
// cancelled at once, and the server sees its connection close.
func testCancel(t *testing.T, d dialectSpec) {
	chunks := make([]string, 20)
	for i := range chunks {
		chunks[i] = fmt.Sprintf("part %d ", i)
	}
	// The pace keeps the stream open for seconds after its first delta.
	srv, c := fakeProvider(t, d, 0, llmtest.Turn{Text: chunks, Delay: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var deltas []string
	_, err := c.Chat(ctx, userText("hi"), func(e Event) {
		if e.Type == EventTextDelta {
			deltas = append(deltas, e.Text)
			cancel()
		}
	})
	checkProviderError(t, err, ProviderError{Kind: KindCancelled})
	if len(deltas) != 1 {
		t.Errorf("%d text deltas before the call ended, want 1: %q", len(deltas), deltas)
	}
	wait, stop := context.WithTimeout(t.Context(), 10*time.Second)
	defer stop()
	if err := srv.WaitClosed(wait, 1); err != nil {
		t.Error(err)
	}
}

// stopCase is one stop reason a kind's API can express.
type stopCase struct {
	name string
	turn llmtest.Turn
	want StopReason
}

// testStopReasons checks each case's stop reason in the result and in the
// last event, done.
func testStopReasons(t *testing.T, d dialectSpec, cases []stopCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c := fakeProvider(t, d, 0, tc.turn)
			res, events := mustChat(t, c, userText("hi"))
			if last := events[len(events)-1]; res.StopReason != tc.want || last != doneEvent(tc.want) {
				t.Errorf("stop %q, last event %+v, want %q", res.StopReason, last, tc.want)
			}
		})
	}
}

// decodeCase is a stream the fake does not send, fed to a decoder.
type decodeCase struct {
	name   string
	stream string
	// wantEvents are every event, after finish, as Chat emits them.
	wantEvents []Event
	wantErr    *ProviderError
	// wantEnded: the stream stops before its final event.
	wantEnded bool
}

// testDecode feeds each case's stream to kind's decoder.
func testDecode(t *testing.T, kind llmtest.Kind, cases []decodeCase) {
	d := dialects[Kind(kind)]
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var events []Event
			tr := newTurn(func(e Event) { events = append(events, e) })
			stop, err := d.decode(strings.NewReader(tc.stream), tr)
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
			res := tr.finish(stop) // as Chat does: usage and done
			checkEvents(t, events, tc.wantEvents)
			checkResultCombinesEvents(t, res, events)
		})
	}
}
