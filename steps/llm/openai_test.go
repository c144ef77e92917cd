package llm

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/task-x/runtime/steps/llm/llmtest"
)

// openaiSpec is the Responses API for the shared tests of dialect_test.go.
var openaiSpec = dialectSpec{kind: llmtest.OpenAI, model: "gpt-4.1", streamErrorKind: KindServer}

func TestOpenAIStream(t *testing.T) {
	t.Parallel()
	testStream(t, openaiSpec)
}

func TestOpenAIFailures(t *testing.T) {
	t.Parallel()
	testFailures(t, openaiSpec)
}

func TestOpenAICancelClosesTheStream(t *testing.T) {
	t.Parallel()
	testCancel(t, openaiSpec)
}

func TestOpenAIStopReasons(t *testing.T) {
	t.Parallel()
	testStopReasons(t, openaiSpec, []stopCase{
		{"completed without function calls is endTurn", llmtest.Turn{Text: []string{"ok"}}, StopEndTurn},
		{"completed with function calls is toolUse", llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "ls"}}}, StopToolUse},
		{"incomplete for max_output_tokens is maxTokens", llmtest.Turn{Text: []string{"o"}, Stop: llmtest.StopMaxTokens}, StopMaxTokens},
		{"incomplete for content_filter is contentFilter", llmtest.Turn{Stop: llmtest.StopContentFilter}, StopContentFilter},
		{"incomplete for a reason the API never documented is unknown", llmtest.Turn{Text: []string{"ok"}, Stop: llmtest.StopUnknown}, StopUnknown},
	})
}

func TestOpenAIRequestBody(t *testing.T) {
	t.Parallel()
	eight, hundred, warm := 8, 100, 0.5
	withLimits := userText("hi")
	withLimits.MaxTokens, withLimits.Temperature = &hundred, &warm
	tiny := userText("hi")
	tiny.MaxTokens, tiny.Temperature = &eight, &warm
	testRequestBody(t, openaiSpec, []bodyCase{
		{
			name: "a conversation keeps the order of its parts as input items, with max_output_tokens 4096 by default",
			req:  conversation(),
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
			name: "maxTokens and temperature pass through",
			req:  withLimits,
			want: `{"model": "gpt-4.1", "max_output_tokens": 100, "temperature": 0.5, "stream": true, "store": false,
				"input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}`,
		},
		{
			name: "maxTokens under the API's minimum of 16 is sent as 16",
			req:  tiny,
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
	})
}

func TestOpenAIRequestHeaders(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAI, APIKey: testKey}, llmtest.TextTurn("ok"))
	mustChat(t, clientFor(t, srv, llmtest.OpenAI, openaiSpec.model, 0), userText("hi"))
	checkChatRequest(t, chatRequest(t, srv), "/v1/responses", map[string]string{
		"Authorization": "Bearer " + testKey, "Accept": "text/event-stream", "Content-Type": "application/json",
	})
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
	testDecode(t, llmtest.OpenAI, []decodeCase{
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
	})
}

func TestOpenAIModels(t *testing.T) {
	t.Parallel()
	models := []llmtest.Model{{ID: "gpt-4.1"}, {ID: "o3"}, {ID: "text-embedding-3-small"}, {ID: "gpt-5-mini"}, {ID: "whisper-1"}}
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAI, Models: models, APIKey: testKey})
	c := clientFor(t, srv, llmtest.OpenAI, "gpt-4.1", 0)
	got, err := c.Models(t.Context())
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
		t.Run(fmt.Sprintf("%s gets %d", tc.model, tc.want), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAI, Models: []llmtest.Model{{ID: tc.model}}})
			c := clientFor(t, srv, llmtest.OpenAI, tc.model, 0)
			if got := c.ContextWindow(t.Context()); got != tc.want {
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
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAI, Models: []llmtest.Model{{ID: "gpt-4o"}, {ID: "o3"}}, APIKey: testKey})
	cases := []struct {
		name, model, key string
		wantAvailable    bool
		wantCaps         []Capability
		wantErr          ErrorKind
	}{
		{"a listed model is available with its family's capabilities", "o3", testKey, true, []Capability{CapTools, CapVision, CapThinking}, ""},
		{"a model not listed is not available", "gpt-3.5-turbo", testKey, false, []Capability{}, ""},
		{"a wrong key fails with auth", "o3", "sk-test-wrong", false, nil, KindAuth},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := NewClient(ProviderConfig{Kind: OpenAI, Model: tc.model, BaseURL: srv.BaseURL(), APIKey: tc.key})
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
			wantModels := []string{"gpt-4o", "o3"}
			if !reflect.DeepEqual(res.Models, wantModels) || res.ModelAvailable == nil || *res.ModelAvailable != tc.wantAvailable ||
				!reflect.DeepEqual(res.ModelCapabilities, tc.wantCaps) || !res.Capabilities.Images {
				t.Errorf("Test: %+v (available %v), want models %v, available %v, capabilities %v",
					res, res.ModelAvailable, wantModels, tc.wantAvailable, tc.wantCaps)
			}
		})
	}
}
