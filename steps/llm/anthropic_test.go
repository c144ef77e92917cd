package llm

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/task-x/runtime/steps/llm/llmtest"
)

// anthropicSpec is the Messages API for the shared tests of dialect_test.go.
var anthropicSpec = dialectSpec{kind: llmtest.Anthropic, model: "claude-sonnet-4-5", streamErrorKind: KindOverloaded}

func TestAnthropicStream(t *testing.T) {
	t.Parallel()
	testStream(t, anthropicSpec)
}

func TestAnthropicFailures(t *testing.T) {
	t.Parallel()
	testFailures(t, anthropicSpec)
}

func TestAnthropicCancelClosesTheStream(t *testing.T) {
	t.Parallel()
	testCancel(t, anthropicSpec)
}

func TestAnthropicStopReasons(t *testing.T) {
	t.Parallel()
	testStopReasons(t, anthropicSpec, []stopCase{
		{"end_turn is endTurn", llmtest.Turn{Text: []string{"ok"}}, StopEndTurn},
		{"max_tokens is maxTokens", llmtest.Turn{Text: []string{"o"}, Stop: llmtest.StopMaxTokens}, StopMaxTokens},
		{"tool_use is toolUse", llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "ls"}}}, StopToolUse},
		{"stop_sequence is stopSequence", llmtest.Turn{Text: []string{"ok"}, Stop: llmtest.StopSequence}, StopSequence},
		{"refusal is contentFilter", llmtest.Turn{Stop: llmtest.StopContentFilter}, StopContentFilter},
		{"a reason the API never documented is unknown", llmtest.Turn{Text: []string{"ok"}, Stop: llmtest.StopUnknown}, StopUnknown},
	})
}

func TestAnthropicRequestBody(t *testing.T) {
	t.Parallel()
	eight, warm, hot := 8, 0.5, 1.7
	withLimits := userText("hi")
	withLimits.MaxTokens, withLimits.Temperature = &eight, &warm
	tooHot := userText("hi")
	tooHot.Temperature = &hot
	emptyText := &ChatRequest{Messages: []Message{
		{Role: RoleUser, Content: []ContentPart{{Type: PartText, Text: "hi"}}},
		{Role: RoleAssistant, Content: []ContentPart{{Type: PartText}}},
		{Role: RoleUser, Content: []ContentPart{{Type: PartText}, {Type: PartText, Text: "again"}}},
	}}
	testRequestBody(t, anthropicSpec, []bodyCase{
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
	})
}

func TestAnthropicRequestHeaders(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic, APIKey: testKey}, llmtest.TextTurn("ok"))
	mustChat(t, clientFor(t, srv, llmtest.Anthropic, anthropicSpec.model, 0), userText("hi"))
	checkChatRequest(t, chatRequest(t, srv), "/v1/messages", map[string]string{
		"X-Api-Key": testKey, "Anthropic-Version": "2023-06-01",
		"Accept": "text/event-stream", "Content-Type": "application/json",
		"Authorization": "", // the key goes in x-api-key only
	})
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
	testDecode(t, llmtest.Anthropic, []decodeCase{
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
	})
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
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic, Models: models, APIKey: testKey})
	c := clientFor(t, srv, llmtest.Anthropic, "claude-opus-4-6", 0)

	got, err := c.Models(t.Context())
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
			c := clientFor(t, srv, llmtest.Anthropic, tc.model, 0)
			asked, err := anthropicDialect{}.contextWindow(t.Context(), &c.cfg, tc.model)
			if err != nil || asked != tc.wantAsked {
				t.Errorf("contextWindow: %d, %v; want %d, nil", asked, err, tc.wantAsked)
			}
			if got := c.ContextWindow(t.Context()); got != tc.want {
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
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic, Models: models, APIKey: testKey})
	cases := []struct {
		name, model, key string
		wantAvailable    bool
		wantCaps         []Capability
		wantErr          ErrorKind
	}{
		{"a listed model is available with its family's capabilities", "claude-sonnet-4-5", testKey, true, []Capability{CapTools, CapVision, CapThinking}, ""},
		{"a model not listed is not available", "claude-2", testKey, false, []Capability{}, ""},
		{"a wrong key fails with auth", "claude-sonnet-4-5", "sk-test-wrong", false, nil, KindAuth},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := NewClient(ProviderConfig{Kind: Anthropic, Model: tc.model, BaseURL: srv.BaseURL(), APIKey: tc.key})
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Test(t.Context())
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
