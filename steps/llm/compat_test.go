package llm

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/task-x/runtime/steps/llm/llmtest"
)

// compatSpec is the Chat Completions API for the shared tests of
// dialect_test.go.
var compatSpec = dialectSpec{kind: llmtest.OpenAICompatible, model: "test-model", streamErrorKind: KindServer}

func TestCompatStream(t *testing.T) {
	t.Parallel()
	testStream(t, compatSpec)
}

func TestCompatFailures(t *testing.T) {
	t.Parallel()
	testFailures(t, compatSpec)
}

func TestCompatCancelClosesTheStream(t *testing.T) {
	t.Parallel()
	testCancel(t, compatSpec)
}

func TestCompatStopReasons(t *testing.T) {
	t.Parallel()
	testStopReasons(t, compatSpec, []stopCase{
		{"stop is endTurn", llmtest.Turn{Text: []string{"x"}, Stop: llmtest.StopEndTurn}, StopEndTurn},
		{"length is maxTokens", llmtest.Turn{Text: []string{"x"}, Stop: llmtest.StopMaxTokens}, StopMaxTokens},
		{"tool_calls is toolUse", llmtest.Turn{Text: []string{"x"}, ToolCalls: []llmtest.ToolCall{{Name: "read", Args: `{}`}}, Stop: llmtest.StopToolUse}, StopToolUse},
		{"content_filter is contentFilter", llmtest.Turn{Text: []string{"x"}, Stop: llmtest.StopContentFilter}, StopContentFilter},
		{"a reason the API never documented is unknown", llmtest.Turn{Text: []string{"x"}, Stop: llmtest.StopUnknown}, StopUnknown},
	})
}

func TestCompatRequestBody(t *testing.T) {
	t.Parallel()
	temp := 0.5
	brief := userText("hi")
	brief.System, brief.Temperature = "be brief", &temp
	testRequestBody(t, compatSpec, []bodyCase{
		{
			name: "the system prompt leads the messages, temperature passes through, and the stream asks for usage",
			req:  brief,
			want: `{
				"model": "test-model",
				"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
				"max_tokens": 4096, "temperature": 0.5,
				"stream": true, "stream_options": {"include_usage": true}
			}`,
		},
		{
			name: "images become image_url data URLs beside the text",
			req: &ChatRequest{Messages: []Message{{Role: RoleUser, Content: []ContentPart{
				{Type: PartText, Text: "what is this?"},
				{Type: PartImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
				{Type: PartImage, MediaType: "image/jpeg", Data: "/9j/4AA="},
			}}}},
			want: `{"model": "test-model", "max_tokens": 4096, "stream": true, "stream_options": {"include_usage": true},
				"messages": [{"role": "user", "content": [
					{"type": "text", "text": "what is this?"},
					{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
					{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AA="}}
				]}]}`,
		},
		{
			name: "a conversation keeps its order: tool calls and their results, an error marked, follow each other",
			req:  conversation(),
			want: `{"model": "test-model", "max_tokens": 4096, "stream": true, "stream_options": {"include_usage": true},
				"messages": [
					{"role": "system", "content": "Be brief."},
					{"role": "user", "content": [
						{"type": "text", "text": "What do these show?"},
						{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
						{"type": "text", "text": "And a.go?"}]},
					{"role": "assistant", "content": "Reading it.", "tool_calls": [
						{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.go\"}"}},
						{"id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"b.go\"}"}}
					]},
					{"role": "tool", "tool_call_id": "call_1", "content": "package a"},
					{"role": "tool", "tool_call_id": "call_2", "content": "Error: no such file"},
					{"role": "user", "content": "Go on."}
				],
				"tools": [{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
					"parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]}`,
		},
	})
}

func TestCompatRequestHeaders(t *testing.T) {
	t.Parallel()
	srv, c := fakeProvider(t, compatSpec, 0, llmtest.TextTurn("ok"))
	mustChat(t, c, userText("hi"))
	checkChatRequest(t, chatRequest(t, srv), "/v1/chat/completions", map[string]string{"Authorization": "Bearer " + testKey})
}

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
	c := clientFor(t, srv, llmtest.OpenAICompatible, compatSpec.model, 0)
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
			if got := clientFor(t, srv, llmtest.OpenAICompatible, compatSpec.model, 0).ContextWindow(t.Context()); got != tc.want {
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
			res, err := clientFor(t, srv, llmtest.OpenAICompatible, compatSpec.model, 0).Test(t.Context())
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

// TestCompatDecodeEdgeCases feeds the decoder streams the fake does not send.
func TestCompatDecodeEdgeCases(t *testing.T) {
	t.Parallel()
	testDecode(t, llmtest.OpenAICompatible, []decodeCase{
		{
			name: "a body that ends after finish_reason and usage, without [DONE], is complete (llama.cpp)",
			stream: "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n",
			wantEvents: []Event{textEvent("hi"), usageEvent(3, 1), doneEvent(StopEndTurn)},
		},
		{
			name:      "a body that ends before any finish_reason is cut",
			stream:    "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n",
			wantEnded: true,
		},
		{
			name: "calls that share index 0 are told apart by their ids",
			stream: "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"x\",\"arguments\":\"{\\\"n\\\":1}\"}}]}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"b\",\"function\":{\"name\":\"y\",\"arguments\":\"{\\\"n\\\":\"}}]}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"2}\"}}]}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
			wantEvents: []Event{toolCallEvent("a", "x", `{"n":1}`), toolCallEvent("b", "y", `{"n":2}`), doneEvent(StopToolUse)},
		},
		{
			name:    "an error event names its kind by code",
			stream:  "data: {\"error\":{\"message\":\"quota\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}\n\n",
			wantErr: &ProviderError{Kind: KindRateLimited, Retryable: true, Message: "quota"},
		},
		{
			name:       "[DONE] without a finish_reason is unknown",
			stream:     "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
			wantEvents: []Event{textEvent("hi"), doneEvent(StopUnknown)},
		},
	})
}
