package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/task-x/runtime/steps/llm/llmtest"
)

// The shared stream tests (testStreamContract, testCancelClosesTheStream)
// and the helpers are in anthropic_test.go.

func TestOpenAIStream(t *testing.T) {
	t.Parallel()
	testStreamContract(t, streamContract{kind: llmtest.OpenAI, model: "gpt-4.1", streamErrorKind: KindServer})
}

func TestOpenAICancelClosesTheStream(t *testing.T) {
	testCancelClosesTheStream(t, llmtest.OpenAI, "gpt-4.1")
}

func TestOpenAIStopReasons(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		turn llmtest.Turn
		want StopReason
	}{
		{"completed without function calls is endTurn", llmtest.Turn{Text: []string{"ok"}}, StopEndTurn},
		{"completed with function calls is toolUse", llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "ls"}}}, StopToolUse},
		{"incomplete for max_output_tokens is maxTokens", llmtest.Turn{Text: []string{"o"}, Stop: llmtest.StopMaxTokens}, StopMaxTokens},
		{"incomplete for content_filter is contentFilter", llmtest.Turn{Stop: llmtest.StopContentFilter}, StopContentFilter},
		{"incomplete for a reason the API never documented is unknown", llmtest.Turn{Text: []string{"ok"}, Stop: llmtest.StopUnknown}, StopUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c := fakeProvider(t, llmtest.OpenAI, "gpt-4.1", 0, tc.turn)
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

func TestOpenAIRequestBody(t *testing.T) {
	t.Parallel()
	eight, hundred, warm := 8, 100, 0.5
	withLimits := userSays("hi")
	withLimits.MaxTokens, withLimits.Temperature = &hundred, &warm
	tiny := userSays("hi")
	tiny.MaxTokens, tiny.Temperature = &eight, &warm
	cases := []struct {
		name, model string
		req         *ChatRequest
		want        string
	}{
		{
			name:  "a conversation keeps the order of its parts as input items, with max_output_tokens 4096 by default",
			model: "gpt-4.1",
			req:   conversation(),
			want: `{
				"model": "gpt-4.1", "instructions": "Be brief.", "max_output_tokens": 4096, "stream": true, "store": false,
				"input": [
					{"role": "user", "content": [
						{"type": "input_text", "text": "What do these show?"},
						{"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
						{"type": "input_text", "text": "And a.go?"}]},
					{"role": "assistant", "content": [{"type": "output_text", "text": "Reading it."}]},
					{"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{\"path\":\"a.go\"}"},
					{"type": "function_call", "call_id": "call_2", "name": "read_file", "arguments": "{\"path\":\"b.go\"}"},
					{"type": "function_call_output", "call_id": "call_1", "output": "package a"},
					{"type": "function_call_output", "call_id": "call_2", "output": "Error: no such file"},
					{"role": "user", "content": [{"type": "input_text", "text": "Go on."}]}
				],
				"tools": [{"type": "function", "name": "read_file", "description": "Read a file.", "strict": false,
					"parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]
			}`,
		},
		{
			name:  "maxTokens and temperature pass through",
			model: "gpt-4.1",
			req:   withLimits,
			want: `{"model": "gpt-4.1", "max_output_tokens": 100, "temperature": 0.5, "stream": true, "store": false,
				"input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}`,
		},
		{
			name:  "maxTokens under the API's minimum of 16 is sent as 16",
			model: "gpt-4.1",
			req:   tiny,
			want: `{"model": "gpt-4.1", "max_output_tokens": 16, "temperature": 0.5, "stream": true, "store": false,
				"input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}`,
		},
		{
			name:  "a reasoning model, which refuses a temperature, gets none",
			model: "gpt-5-mini",
			req:   withLimits,
			want: `{"model": "gpt-5-mini", "max_output_tokens": 100, "stream": true, "store": false,
				"input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.req.Validate(); err != nil {
				t.Fatalf("the test's request is invalid: %v", err)
			}
			srv, c := fakeProvider(t, llmtest.OpenAI, tc.model, 0, llmtest.TextTurn("ok"))
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

func TestOpenAIRequestHeaders(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAI, APIKey: "sk-test-openai"}, llmtest.TextTurn("ok"))
	c := fakeClient(t, srv, llmtest.OpenAI, "gpt-4.1", 0)
	if _, err := c.Chat(context.Background(), userSays("hi"), nil); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	r := srv.ChatRequests()[0]
	want := map[string]string{
		"Authorization": "Bearer sk-test-openai", "Accept": "text/event-stream", "Content-Type": "application/json",
	}
	for k, v := range want {
		if got := r.Header.Get(k); got != v {
			t.Errorf("header %s: %q, want %q", k, got, v)
		}
	}
	if r.Method != http.MethodPost || r.Path != "/v1/responses" {
		t.Errorf("%s %s, want POST /v1/responses", r.Method, r.Path)
	}
}

// TestOpenAIDecode feeds the decoder events the fake does not send.
func TestOpenAIDecode(t *testing.T) {
	t.Parallel()
	sse := func(events ...string) string {
		var b strings.Builder
		for _, e := range events {
			fmt.Fprintf(&b, "event: x\ndata: %s\n\n", e)
		}
		return b.String()
	}
	completed := `{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":7,"output_tokens":3}}}`
	cases := []struct {
		name       string
		stream     string
		wantEvents []Event // after finish, as Chat emits them
		wantErr    *ProviderError
		// wantEnded: the stream stops before its final event.
		wantEnded bool
	}{
		{
			name: "reasoning items and unknown events are ignored",
			stream: sse(`{"type":"response.created","response":{"status":"in_progress"}}`,
				`{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1"}}`,
				`{"type":"response.reasoning_summary_text.delta","output_index":0,"delta":"thinking"}`,
				`{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_1"}}`,
				`{"type":"response.something_new","output_index":1}`,
				`{"type":"response.output_text.delta","output_index":1,"delta":"Hi"}`,
				completed),
			wantEvents: []Event{textEvent("Hi"), usageEvent(7, 3), doneEvent(StopEndTurn)},
		},
		{
			name: "a function call that arrives whole in its done item stands alone",
			stream: sse(`{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"call_9","name":"ls","arguments":"{\"dir\":\"é\"}"}}`,
				completed),
			wantEvents: []Event{toolCallEvent("call_9", "ls", `{"dir":"é"}`), usageEvent(7, 3), doneEvent(StopToolUse)},
		},
		{
			name:       "incomplete without a reason is unknown",
			stream:     sse(`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":null}}`),
			wantEvents: []Event{doneEvent(StopUnknown)},
		},
		{
			name:      "a stream that ends before response.completed has ended early",
			stream:    sse(`{"type":"response.output_text.delta","output_index":0,"delta":"Hi"}`),
			wantEnded: true,
		},
		{
			name:    "an error event's code names its kind",
			stream:  sse(`{"type":"error","code":"rate_limit_exceeded","message":"Rate limit reached","param":null}`),
			wantErr: &ProviderError{Kind: KindRateLimited, Retryable: true, Message: "Rate limit reached"},
		},
		{
			name:    "an error event may hold an error object",
			stream:  sse(`{"type":"error","error":{"type":"invalid_request_error","code":"model_not_found","message":"no such model"}}`),
			wantErr: &ProviderError{Kind: KindNotFound, Message: "no such model"},
		},
		{
			name:    "response.failed is the server's failure unless its code says more",
			stream:  sse(`{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"try again"}}}`),
			wantErr: &ProviderError{Kind: KindServer, Retryable: true, Message: "try again"},
		},
		{
			name:    "response.failed with a known code has its kind",
			stream:  sse(`{"type":"response.failed","response":{"status":"failed","error":{"code":"insufficient_quota","message":"quota"}}}`),
			wantErr: &ProviderError{Kind: KindRateLimited, Retryable: true, Message: "quota"},
		},
		{
			name:    "response.failed without an error still fails",
			stream:  sse(`{"type":"response.failed","response":{"status":"failed","error":null}}`),
			wantErr: &ProviderError{Kind: KindServer, Retryable: true},
		},
		{
			name:    "an event that is not JSON is a protocol error",
			stream:  "event: response.created\ndata: {\"type\":\n\n",
			wantErr: &ProviderError{Kind: KindProtocol},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var events []Event
			tr := newTurn(func(e Event) { events = append(events, e) })
			stop, err := responsesDialect{}.decode(strings.NewReader(tc.stream), tr)
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

func TestOpenAIModels(t *testing.T) {
	t.Parallel()
	models := []llmtest.Model{{ID: "gpt-4.1"}, {ID: "o3"}, {ID: "text-embedding-3-small"}, {ID: "gpt-5-mini"}, {ID: "whisper-1"}}
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAI, Models: models, APIKey: "sk-test-openai"})
	c := fakeClient(t, srv, llmtest.OpenAI, "gpt-4.1", 0)
	got, err := c.Models(context.Background())
	if err != nil {
		t.Fatalf("Models: %v", err)
	}
	want := []ModelInfo{
		{ID: "gpt-4.1", ContextWindow: 1_000_000, Capabilities: []Capability{CapTools, CapVision}},
		{ID: "gpt-5-mini", ContextWindow: 272_000, Capabilities: []Capability{CapTools, CapVision, CapThinking}},
		{ID: "o3", ContextWindow: 128_000, Capabilities: []Capability{CapTools, CapVision, CapThinking}},
		{ID: "text-embedding-3-small", ContextWindow: 128_000, Capabilities: []Capability{CapEmbedding}},
		{ID: "whisper-1", ContextWindow: 128_000, Capabilities: []Capability{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("models %+v,\nwant %+v", got, want)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Path != "/v1/models" {
		t.Errorf("requests %+v, want one GET /v1/models", reqs)
	}
}

func TestOpenAIContextWindowIsTheEstimate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		model string
		want  int
	}{{"gpt-4.1-mini", 1_000_000}, {"gpt-5", 272_000}, {"gpt-4o", 128_000}}
	for _, tc := range cases {
		t.Run(tc.model, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAI, Models: []llmtest.Model{{ID: tc.model}}})
			c := fakeClient(t, srv, llmtest.OpenAI, tc.model, 0)
			if got := c.ContextWindow(context.Background()); got != tc.want {
				t.Errorf("ContextWindow: %d, want %d", got, tc.want)
			}
			if reqs := srv.Requests(); len(reqs) != 0 {
				t.Errorf("%d requests: the API reports no window, so none should be asked", len(reqs))
			}
		})
	}
}

func TestOpenAITest(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAI, Models: []llmtest.Model{{ID: "gpt-4o"}, {ID: "o3"}}, APIKey: "sk-test-openai"})
	cases := []struct {
		name, model, key string
		wantAvailable    bool
		wantCaps         []Capability
		wantErr          ErrorKind
	}{
		{"a listed model is available with its family's capabilities", "o3", "sk-test-openai", true, []Capability{CapTools, CapVision, CapThinking}, ""},
		{"a model not listed is not available", "gpt-3.5-turbo", "sk-test-openai", false, []Capability{}, ""},
		{"a wrong key fails with auth", "o3", "sk-test-wrong", false, nil, KindAuth},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := NewClient(ProviderConfig{Kind: OpenAI, Model: tc.model, BaseURL: srv.BaseURL(), APIKey: tc.key})
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
			wantModels := []string{"gpt-4o", "o3"}
			if !reflect.DeepEqual(res.Models, wantModels) || res.ModelAvailable == nil || *res.ModelAvailable != tc.wantAvailable ||
				!reflect.DeepEqual(res.ModelCapabilities, tc.wantCaps) || !res.Capabilities.Images {
				t.Errorf("Test: %+v (available %v), want models %v, available %v, capabilities %v",
					res, res.ModelAvailable, wantModels, tc.wantAvailable, tc.wantCaps)
			}
		})
	}
}
