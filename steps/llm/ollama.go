package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/sourcegraph/conc/pool"
)

// ollamaDialect speaks Ollama's native API: POST {base}/api/chat streamed as
// newline-delimited JSON up to the object with done:true.
type ollamaDialect struct{}

func init() { dialects[Ollama] = ollamaDialect{} }

// Limits of the /api/show calls that complete a model list.
const (
	ollamaShowMax      = 100
	ollamaShowParallel = 8
)

type ollamaBody struct {
	Model    string          `json:"model"`
	Messages []ollamaMessage `json:"messages"`
	Tools    []compatTool    `json:"tools,omitempty"`
	Stream   bool            `json:"stream"`
	Options  ollamaOptions   `json:"options"`
}

type ollamaOptions struct {
	NumPredict  int      `json:"num_predict"`
	Temperature *float64 `json:"temperature,omitempty"`
	// NumCtx sets the window; without it Ollama runs the model with its
	// own small default and silently drops the start of a long prompt.
	NumCtx int `json:"num_ctx,omitempty"`
}

type ollamaMessage struct {
	Role      string           `json:"role"`
	Content   string           `json:"content"`
	Images    []string         `json:"images,omitempty"`
	ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
	ToolName  string           `json:"tool_name,omitempty"`
}

type ollamaToolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

func (ollamaDialect) chat(cfg *ProviderConfig, req *ChatRequest) (request, error) {
	body := ollamaBody{
		Model:    cfg.Model,
		Messages: ollamaMessages(req),
		Tools:    compatTools(req.Tools),
		Stream:   true,
		Options: ollamaOptions{
			NumPredict:  req.MaxTokensOrDefault(),
			Temperature: req.Temperature,
			NumCtx:      max(req.ContextWindow, 0),
		},
	}
	return request{method: http.MethodPost, url: cfg.baseURL() + "/api/chat", body: body, header: bearerHeader(cfg)}, nil
}

// ollamaMessages converts the conversation. As for Chat Completions, a user
// message's tool results go ahead of the rest of it; Ollama matches them to
// their calls by tool name.
func ollamaMessages(req *ChatRequest) []ollamaMessage {
	var out []ollamaMessage
	if req.System != "" {
		out = append(out, ollamaMessage{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		msg := ollamaMessage{Role: string(m.Role)}
		var texts []string
		for _, p := range m.Content {
			switch p.Type {
			case PartText:
				texts = append(texts, p.Text)
			case PartImage:
				msg.Images = append(msg.Images, p.Data)
			case PartToolUse:
				var call ollamaToolCall
				call.Function.Name = p.Name
				call.Function.Arguments = p.Input
				if len(p.Input) == 0 {
					call.Function.Arguments = json.RawMessage("{}")
				}
				msg.ToolCalls = append(msg.ToolCalls, call)
			case PartToolResult:
				out = append(out, ollamaMessage{Role: "tool", Content: resultText(p), ToolName: p.ToolName})
			}
		}
		msg.Content = strings.Join(texts, "\n\n")
		if m.Role == RoleAssistant || msg.Content != "" || len(msg.Images) > 0 {
			out = append(out, msg)
		}
	}
	return out
}

// ollamaLine is one object of the stream.
type ollamaLine struct {
	Message struct {
		Content   string           `json:"content"`
		ToolCalls []ollamaToolCall `json:"tool_calls"`
	} `json:"message"`
	Done            bool            `json:"done"`
	DoneReason      string          `json:"done_reason"`
	PromptEvalCount *int            `json:"prompt_eval_count"`
	EvalCount       *int            `json:"eval_count"`
	Error           json.RawMessage `json:"error"`
}

func (ollamaDialect) decode(body io.Reader, t *turn) (StopReason, error) {
	r := newLineReader(body)
	for {
		line, err := r.next()
		if errors.Is(err, io.EOF) {
			return "", errStreamEnded
		}
		if err != nil {
			return "", err
		}
		var l ollamaLine
		if err := json.Unmarshal(line, &l); err != nil {
			return "", malformed("event", err)
		}
		if len(l.Error) > 0 && string(l.Error) != "null" {
			return "", ollamaStreamError(line, l.Error)
		}
		t.textDelta(l.Message.Content)
		for _, tc := range l.Message.ToolCalls {
			id := tc.ID
			if id == "" {
				id = fmt.Sprintf("call_ollama_%d", len(t.calls)) // Ollama matches results by tool_name
			}
			t.fullTool(id, tc.Function.Name, ollamaArguments(tc.Function.Arguments))
		}
		if !l.Done {
			continue
		}
		t.setUsage(l.PromptEvalCount, l.EvalCount)
		switch l.DoneReason {
		case "", "stop":
			// Ollama says "stop" after tool calls too.
			if t.hasToolCalls() {
				return StopToolUse, nil
			}
			return StopEndTurn, nil
		}
		return mapStop(l.DoneReason), nil
	}
}

// ollamaArguments is a call's arguments as JSON text. Ollama sends an
// object; a server that sends the JSON text as a string gets it unwrapped.
func ollamaArguments(raw json.RawMessage) json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return json.RawMessage(s)
	}
	return raw
}

// ollamaStreamError is the ProviderError of {"error": ...} in the stream:
// the server's failure (the model runner crashed, say) unless the text
// names something else.
func ollamaStreamError(line, raw json.RawMessage) *ProviderError {
	var msg string
	if json.Unmarshal(raw, &msg) != nil {
		msg, _ = errorBody(line)
	}
	if msg == "" {
		msg = "the provider reported an error in the stream"
	}
	kind := KindServer
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "not found"):
		kind = KindNotFound
	case strings.Contains(low, "unauthorized"), strings.Contains(low, "api key"):
		kind = KindAuth
	case strings.Contains(low, "rate limit"), strings.Contains(low, "too many requests"):
		kind = KindRateLimited
	case strings.Contains(low, "overloaded"), strings.Contains(low, "server busy"):
		kind = KindOverloaded
	}
	return newError(kind, "%s", clipText(msg))
}

type ollamaDetails struct {
	ParameterSize     string `json:"parameter_size"`
	QuantizationLevel string `json:"quantization_level"`
}

// String is the details of provider/models, like "8.2B · Q4_K_M".
func (d ollamaDetails) String() string {
	var parts []string
	for _, s := range []string{d.ParameterSize, d.QuantizationLevel} {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " · ")
}

// ollamaShowReply is what /api/show says of a model.
type ollamaShowReply struct {
	Details      ollamaDetails              `json:"details"`
	ModelInfo    map[string]json.RawMessage `json:"model_info"`
	Capabilities []string                   `json:"capabilities"`
}

// contextLength is model_info's "<arch>.context_length": the one of
// general.architecture, else the first such key in sorted order.
func (s *ollamaShowReply) contextLength() int {
	var arch string
	_ = json.Unmarshal(s.ModelInfo["general.architecture"], &arch)
	if n := positiveInt(s.ModelInfo[arch+".context_length"]); arch != "" && n > 0 {
		return n
	}
	keys := make([]string, 0, len(s.ModelInfo))
	for k := range s.ModelInfo {
		if strings.HasSuffix(k, ".context_length") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if n := positiveInt(s.ModelInfo[k]); n > 0 {
			return n
		}
	}
	return 0
}

// ollamaCapabilities maps /api/show's capabilities; completion and insert
// say nothing the protocol lists.
var ollamaCapabilities = map[string]Capability{
	"tools": CapTools, "vision": CapVision, "thinking": CapThinking, "embedding": CapEmbedding,
}

func (s *ollamaShowReply) apply(m *ModelInfo) {
	if n := s.contextLength(); n > 0 {
		m.ContextWindow = n
	}
	if d := s.Details.String(); d != "" {
		m.Details = d
	}
	m.Capabilities = nil
	for _, c := range s.Capabilities {
		if capability, ok := ollamaCapabilities[c]; ok {
			m.Capabilities = append(m.Capabilities, capability)
		}
	}
}

func ollamaShow(ctx context.Context, cfg *ProviderConfig, model string) (*ollamaShowReply, error) {
	var reply ollamaShowReply
	r := request{method: http.MethodPost, url: cfg.baseURL() + "/api/show", body: map[string]string{"model": model}, header: bearerHeader(cfg)}
	if err := fetchJSON(ctx, cfg, r, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

// models lists /api/tags, then asks /api/show about the first models (by
// name) for their window and capabilities, a few at a time. A model whose
// /api/show fails keeps what /api/tags says of it.
func (ollamaDialect) models(ctx context.Context, cfg *ProviderConfig) ([]ModelInfo, error) {
	var tags struct {
		Models []struct {
			Name    string        `json:"name"`
			Model   string        `json:"model"`
			Details ollamaDetails `json:"details"`
		} `json:"models"`
	}
	r := request{method: http.MethodGet, url: cfg.baseURL() + "/api/tags", header: bearerHeader(cfg)}
	if err := fetchJSON(ctx, cfg, r, &tags); err != nil {
		return nil, err
	}
	models := make([]ModelInfo, 0, len(tags.Models))
	for _, t := range tags.Models {
		id := t.Name
		if id == "" {
			id = t.Model
		}
		if id != "" {
			models = append(models, ModelInfo{ID: id, Details: t.Details.String()})
		}
	}
	slices.SortFunc(models, func(a, b ModelInfo) int { return strings.Compare(a.ID, b.ID) })
	p := pool.New().WithMaxGoroutines(ollamaShowParallel).WithContext(ctx)
	for i := range models[:min(len(models), ollamaShowMax)] {
		p.Go(func(ctx context.Context) error {
			if show, err := ollamaShow(ctx, cfg, models[i].ID); err == nil {
				show.apply(&models[i])
			}
			return nil
		})
	}
	_ = p.Wait()
	if err := ctx.Err(); err != nil {
		return nil, classify(ctx, err)
	}
	return models, nil
}

// contextWindow asks /api/show; 0 for a model Ollama does not have.
func (ollamaDialect) contextWindow(ctx context.Context, cfg *ProviderConfig, model string) (int, error) {
	show, err := ollamaShow(ctx, cfg, model)
	var pe *ProviderError
	if errors.As(err, &pe) && pe.Status == http.StatusNotFound {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return show.contextLength(), nil
}
