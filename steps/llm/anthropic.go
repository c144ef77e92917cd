package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
)

// anthropicDialect speaks the Messages API: POST /v1/messages, streamed as named
// server-sent events.
type anthropicDialect struct{}

func init() { dialects[Anthropic] = anthropicDialect{} }

// anthropicVersion is the API version every request names.
const anthropicVersion = "2023-06-01"

func anthropicHeader(cfg *ProviderConfig, accept string) http.Header {
	h := http.Header{}
	h.Set("x-api-key", cfg.APIKey)
	h.Set("anthropic-version", anthropicVersion)
	h.Set("Accept", accept)
	return h
}

// The request body of /v1/messages.
type anthropicRequest struct {
	Model       string             `json:"model"`
	MaxTokens   int                `json:"max_tokens"`
	System      string             `json:"system,omitempty"`
	Messages    []anthropicMessage `json:"messages"`
	Tools       []anthropicTool    `json:"tools,omitempty"`
	Temperature *float64           `json:"temperature,omitempty"`
	Stream      bool               `json:"stream"`
}

type anthropicMessage struct {
	Role    Role  `json:"role"`
	Content []any `json:"content"` // the anthropic*Block types
}

type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anthropicTextBlock struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

type anthropicToolUseBlock struct {
	Type  string          `json:"type"` // "tool_use"
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anthropicToolResultBlock struct {
	Type      string `json:"type"` // "tool_result"
	ToolUseID string `json:"tool_use_id"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error"`
}

type anthropicImageBlock struct {
	Type   string               `json:"type"` // "image"
	Source anthropicImageSource `json:"source"`
}

type anthropicImageSource struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

func (anthropicDialect) chat(cfg *ProviderConfig, req *ChatRequest) (request, error) {
	return request{
		method: http.MethodPost,
		url:    cfg.baseURL() + "/v1/messages",
		body:   anthropicBody(cfg.Model, req),
		header: anthropicHeader(cfg, "text/event-stream"),
	}, nil
}

// anthropicBody translates a ChatRequest into the Messages API's body.
func anthropicBody(model string, req *ChatRequest) *anthropicRequest {
	body := &anthropicRequest{
		Model:     model,
		MaxTokens: req.MaxTokensOrDefault(),
		System:    req.System,
		Messages:  []anthropicMessage{},
		Stream:    true,
	}
	if req.Temperature != nil {
		// The protocol allows 0..2; the Messages API takes 0..1 and
		// refuses more, so the top of the range is its maximum.
		t := min(*req.Temperature, 1)
		body.Temperature = &t
	}
	for _, m := range req.Messages {
		blocks := anthropicBlocks(m.Content)
		if len(blocks) == 0 {
			continue // only empty text, which the API refuses
		}
		body.Messages = append(body.Messages, anthropicMessage{Role: m.Role, Content: blocks})
	}
	for _, t := range req.Tools {
		body.Tools = append(body.Tools, anthropicTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	return body
}

// anthropicBlocks translates a message's parts, in order, into content
// blocks. Empty text parts are left out: the API refuses empty text blocks.
func anthropicBlocks(parts []ContentPart) []any {
	blocks := make([]any, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case PartText:
			if p.Text != "" {
				blocks = append(blocks, anthropicTextBlock{Type: "text", Text: p.Text})
			}
		case PartToolUse:
			input := p.Input
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			blocks = append(blocks, anthropicToolUseBlock{Type: "tool_use", ID: p.ID, Name: p.Name, Input: input})
		case PartToolResult:
			blocks = append(blocks, anthropicToolResultBlock{Type: "tool_result", ToolUseID: p.ToolUseID, Content: p.Content, IsError: p.IsError})
		case PartImage:
			blocks = append(blocks, anthropicImageBlock{Type: "image", Source: anthropicImageSource{Type: "base64", MediaType: p.MediaType, Data: p.Data}})
		}
	}
	return blocks
}

// anthropicEvent holds the fields of every stream event the dialect reads;
// Type says which are set.
type anthropicEvent struct {
	Type    string `json:"type"`
	Message struct {
		Usage anthropicUsage `json:"usage"`
	} `json:"message"`
	Index        int `json:"index"`
	ContentBlock struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Text  string          `json:"text"`
		Input json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta struct {
		Type        string      `json:"type"`
		Text        exactString `json:"text"`
		PartialJSON exactString `json:"partial_json"`
		StopReason  string      `json:"stop_reason"`
	} `json:"delta"`
	Usage anthropicUsage `json:"usage"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type anthropicUsage struct {
	InputTokens  *int `json:"input_tokens"`
	OutputTokens *int `json:"output_tokens"`
}

// anthropicToolBlock is an open tool_use block: the input its start carried
// and whether any input_json_delta followed.
type anthropicToolBlock struct {
	startInput json.RawMessage
	hasDeltas  bool
}

func (anthropicDialect) decode(body io.Reader, t *turn) (StopReason, error) {
	r := newSSEReader(body)
	tools := map[int]*anthropicToolBlock{} // by content block index
	var stop StopReason
	for {
		sse, err := r.next()
		if errors.Is(err, io.EOF) {
			return "", errStreamEnded
		}
		if err != nil {
			return "", err
		}
		var ev anthropicEvent
		if err := json.Unmarshal(sse.data, &ev); err != nil {
			return "", malformed("event", err)
		}
		switch ev.Type {
		case "message_start":
			t.setUsage(ev.Message.Usage.InputTokens, ev.Message.Usage.OutputTokens)
		case "content_block_start":
			switch ev.ContentBlock.Type {
			case "text":
				t.textDelta(ev.ContentBlock.Text)
			case "tool_use":
				t.startTool(ev.Index, ev.ContentBlock.ID, ev.ContentBlock.Name)
				tools[ev.Index] = &anthropicToolBlock{startInput: ev.ContentBlock.Input}
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				t.textDelta(string(ev.Delta.Text))
			case "input_json_delta":
				if b := tools[ev.Index]; b != nil {
					b.hasDeltas = true
					t.toolArgs(ev.Index, string(ev.Delta.PartialJSON))
				}
			}
		case "content_block_stop":
			if b := tools[ev.Index]; b != nil {
				// The API sends the input as deltas after an empty start;
				// a start that carries the whole input stands alone.
				if !b.hasDeltas && len(b.startInput) > 0 {
					t.toolArgs(ev.Index, string(b.startInput))
				}
				t.toolDone(ev.Index)
				delete(tools, ev.Index)
			}
		case "message_delta":
			if ev.Delta.StopReason != "" {
				stop = mapStop(ev.Delta.StopReason)
			}
			t.setUsage(ev.Usage.InputTokens, ev.Usage.OutputTokens)
		case "message_stop":
			return stop, nil
		case "error":
			return "", streamEventError(ev.Error.Message, ev.Error.Type)
		}
		// ping, thinking blocks and event types added later are ignored.
	}
}

// anthropicModel is one entry of /v1/models.
type anthropicModel struct {
	ID             string `json:"id"`
	MaxInputTokens int    `json:"max_input_tokens"`
}

// anthropicMaxPages bounds the pages of a model list, against an endpoint
// that always says it has more. Every page is read before the list is
// sorted and cut to MaxModels: the API lists the newest models first.
const anthropicMaxPages = 20

func (anthropicDialect) models(ctx context.Context, cfg *ProviderConfig) ([]ModelInfo, error) {
	var models []ModelInfo
	after := ""
	for range anthropicMaxPages {
		q := url.Values{"limit": {"1000"}}
		if after != "" {
			q.Set("after_id", after)
		}
		var page struct {
			Data    []anthropicModel `json:"data"`
			HasMore bool             `json:"has_more"`
			LastID  string           `json:"last_id"`
		}
		r := request{method: http.MethodGet, url: cfg.baseURL() + "/v1/models?" + q.Encode(), header: anthropicHeader(cfg, "application/json")}
		if err := fetchJSON(ctx, cfg, r, &page); err != nil {
			return nil, err
		}
		for _, m := range page.Data {
			models = append(models, ModelInfo{ID: m.ID, ContextWindow: m.MaxInputTokens, Capabilities: familyCapabilities(Anthropic, m.ID)})
		}
		if !page.HasMore || page.LastID == "" || page.LastID == after {
			break
		}
		after = page.LastID
	}
	return models, nil
}

func (anthropicDialect) contextWindow(ctx context.Context, cfg *ProviderConfig, model string) (int, error) {
	var m anthropicModel
	r := request{method: http.MethodGet, url: cfg.baseURL() + "/v1/models/" + url.PathEscape(model), header: anthropicHeader(cfg, "application/json")}
	if err := fetchJSON(ctx, cfg, r, &m); err != nil {
		var pe *ProviderError
		if errors.As(err, &pe) && pe.Kind == KindNotFound {
			return 0, nil
		}
		return 0, err
	}
	return m.MaxInputTokens, nil
}
