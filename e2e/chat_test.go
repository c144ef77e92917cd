package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/task-x/runtime/steps/llm/llmtest"
)

const testAPIKey = "sk-e2e-0123456789-SECRET"

// providerFor is the ProviderConfig of a fake server.
func providerFor(srv *llmtest.Server, kind llmtest.Kind, model string) map[string]any {
	return map[string]any{"kind": string(kind), "model": model, "baseUrl": srv.BaseURL(), "apiKey": testAPIKey}
}

type chatEvent struct {
	RequestID json.RawMessage `json:"requestId"`
	Event     struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
		Usage *struct {
			InputTokens  int `json:"inputTokens"`
			OutputTokens int `json:"outputTokens"`
		} `json:"usage"`
		StopReason string `json:"stopReason"`
	} `json:"event"`
}

type chatResult struct {
	Text      string `json:"text"`
	ToolCalls []struct {
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"toolCalls"`
	StopReason string `json:"stopReason"`
	Usage      struct {
		InputTokens  int `json:"inputTokens"`
		OutputTokens int `json:"outputTokens"`
	} `json:"usage"`
}

type providerError struct {
	Kind         string `json:"kind"`
	Message      string `json:"message"`
	Status       int    `json:"status"`
	Retryable    bool   `json:"retryable"`
	RetryAfterMs int64  `json:"retryAfterMs"`
}

func expectProviderError(t *testing.T, m Message, kind string) providerError {
	t.Helper()
	ExpectError(t, m, -32001)
	var pe providerError
	if err := json.Unmarshal(m.Error.Data, &pe); err != nil {
		t.Fatalf("error.data %s: %v", m.Error.Data, err)
	}
	if pe.Kind != kind {
		t.Fatalf("provider error kind %q (%s), want %q", pe.Kind, pe.Message, kind)
	}
	return pe
}

func chatParams(provider map[string]any, text string) map[string]any {
	return map[string]any{"provider": provider, "request": map[string]any{
		"system":   "You are terse.",
		"messages": []any{userText(text)},
		"tools": []any{map[string]any{"name": "read_file", "description": "Read a file",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}},
	}}
}

func TestChatSendStreamsEveryProvider(t *testing.T) {
	t.Parallel()
	for _, kind := range llmtest.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: kind}, llmtest.Turn{
				Text:      []string{"Hel", "lo ", "wörld"},
				ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: `{"path":"日本/é.go"}`, Chunks: 6}},
				Usage:     &llmtest.Usage{InputTokens: 12, OutputTokens: 7},
			})
			r := Start(t)
			r.Initialize()
			r.Request("chat-1", "chat/send", chatParams(providerFor(srv, kind, "test-model"), "read it"))
			notes, resp := r.Stream("chat-1", "chat/event")

			var res chatResult
			ExpectResult(t, resp, &res)
			var types []string
			var text strings.Builder
			for _, n := range notes {
				var ev chatEvent
				if err := json.Unmarshal(n.Params, &ev); err != nil {
					t.Fatal(err)
				}
				if string(ev.RequestID) != `"chat-1"` {
					t.Fatalf("chat/event requestId %s, want \"chat-1\"", ev.RequestID)
				}
				types = append(types, ev.Event.Type)
				switch ev.Event.Type {
				case "textDelta":
					text.WriteString(ev.Event.Text)
				case "toolCall":
					if ev.Event.Name != "read_file" || !strings.Contains(string(ev.Event.Input), "日本/é.go") {
						t.Fatalf("toolCall event %+v", ev.Event)
					}
				case "usage":
					if ev.Event.Usage == nil || ev.Event.Usage.InputTokens != 12 || ev.Event.Usage.OutputTokens != 7 {
						t.Fatalf("usage event %+v", ev.Event.Usage)
					}
				case "done":
					if ev.Event.StopReason != "toolUse" {
						t.Fatalf("done stopReason %q", ev.Event.StopReason)
					}
				}
			}
			got := strings.Join(types, ",")
			if got != "textDelta,textDelta,textDelta,toolCall,usage,done" {
				t.Fatalf("event order %s", got)
			}
			if text.String() != "Hello wörld" || res.Text != "Hello wörld" {
				t.Fatalf("text %q / result %q", text.String(), res.Text)
			}
			if len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "read_file" || res.StopReason != "toolUse" ||
				res.Usage.InputTokens != 12 || res.Usage.OutputTokens != 7 {
				t.Fatalf("result %+v", res)
			}
			var input map[string]string
			if err := json.Unmarshal(res.ToolCalls[0].Input, &input); err != nil || input["path"] != "日本/é.go" {
				t.Fatalf("tool input %s: %v", res.ToolCalls[0].Input, err)
			}

			// What the runtime sent: the model, the system prompt, the tool.
			reqs := srv.ChatRequests()
			if len(reqs) != 1 {
				t.Fatalf("%d chat requests", len(reqs))
			}
			body := string(reqs[0].Body)
			for _, want := range []string{`"test-model"`, "You are terse.", "read_file", "read it"} {
				if !strings.Contains(body, want) {
					t.Errorf("the request body lacks %s: %s", want, body)
				}
			}
		})
	}
}

func TestChatSendErrorsBecomeProviderErrors(t *testing.T) {
	t.Parallel()
	for _, kind := range llmtest.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: kind},
				llmtest.Turn{Error: &llmtest.HTTPError{Status: 401, Message: "bad key"}},
				llmtest.Turn{Error: &llmtest.HTTPError{Status: 429, Message: "slow down", RetryAfter: "7"}},
				llmtest.Turn{Error: &llmtest.HTTPError{Status: 500, Message: "boom"}},
				llmtest.Turn{Text: []string{"a", "b", "c"}, CutAfter: 3},
				llmtest.Turn{Text: []string{"a", "b"}, Malformed: true},
			)
			r := Start(t)
			r.Initialize()
			p := providerFor(srv, kind, "m")
			if pe := expectProviderError(t, r.Call("chat/send", chatParams(p, "x")), "auth"); pe.Status != 401 || pe.Retryable {
				t.Fatalf("401: %+v", pe)
			}
			if pe := expectProviderError(t, r.Call("chat/send", chatParams(p, "x")), "rateLimited"); pe.Status != 429 || !pe.Retryable || pe.RetryAfterMs != 7000 {
				t.Fatalf("429: %+v", pe)
			}
			if pe := expectProviderError(t, r.Call("chat/send", chatParams(p, "x")), "server"); pe.Status != 500 || !pe.Retryable {
				t.Fatalf("500: %+v", pe)
			}
			if pe := expectProviderError(t, r.Call("chat/send", chatParams(p, "x")), "network"); !pe.Retryable {
				t.Fatalf("cut stream: %+v", pe)
			}
			expectProviderError(t, r.Call("chat/send", chatParams(p, "x")), "protocol")
		})
	}
}

func TestChatSendTimeouts(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Ollama},
		llmtest.Turn{Text: []string{"a", "b"}, Gap: 1500 * time.Millisecond},
		llmtest.Turn{Text: []string{"a"}, HeaderDelay: 1500 * time.Millisecond},
		llmtest.Turn{Text: []string{"ok"}, HeaderDelay: 300 * time.Millisecond},
	)
	r := Start(t)
	r.Initialize()
	p := providerFor(srv, llmtest.Ollama, "m")
	p["timeoutMs"] = 1000
	expectProviderError(t, r.Call("chat/send", chatParams(p, "idle gap")), "timeout")
	expectProviderError(t, r.Call("chat/send", chatParams(p, "slow headers")), "timeout")
	// timeoutMs 5 is clamped to 1000: 300 ms of silence is fine.
	p["timeoutMs"] = 5
	ExpectResult(t, r.Call("chat/send", chatParams(p, "clamped")), nil)
}

func TestChatSendCancelClosesTheStream(t *testing.T) {
	t.Parallel()
	for _, kind := range llmtest.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			chunks := make([]string, 200)
			for i := range chunks {
				chunks[i] = fmt.Sprintf("w%d ", i)
			}
			srv := llmtest.New(t, llmtest.Options{Kind: kind}, llmtest.Turn{Text: chunks, Delay: 50 * time.Millisecond})
			r := Start(t)
			r.Initialize()
			r.Request("long", "chat/send", chatParams(providerFor(srv, kind, "m"), "talk"))
			r.waitFor("the first chat/event", func(m Message) (bool, bool) {
				return m.Method == "chat/event", m.Method == "chat/event"
			})
			r.Notify("$/cancelRequest", map[string]any{"id": "long"})
			ExpectError(t, r.Response("long"), codeCancelled)
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			if err := srv.WaitClosed(ctx, 1); err != nil {
				t.Fatalf("the provider never saw the stream close: %v", err)
			}
		})
	}
}

func TestProviderMethodsEveryProvider(t *testing.T) {
	t.Parallel()
	models := []llmtest.Model{
		{ID: "zeta-model", ContextWindow: 65536, Capabilities: []string{"completion", "tools"}, ParameterSize: "8.2B", Quantization: "Q4_K_M"},
		{ID: "alpha-model", ContextWindow: 8192},
	}
	for _, kind := range llmtest.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: kind, Models: models})
			r := Start(t)
			r.Initialize()
			p := providerFor(srv, kind, "zeta-model")

			var list struct {
				Models []string `json:"models"`
			}
			ExpectResult(t, r.Call("provider/listModels", map[string]any{"provider": p}), &list)
			if strings.Join(list.Models, ",") != "alpha-model,zeta-model" {
				t.Fatalf("listModels %v, want sorted", list.Models)
			}

			var infos struct {
				Models []struct {
					ID            string   `json:"id"`
					ContextWindow int      `json:"contextWindow"`
					Capabilities  []string `json:"capabilities"`
					Details       string   `json:"details"`
				} `json:"models"`
			}
			ExpectResult(t, r.Call("provider/models", map[string]any{"provider": p}), &infos)
			if len(infos.Models) != 2 || infos.Models[0].ID != "alpha-model" {
				t.Fatalf("models %+v", infos.Models)
			}
			zeta := infos.Models[1]
			switch kind {
			case llmtest.Ollama:
				if zeta.ContextWindow != 65536 || zeta.Details != "8.2B · Q4_K_M" || strings.Join(zeta.Capabilities, ",") != "tools" {
					t.Fatalf("ollama model %+v", zeta)
				}
			case llmtest.OpenAICompatible, llmtest.Anthropic:
				if zeta.ContextWindow != 65536 {
					t.Fatalf("%s model %+v", kind, zeta)
				}
			case llmtest.OpenAI:
				if zeta.ContextWindow != 128_000 { // the built-in estimate
					t.Fatalf("openai model %+v", zeta)
				}
			}

			var window struct {
				Tokens int `json:"tokens"`
			}
			ExpectResult(t, r.Call("provider/contextWindow", map[string]any{"provider": p}), &window)
			want := 65536
			if kind == llmtest.OpenAI {
				want = 128_000
			}
			if window.Tokens != want {
				t.Fatalf("contextWindow %d, want %d", window.Tokens, want)
			}

			var test struct {
				LatencyMs      *int64   `json:"latencyMs"`
				Models         []string `json:"models"`
				ModelAvailable *bool    `json:"modelAvailable"`
			}
			ExpectResult(t, r.Call("provider/test", map[string]any{"provider": p}), &test)
			if test.LatencyMs == nil || len(test.Models) != 2 || test.ModelAvailable == nil || !*test.ModelAvailable {
				t.Fatalf("test %+v", test)
			}
		})
	}
}

func TestProviderTestWithoutAModelList(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible, NoModels: true}, llmtest.TextTurn("pong"))
	r := Start(t)
	r.Initialize()
	m := r.Call("provider/test", map[string]any{"provider": providerFor(srv, llmtest.OpenAICompatible, "m")})
	var raw map[string]json.RawMessage
	ExpectResult(t, m, &raw)
	if string(raw["modelAvailable"]) != "null" {
		t.Fatalf("modelAvailable %s, want null", raw["modelAvailable"])
	}
	chats := srv.ChatRequests()
	if len(chats) != 1 || !strings.Contains(string(chats[0].Body), `"max_tokens":1`) {
		t.Fatalf("no one-token chat was sent: %v", chats)
	}
}

func TestProviderSecretsNeverReachTheLogs(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic}, llmtest.TextTurn("hi"),
		llmtest.Turn{Error: &llmtest.HTTPError{Status: 401, Message: "invalid x-api-key"}})
	r := Start(t, Env("TASK_X_LOG=trace"))
	r.Initialize()
	p := providerFor(srv, llmtest.Anthropic, "claude-sonnet-4-5")
	ExpectResult(t, r.Call("chat/send", chatParams(p, "hello")), nil)
	r.Call("chat/send", chatParams(p, "hello"))
	r.Call("provider/listModels", map[string]any{"provider": p})
	logs := r.Stderr()
	if strings.Contains(logs, testAPIKey) || strings.Contains(logs, "SECRET") {
		t.Fatalf("the API key reached stderr:\n%s", logs)
	}
	if !strings.Contains(logs, "model call") || !strings.Contains(logs, "inputTokens") {
		t.Fatalf("the model call's token counts were not logged at info:\n%s", logs)
	}
	if strings.Contains(logs, "hello") {
		t.Fatalf("prompt text reached stderr:\n%s", logs)
	}
}

func TestChatSendSendsImagesInEachProvidersFormat(t *testing.T) {
	t.Parallel()
	want := map[llmtest.Kind][]string{
		llmtest.Anthropic:        {`"type":"image"`, `"media_type":"image/png"`, `"data":"` + pngBase64},
		llmtest.OpenAI:           {`"input_image"`, `data:image/png;base64,` + pngBase64},
		llmtest.OpenAICompatible: {`"image_url"`, `data:image/png;base64,` + pngBase64},
		llmtest.Ollama:           {`"images":["` + pngBase64},
	}
	for _, kind := range llmtest.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: kind}, llmtest.TextTurn("a cat"))
			r := Start(t)
			r.Initialize()
			msg := map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "what is this?"}, imagePart("image/png", pngBase64)}}
			ExpectResult(t, r.Call("chat/send", map[string]any{"provider": providerFor(srv, kind, "m"),
				"request": map[string]any{"messages": []any{msg}}}), nil)
			body := string(srv.ChatRequests()[0].Body)
			body = strings.ReplaceAll(body, `\/`, `/`)
			for _, w := range want[kind] {
				if !strings.Contains(body, w) {
					t.Errorf("the %s request lacks %s:\n%s", kind, w, body)
				}
			}
		})
	}
}
