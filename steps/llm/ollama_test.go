package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/task-x/runtime/steps/llm/llmtest"
)

// ollamaSpec is Ollama's native API for the shared tests of
// dialect_test.go.
var ollamaSpec = dialectSpec{kind: llmtest.Ollama, model: "test-model", streamErrorKind: KindServer, objectArgs: true}

func TestOllamaStream(t *testing.T) {
	t.Parallel()
	testStream(t, ollamaSpec)
}

func TestOllamaFailures(t *testing.T) {
	t.Parallel()
	testFailures(t, ollamaSpec)
}

func TestOllamaCancelClosesTheStream(t *testing.T) {
	t.Parallel()
	testCancel(t, ollamaSpec)
}

func TestOllamaStopReasons(t *testing.T) {
	t.Parallel()
	testStopReasons(t, ollamaSpec, []stopCase{
		{"stop is endTurn", llmtest.Turn{Text: []string{"x"}, Stop: llmtest.StopEndTurn}, StopEndTurn},
		{"length is maxTokens", llmtest.Turn{Text: []string{"x"}, Stop: llmtest.StopMaxTokens}, StopMaxTokens},
		{"stop after tool calls is toolUse", llmtest.Turn{Text: []string{"x"}, ToolCalls: []llmtest.ToolCall{{Name: "read", Args: `{}`}}, Stop: llmtest.StopToolUse}, StopToolUse},
		{"a reason the API never documented is unknown", llmtest.Turn{Text: []string{"x"}, Stop: llmtest.StopUnknown}, StopUnknown},
	})
}

func TestOllamaRequestBody(t *testing.T) {
	t.Parallel()
	temp := 0.5
	brief := userText("hi")
	brief.System, brief.Temperature = "be brief", &temp
	windowed := userText("hi")
	windowed.ContextWindow = 65536
	withTools := userText("hi")
	withTools.Tools = []ToolSpec{{Name: "read", Description: "Read a file", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	testRequestBody(t, ollamaSpec, []bodyCase{
		{
			name: "without a window, Ollama's own num_ctx; the system prompt leads the messages",
			req:  brief,
			want: `{"model": "test-model", "stream": true, "options": {"num_predict": 4096, "temperature": 0.5},
				"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}`,
		},
		{
			name: "a window is sent as num_ctx",
			req:  windowed,
			want: `{"model": "test-model", "stream": true, "options": {"num_predict": 4096, "num_ctx": 65536},
				"messages": [{"role": "user", "content": "hi"}]}`,
		},
		{
			name: "images go in the message's images list",
			req: &ChatRequest{Messages: []Message{{Role: RoleUser, Content: []ContentPart{
				{Type: PartText, Text: "what is this?"},
				{Type: PartImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
				{Type: PartImage, MediaType: "image/jpeg", Data: "/9j/4AA="},
			}}}},
			want: `{"model": "test-model", "stream": true, "options": {"num_predict": 4096},
				"messages": [{"role": "user", "content": "what is this?", "images": ["iVBORw0KGgo=", "/9j/4AA="]}]}`,
		},
		{
			name: "tool calls carry object arguments and results name their tool",
			req: &ChatRequest{Messages: []Message{
				{Role: RoleUser, Content: []ContentPart{{Type: PartText, Text: "read both"}}},
				{Role: RoleAssistant, Content: []ContentPart{
					{Type: PartText, Text: "reading"},
					{Type: PartToolUse, ID: "c1", Name: "read", Input: json.RawMessage(`{"path":"a.go"}`)},
					{Type: PartToolUse, ID: "c2", Name: "stat"},
				}},
				{Role: RoleUser, Content: []ContentPart{
					{Type: PartToolResult, ToolUseID: "c1", ToolName: "read", Content: "package a"},
					{Type: PartToolResult, ToolUseID: "c2", ToolName: "stat", Content: "no such file", IsError: true},
				}},
			}},
			want: `{"model": "test-model", "stream": true, "options": {"num_predict": 4096},
				"messages": [
					{"role": "user", "content": "read both"},
					{"role": "assistant", "content": "reading", "tool_calls": [
						{"function": {"name": "read", "arguments": {"path": "a.go"}}},
						{"function": {"name": "stat", "arguments": {}}}
					]},
					{"role": "tool", "content": "package a", "tool_name": "read"},
					{"role": "tool", "content": "Error: no such file", "tool_name": "stat"}
				]}`,
		},
		{
			name: "tools are offered as functions",
			req:  withTools,
			want: `{"model": "test-model", "stream": true, "options": {"num_predict": 4096},
				"messages": [{"role": "user", "content": "hi"}],
				"tools": [{"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": {"type": "object"}}}]}`,
		},
	})
}

func TestOllamaRequestHeaders(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, key, wantAuth string
	}{
		{"a key goes as a Bearer token", testKey, "Bearer " + testKey},
		{"without a key there is no Authorization", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Ollama}, llmtest.TextTurn("ok"))
			c, err := NewClient(ProviderConfig{Kind: Ollama, Model: ollamaSpec.model, BaseURL: srv.BaseURL(), APIKey: tc.key})
			if err != nil {
				t.Fatal(err)
			}
			mustChat(t, c, userText("hi"))
			checkChatRequest(t, chatRequest(t, srv), "/api/chat", map[string]string{"Authorization": tc.wantAuth})
		})
	}
}

func TestOllamaModels(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Ollama, Models: []llmtest.Model{
		{ID: "qwen3:8b", ContextWindow: 40960, Family: "qwen3", ParameterSize: "8.2B", Quantization: "Q4_K_M",
			Capabilities: []string{"thinking", "completion", "vision", "tools"}},
		{ID: "nomic-embed-text:latest", ContextWindow: 2048, ParameterSize: "137M", Capabilities: []string{"embedding"}},
		{ID: "llama3:latest", Quantization: "Q8_0"},
	}})
	got, err := clientFor(t, srv, llmtest.Ollama, ollamaSpec.model, 0).Models(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []ModelInfo{
		{ID: "llama3:latest", Capabilities: []Capability{}, Details: "Q8_0"},
		{ID: "nomic-embed-text:latest", ContextWindow: 2048, Capabilities: []Capability{CapEmbedding}, Details: "137M"},
		{ID: "qwen3:8b", ContextWindow: 40960, Capabilities: []Capability{CapTools, CapVision, CapThinking}, Details: "8.2B · Q4_K_M"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("models\n%+v, want\n%+v", got, want)
	}
}

func TestOllamaShowsTheFirst100ModelsOnly(t *testing.T) {
	t.Parallel()
	var models []llmtest.Model
	for i := range 110 {
		models = append(models, llmtest.Model{ID: fmt.Sprintf("m%03d:latest", i), ContextWindow: 4096 + i, ParameterSize: "1B"})
	}
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Ollama, Models: models})
	got, err := clientFor(t, srv, llmtest.Ollama, ollamaSpec.model, 0).Models(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	shows := 0
	for _, r := range srv.Requests() {
		if r.Path == "/api/show" {
			shows++
		}
	}
	if shows != 100 {
		t.Errorf("%d /api/show requests, want 100", shows)
	}
	if len(got) != 110 {
		t.Fatalf("%d models, want 110", len(got))
	}
	for i, m := range got {
		wantWindow := 4096 + i
		if i >= 100 {
			wantWindow = 0 // not asked: what /api/tags says
		}
		if m.ID != models[i].ID || m.ContextWindow != wantWindow || m.Details != "1B" {
			t.Errorf("model %d: %+v, want %s with window %d and details 1B", i, m, models[i].ID, wantWindow)
		}
	}
}

// showFront fronts srv with a server that passes every request to srv,
// each /api/show through show first, with the model it asks about.
func showFront(t *testing.T, srv *llmtest.Server, show func(w http.ResponseWriter, r *http.Request, model string, next http.Handler)) string {
	t.Helper()
	target, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	next := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/show" {
			next.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct{ Model string }
		_ = json.Unmarshal(body, &req)
		show(w, r, req.Model, next)
	}))
	t.Cleanup(front.Close)
	return front.URL
}

func TestOllamaModelWhoseShowFailsKeepsWhatTagsSays(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Ollama, Models: []llmtest.Model{
		{ID: "broken:latest", ContextWindow: 8192, ParameterSize: "3B", Quantization: "Q4_0", Capabilities: []string{"tools"}},
		{ID: "fine:latest", ContextWindow: 16384, ParameterSize: "7B", Capabilities: []string{"tools"}},
	}})
	// llmtest answers /api/show for every model it lists; fail it for one,
	// as Ollama does for a model whose files are damaged.
	base := showFront(t, srv, func(w http.ResponseWriter, r *http.Request, model string, next http.Handler) {
		if model == "broken:latest" {
			http.Error(w, `{"error":"failed to read the model"}`, http.StatusInternalServerError)
			return
		}
		next.ServeHTTP(w, r)
	})
	c, err := NewClient(ProviderConfig{Kind: Ollama, Model: "fine", BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Models(t.Context())
	if err != nil {
		t.Fatalf("Models: %v, want the list despite one failed /api/show", err)
	}
	want := []ModelInfo{
		{ID: "broken:latest", Capabilities: []Capability{}, Details: "3B · Q4_0"},
		{ID: "fine:latest", ContextWindow: 16384, Capabilities: []Capability{CapTools}, Details: "7B"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("models\n%+v, want\n%+v", got, want)
	}
}

func TestOllamaAsksAbout8ModelsAtATime(t *testing.T) {
	t.Parallel()
	const total = 20
	var models []llmtest.Model
	for i := range total {
		models = append(models, llmtest.Model{ID: fmt.Sprintf("m%02d:latest", i)})
	}
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Ollama, Models: models})
	// Each /api/show waits until 8 are in flight (or every one has
	// started), so the peak is exactly the client's limit; past the
	// deadline they go on, and a lower limit shows as a lower peak.
	var (
		mu                      sync.Mutex
		inflight, started, peak int
		changed                 = make(chan struct{})
	)
	deadline, stop := context.WithTimeout(t.Context(), 5*time.Second)
	defer stop()
	base := showFront(t, srv, func(w http.ResponseWriter, r *http.Request, _ string, next http.Handler) {
		mu.Lock()
		inflight++
		started++
		peak = max(peak, inflight)
		close(changed)
		changed = make(chan struct{})
		mu.Unlock()
	wait:
		for {
			mu.Lock()
			ready, ch := inflight >= 8 || started == total, changed
			mu.Unlock()
			if ready {
				break
			}
			select {
			case <-ch:
			case <-deadline.Done():
				break wait
			}
		}
		next.ServeHTTP(w, r)
		mu.Lock()
		inflight--
		mu.Unlock()
	})
	c, err := NewClient(ProviderConfig{Kind: Ollama, Model: "m00", BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Models(t.Context()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if peak != 8 || started != total {
		t.Errorf("%d /api/show requests at most at once of %d, want 8 of %d", peak, started, total)
	}
}

func TestOllamaContextWindow(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		models []llmtest.Model
		want   int
	}{
		{"from /api/show, the name resolved to :latest", []llmtest.Model{{ID: "test-model:latest", ContextWindow: 131072, Family: "gemma3"}}, 131072},
		{"the estimate when /api/show has no window", []llmtest.Model{{ID: "test-model:latest"}}, 32768},
		{"the estimate when the model is not installed", []llmtest.Model{{ID: "other:latest", ContextWindow: 8192}}, 32768},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Ollama, Models: tc.models})
			if got := clientFor(t, srv, llmtest.Ollama, ollamaSpec.model, 0).ContextWindow(t.Context()); got != tc.want {
				t.Errorf("window %d, want %d", got, tc.want)
			}
			if r := srv.Requests(); len(r) != 1 || r[0].Path != "/api/show" || r[0].JSON["model"] != "test-model" {
				t.Errorf("requests %+v, want one /api/show of test-model", r)
			}
		})
	}
}

func TestOllamaTest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		models    []llmtest.Model
		available bool
		tools     bool
		images    bool
	}{
		{"a model with tools and vision", []llmtest.Model{{ID: "test-model:latest", Capabilities: []string{"completion", "tools", "vision"}}}, true, true, true},
		{"a model without tools", []llmtest.Model{{ID: "test-model:latest", Capabilities: []string{"completion"}}}, true, false, false},
		{"a model that is not installed", []llmtest.Model{{ID: "other:latest", Capabilities: []string{"tools"}}}, false, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Ollama, Models: tc.models})
			res, err := clientFor(t, srv, llmtest.Ollama, ollamaSpec.model, 0).Test(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if res.ModelAvailable == nil || *res.ModelAvailable != tc.available {
				t.Errorf("modelAvailable %s, want %v", fmtBool(res.ModelAvailable), tc.available)
			}
			if res.Capabilities.Tools != tc.tools || res.Capabilities.Images != tc.images {
				t.Errorf("capabilities %+v, want tools %v, images %v", res.Capabilities, tc.tools, tc.images)
			}
			if len(srv.ChatRequests()) != 0 {
				t.Error("Test sent a chat request; listing the models is enough")
			}
		})
	}
}

// TestOllamaDecodeEdgeCases feeds the decoder streams the fake does not send.
func TestOllamaDecodeEdgeCases(t *testing.T) {
	t.Parallel()
	testDecode(t, llmtest.Ollama, []decodeCase{
		{
			name: "calls without ids get call_ollama_<n>, and arguments sent as a string are unwrapped",
			stream: `{"message":{"tool_calls":[{"function":{"name":"a","arguments":{"x":1}}},{"function":{"name":"b","arguments":"{\"y\":2}"}}]},"done":false}` + "\n" +
				`{"message":{"content":""},"done":true,"done_reason":"stop"}` + "\n",
			wantEvents: []Event{toolCallEvent("call_ollama_0", "a", `{"x":1}`), toolCallEvent("call_ollama_1", "b", `{"y":2}`), doneEvent(StopToolUse)},
		},
		{
			name:       "done without a reason ends the turn",
			stream:     `{"message":{"content":"hi"},"done":false}` + "\n" + `{"done":true}` + "\n",
			wantEvents: []Event{textEvent("hi"), doneEvent(StopEndTurn)},
		},
		{
			name:      "a body that ends before done is cut",
			stream:    `{"message":{"content":"hi"},"done":false}` + "\n",
			wantEnded: true,
		},
		{
			name:    "an error that says what is missing is notFound",
			stream:  `{"error":"model 'x' not found"}` + "\n",
			wantErr: &ProviderError{Kind: KindNotFound, Message: "model 'x' not found"},
		},
	})
}
