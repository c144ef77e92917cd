package llmtest_test

import (
	"bytes"
	"net/http"
	"slices"
	"testing"

	"github.com/task-x/runtime/steps/llm/llmtest"
)

func TestCompatStreamsChatCompletionChunks(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible}, llmtest.Turn{
		Text:      []string{"Hi"},
		ToolCalls: []llmtest.ToolCall{{Name: "read", Args: `{"a":1}`, Chunks: 2}, {Name: "list", Args: `{}`}},
	})
	evs := streamOf(t, srv, llmtest.OpenAICompatible)
	// role, text, call 1 (name + 2 pieces), call 2 (name + 1 piece), finish, [DONE]
	if len(evs) != 9 {
		t.Fatalf("got %d events, want 9: %q", len(evs), evs)
	}
	for i, ev := range evs {
		if ev.name != "" {
			t.Errorf("event %d has the name %q; Chat Completions sends data lines only", i, ev.name)
		}
		if i < len(evs)-1 && bytes.Contains(ev.data, []byte(`"usage"`)) {
			t.Errorf("event %d carries usage though the request did not ask for it: %s", i, ev.data)
		}
	}
	first := object(t, evs[0].data)
	if first["object"] != "chat.completion.chunk" || at(first, "choices", 0, "delta", "role") != "assistant" || first["model"] != "test-model" {
		t.Errorf("first chunk = %s", evs[0].data)
	}
	named := object(t, evs[2].data)
	if at(named, "choices", 0, "delta", "tool_calls", 0, "index") != 0.0 ||
		at(named, "choices", 0, "delta", "tool_calls", 0, "id") != "call_llmtest_1_1" ||
		at(named, "choices", 0, "delta", "tool_calls", 0, "type") != "function" ||
		at(named, "choices", 0, "delta", "tool_calls", 0, "function", "name") != "read" ||
		at(named, "choices", 0, "delta", "tool_calls", 0, "function", "arguments") != "" {
		t.Errorf("tool call head = %s", evs[2].data)
	}
	if idx := at(object(t, evs[5].data), "choices", 0, "delta", "tool_calls", 0, "index"); idx != 1.0 {
		t.Errorf("second call index = %v, want 1", idx)
	}
	if reason := at(object(t, evs[7].data), "choices", 0, "finish_reason"); reason != "tool_calls" {
		t.Errorf("finish_reason = %v, want tool_calls", reason)
	}
	if string(evs[8].data) != "[DONE]" {
		t.Errorf("last event = %s, want [DONE]", evs[8].data)
	}
}

func TestCompatSendsTheUsageChunkWhenAsked(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible},
		llmtest.Turn{Text: []string{"x"}, Usage: &llmtest.Usage{InputTokens: 7, OutputTokens: 2}})
	evs := streamWith(t, srv, llmtest.OpenAICompatible, map[string]any{"stream_options": map[string]any{"include_usage": true}})
	usage := object(t, evs[len(evs)-2].data)
	if choices, _ := usage["choices"].([]any); choices == nil || len(choices) != 0 ||
		at(usage, "usage", "prompt_tokens") != 7.0 || at(usage, "usage", "completion_tokens") != 2.0 || at(usage, "usage", "total_tokens") != 9.0 {
		t.Errorf("usage chunk = %s, want choices [] and usage 7+2=9", evs[len(evs)-2].data)
	}
	for _, ev := range evs[:len(evs)-2] {
		if d := object(t, ev.data); d["usage"] != nil || !bytes.Contains(ev.data, []byte(`"usage":null`)) {
			t.Errorf("chunk before the usage chunk = %s, want \"usage\": null", ev.data)
		}
	}
}

func TestCompatEncodesEveryFinishReason(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"": "stop", llmtest.StopEndTurn: "stop", llmtest.StopSequence: "stop", llmtest.StopMaxTokens: "length",
		llmtest.StopToolUse: "tool_calls", llmtest.StopContentFilter: "content_filter", llmtest.StopUnknown: "weird_reason",
	}
	for stop, want := range cases {
		t.Run("stop "+stop+" is "+want, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible}, llmtest.Turn{Text: []string{"x"}, Stop: stop})
			evs := streamOf(t, srv, llmtest.OpenAICompatible)
			if got := at(object(t, evs[len(evs)-2].data), "choices", 0, "finish_reason"); got != want {
				t.Errorf("finish_reason = %v, want %s", got, want)
			}
		})
	}
}

func TestCompatStreamErrorIsAnErrorChunkWithoutDone(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible},
		llmtest.Turn{Text: []string{"a", "b"}, StreamError: "model crashed"})
	evs := streamOf(t, srv, llmtest.OpenAICompatible)
	if len(evs) != 3 {
		t.Fatalf("got %d events %q, want role, first text, error", len(evs), evs)
	}
	if msg := at(object(t, evs[2].data), "error", "message"); msg != "model crashed" {
		t.Errorf("error chunk = %s", evs[2].data)
	}
}

func TestCompatModelsReportContextAndCapabilities(t *testing.T) {
	t.Parallel()
	cases := []struct {
		field string
		path  []any
	}{
		{"", []any{"context_length"}},
		{"context_length", []any{"context_length"}},
		{"max_context_length", []any{"max_context_length"}},
		{"context_window", []any{"context_window"}},
		{"max_model_len", []any{"max_model_len"}},
		{"top_provider.context_length", []any{"top_provider", "context_length"}},
		{"max_token_size", []any{"max_token_size"}},
	}
	for _, tc := range cases {
		t.Run("context field "+tc.field, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible, Models: []llmtest.Model{
				{ID: "m", ContextWindow: 131072, ContextField: tc.field},
			}})
			status, body := fetch(t, srv, llmtest.OpenAICompatible, http.MethodGet, "/v1/models", nil)
			entry := at(object(t, body), "data", 0)
			if status != 200 || at(entry, tc.path...) != 131072.0 {
				t.Errorf("GET /v1/models = %d %s, want 131072 at %v", status, body, tc.path)
			}
		})
	}

	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible, Models: []llmtest.Model{
		{ID: "plain"},
		{ID: "rich", Capabilities: []string{"tools", "vision", "thinking"}},
		{ID: "text-only", Capabilities: []string{}},
	}})
	_, body := fetch(t, srv, llmtest.OpenAICompatible, http.MethodGet, "/v1/models", nil)
	list := object(t, body)
	if at(list, "data", 0, "supported_parameters") != nil || at(list, "data", 0, "architecture") != nil || at(list, "data", 0, "context_length") != nil {
		t.Errorf("a model without capabilities or window = %v, want only id and the OpenAI fields", at(list, "data", 0))
	}
	strs := func(v any) []string {
		var out []string
		for _, s := range v.([]any) {
			out = append(out, s.(string))
		}
		return out
	}
	params, inputs := strs(at(list, "data", 1, "supported_parameters")), strs(at(list, "data", 1, "architecture", "input_modalities"))
	if !slices.Contains(params, "tools") || !slices.Contains(params, "reasoning") || !slices.Equal(inputs, []string{"text", "image"}) {
		t.Errorf("rich model: supported_parameters %q, input_modalities %q", params, inputs)
	}
	params, inputs = strs(at(list, "data", 2, "supported_parameters")), strs(at(list, "data", 2, "architecture", "input_modalities"))
	if slices.Contains(params, "tools") || slices.Contains(params, "reasoning") || !slices.Equal(inputs, []string{"text"}) {
		t.Errorf("text-only model: supported_parameters %q, input_modalities %q", params, inputs)
	}
}

func TestCompatNoModelsAnswers404(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible, NoModels: true, Models: []llmtest.Model{{ID: "m"}}})
	if status, _ := fetch(t, srv, llmtest.OpenAICompatible, http.MethodGet, "/v1/models", nil); status != 404 {
		t.Errorf("GET /v1/models = %d, want 404", status)
	}
}

func TestCompatAnswersWithoutStreamWhenNotAsked(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible},
		llmtest.ToolTurn(llmtest.ToolCall{Name: "read", Args: `{"p":"日本"}`, Chunks: 4}))
	body := chatBody(llmtest.OpenAICompatible)
	body["stream"] = false
	status, b := fetch(t, srv, llmtest.OpenAICompatible, http.MethodPost, "/v1/chat/completions", body)
	r := object(t, b)
	if status != 200 || r["object"] != "chat.completion" || at(r, "choices", 0, "message", "content") != nil ||
		at(r, "choices", 0, "message", "tool_calls", 0, "function", "arguments") != `{"p":"日本"}` ||
		at(r, "choices", 0, "finish_reason") != "tool_calls" || at(r, "usage", "total_tokens") != 15.0 {
		t.Errorf("reply = %d %s", status, b)
	}
}
