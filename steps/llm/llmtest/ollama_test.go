package llmtest_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/task-x/runtime/steps/llm/llmtest"
)

func TestOllamaStreamsNDJSON(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Ollama}, llmtest.Turn{
		Text:      []string{"Hi", " there"},
		ToolCalls: []llmtest.ToolCall{{Name: "read", Args: `{"path":"日本.go"}`, Chunks: 5}, {ID: "given", Name: "list"}},
		Usage:     &llmtest.Usage{InputTokens: 12, OutputTokens: 3},
	})
	resp := postChat(t, srv, llmtest.Ollama)
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("Content-Type = %q, want application/x-ndjson", ct)
	}
	evs, err := readStream(llmtest.Ollama, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 4 {
		t.Fatalf("got %d lines, want 2 text, 1 tool calls, 1 final", len(evs))
	}
	for i, ev := range evs[:3] {
		d := object(t, ev.data)
		if d["done"] != false || d["model"] != "test-model" || at(d, "message", "role") != "assistant" || d["created_at"] == nil {
			t.Errorf("line %d = %s", i, ev.data)
		}
	}
	calls := object(t, evs[2].data)
	if at(calls, "message", "content") != "" ||
		at(calls, "message", "tool_calls", 0, "function", "index") != 0.0 ||
		at(calls, "message", "tool_calls", 0, "function", "name") != "read" ||
		at(calls, "message", "tool_calls", 0, "function", "arguments", "path") != "日本.go" ||
		at(calls, "message", "tool_calls", 0, "id") != "call_llmtest_1_1" ||
		at(calls, "message", "tool_calls", 1, "function", "index") != 1.0 ||
		at(calls, "message", "tool_calls", 1, "id") != "given" {
		t.Errorf("tool calls line = %s", evs[2].data)
	}
	if args, ok := at(calls, "message", "tool_calls", 1, "function", "arguments").(map[string]any); !ok || len(args) != 0 {
		t.Errorf("empty Args = %v, want the empty object", args)
	}
	final := object(t, evs[3].data)
	if final["done"] != true || final["done_reason"] != "stop" || final["prompt_eval_count"] != 12.0 ||
		final["eval_count"] != 3.0 || final["total_duration"] == nil {
		t.Errorf("final line = %s", evs[3].data)
	}
}

func TestOllamaEncodesDoneReasons(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		llmtest.StopEndTurn: "stop", llmtest.StopToolUse: "stop", llmtest.StopMaxTokens: "length", llmtest.StopUnknown: "weird_reason",
	}
	for stop, want := range cases {
		t.Run("stop "+stop+" is "+want, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Ollama}, llmtest.Turn{Text: []string{"x"}, Stop: stop})
			evs := streamOf(t, srv, llmtest.Ollama)
			if got := object(t, evs[len(evs)-1].data)["done_reason"]; got != want {
				t.Errorf("done_reason = %v, want %s", got, want)
			}
		})
	}
}

func TestOllamaStreamErrorIsAnErrorLine(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Ollama}, llmtest.Turn{Text: []string{"a", "b"}, StreamError: "out of memory"})
	evs := streamOf(t, srv, llmtest.Ollama)
	if len(evs) != 2 || object(t, evs[1].data)["error"] != "out of memory" {
		t.Errorf("lines = %q, want the first text then {\"error\":...}", evs)
	}

	srv = llmtest.New(t, llmtest.Options{Kind: llmtest.Ollama}, llmtest.Turn{StreamError: "no memory"})
	evs = streamOf(t, srv, llmtest.Ollama)
	if len(evs) != 1 || object(t, evs[0].data)["error"] != "no memory" {
		t.Errorf("an empty turn's lines = %q, want only the error, never a done line before it", evs)
	}
}

func TestOllamaAnswersOneObjectWhenStreamIsFalse(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Ollama}, llmtest.Turn{
		Text:      []string{"a", "b"},
		ToolCalls: []llmtest.ToolCall{{Name: "read", Args: `{"n":1}`}},
		Stop:      llmtest.StopMaxTokens,
	})
	body := chatBody(llmtest.Ollama)
	body["stream"] = false
	status, b := fetch(t, srv, llmtest.Ollama, http.MethodPost, "/api/chat", body)
	r := object(t, b)
	if status != 200 || r["done"] != true || r["done_reason"] != "length" || at(r, "message", "content") != "ab" ||
		at(r, "message", "tool_calls", 0, "function", "arguments", "n") != 1.0 {
		t.Errorf("reply = %d %s", status, b)
	}
}

func TestOllamaListsTagsAndShowsModels(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Ollama, Models: []llmtest.Model{
		{ID: "qwen3:latest", Family: "qwen3", ContextWindow: 40960, Capabilities: []string{"completion", "tools", "thinking"},
			ParameterSize: "8.2B", Quantization: "Q4_K_M"},
		{ID: "llava:7b", Capabilities: []string{"completion", "vision"}},
	}})
	status, body := fetch(t, srv, llmtest.Ollama, http.MethodGet, "/api/tags", nil)
	tags := object(t, body)
	if status != 200 || at(tags, "models", 0, "name") != "qwen3:latest" || at(tags, "models", 0, "model") != "qwen3:latest" ||
		at(tags, "models", 0, "details", "family") != "qwen3" || at(tags, "models", 0, "details", "parameter_size") != "8.2B" ||
		at(tags, "models", 0, "details", "quantization_level") != "Q4_K_M" || at(tags, "models", 0, "details", "format") != "gguf" ||
		at(tags, "models", 1, "details", "family") != "llama" || at(tags, "models", 1, "digest") == nil {
		t.Errorf("GET /api/tags = %d %s", status, body)
	}

	cases := []struct {
		name, model string
		window      any
		infoKey     string
		caps        []string
	}{
		{"a name without tag is :latest", "qwen3", 40960.0, "qwen3.context_length", []string{"completion", "tools", "thinking"}},
		{"the full name", "qwen3:latest", 40960.0, "qwen3.context_length", []string{"completion", "tools", "thinking"}},
		{"a model without window", "llava:7b", nil, "llama.context_length", []string{"completion", "vision"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := fetch(t, srv, llmtest.Ollama, http.MethodPost, "/api/show", map[string]any{"model": tc.model})
			show := object(t, body)
			var caps []string
			for _, c := range show["capabilities"].([]any) {
				caps = append(caps, c.(string))
			}
			if status != 200 || at(show, "model_info", tc.infoKey) != tc.window || !slices.Equal(caps, tc.caps) ||
				at(show, "model_info", "general.architecture") == nil || at(show, "details", "format") != "gguf" {
				t.Errorf("POST /api/show %s = %d %s", tc.model, status, body)
			}
		})
	}

	status, body = fetch(t, srv, llmtest.Ollama, http.MethodPost, "/api/show", map[string]any{"model": "nope"})
	if status != 404 || object(t, body)["error"] != "model 'nope' not found" {
		t.Errorf("POST /api/show nope = %d %s, want 404 model 'nope' not found", status, body)
	}
	if status, body := fetch(t, srv, llmtest.Ollama, http.MethodGet, "/", nil); status != 200 || string(body) != "Ollama is running" {
		t.Errorf("GET / = %d %q", status, body)
	}
}
