package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
)

// responsesDialect speaks OpenAI's Responses API (kind openai): POST
// /responses, streamed as named server-sent events. Nothing is stored on
// OpenAI's side (store: false): every turn sends the whole conversation.
type responsesDialect struct{}

func init() { dialects[OpenAI] = responsesDialect{} }

// responsesMinOutputTokens is the smallest max_output_tokens the API
// accepts.
const responsesMinOutputTokens = 16

func responsesHeader(cfg *ProviderConfig, accept string) http.Header {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+cfg.APIKey)
	h.Set("Accept", accept)
	return h
}

// The request body of /responses.
type responsesRequest struct {
	Model           string          `json:"model"`
	Input           []any           `json:"input"` // the responses*Item types
	Instructions    string          `json:"instructions,omitempty"`
	Tools           []responsesTool `json:"tools,omitempty"`
	MaxOutputTokens int             `json:"max_output_tokens"`
	Temperature     *float64        `json:"temperature,omitempty"`
	Stream          bool            `json:"stream"`
	Store           bool            `json:"store"`
}

type responsesTool struct {
	Type        string          `json:"type"` // "function"
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

// responsesMessageItem is a message: user content is input_text and
// input_image parts, assistant content output_text parts.
type responsesMessageItem struct {
	Role    Role                   `json:"role"`
	Content []responsesContentPart `json:"content"`
}

type responsesContentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
}

type responsesFunctionCallItem struct {
	Type      string `json:"type"` // "function_call"
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type responsesFunctionOutputItem struct {
	Type   string `json:"type"` // "function_call_output"
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

func (responsesDialect) chat(cfg *ProviderConfig, req *ChatRequest) (request, error) {
	return request{
		method: http.MethodPost,
		url:    cfg.baseURL() + "/responses",
		body:   responsesBody(cfg.Model, req),
		header: responsesHeader(cfg, "text/event-stream"),
	}, nil
}

// responsesBody translates a ChatRequest into the Responses API's body.
func responsesBody(model string, req *ChatRequest) *responsesRequest {
	body := &responsesRequest{
		Model:           model,
		Input:           []any{},
		Instructions:    req.System,
		MaxOutputTokens: max(req.MaxTokensOrDefault(), responsesMinOutputTokens),
		Stream:          true,
	}
	// Reasoning models (o-series, gpt-5) refuse a temperature.
	if req.Temperature != nil && !slices.Contains(familyCapabilities(OpenAI, model), CapThinking) {
		body.Temperature = req.Temperature
	}
	for _, m := range req.Messages {
		body.Input = append(body.Input, responsesItems(m)...)
	}
	for _, t := range req.Tools {
		body.Tools = append(body.Tools, responsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	return body
}

// responsesItems translates one message into input items, keeping the order
// of its parts: consecutive text and images form one message item; a tool
// call or a tool result is an item of its own between them.
func responsesItems(m Message) []any {
	var items []any
	var msg *responsesMessageItem
	add := func(p responsesContentPart) {
		if msg == nil {
			msg = &responsesMessageItem{Role: m.Role}
			items = append(items, msg)
		}
		msg.Content = append(msg.Content, p)
	}
	for _, p := range m.Content {
		switch p.Type {
		case PartText:
			if m.Role == RoleAssistant {
				add(responsesContentPart{Type: "output_text", Text: p.Text})
			} else {
				add(responsesContentPart{Type: "input_text", Text: p.Text})
			}
		case PartImage:
			add(responsesContentPart{Type: "input_image", ImageURL: "data:" + p.MediaType + ";base64," + p.Data})
		case PartToolUse:
			args := string(p.Input)
			if args == "" {
				args = "{}"
			}
			items = append(items, responsesFunctionCallItem{Type: "function_call", CallID: p.ID, Name: p.Name, Arguments: args})
			msg = nil
		case PartToolResult:
			out := p.Content
			if p.IsError {
				out = "Error: " + out
			}
			items = append(items, responsesFunctionOutputItem{Type: "function_call_output", CallID: p.ToolUseID, Output: out})
			msg = nil
		}
	}
	return items
}

// responsesEvent holds the fields of every stream event the dialect reads;
// Type says which are set.
type responsesEvent struct {
	Type        string      `json:"type"`
	Delta       exactString `json:"delta"`
	OutputIndex int         `json:"output_index"`
	Item        struct {
		Type      string      `json:"type"`
		CallID    string      `json:"call_id"`
		Name      string      `json:"name"`
		Arguments exactString `json:"arguments"`
	} `json:"item"`
	Response struct {
		Usage *struct {
			InputTokens  *int `json:"input_tokens"`
			OutputTokens *int `json:"output_tokens"`
		} `json:"usage"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Error *responsesError `json:"error"`
	} `json:"response"`
	// An error event has its code and message at the top or, from some
	// servers, in an error object.
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Error   *responsesError `json:"error"`
}

type responsesError struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (responsesDialect) decode(body io.Reader, t *turn) (StopReason, error) {
	r := newSSEReader(body)
	for {
		sse, err := r.next()
		if errors.Is(err, io.EOF) {
			return "", errStreamEnded
		}
		if err != nil {
			return "", err
		}
		var ev responsesEvent
		if err := json.Unmarshal(sse.data, &ev); err != nil {
			return "", malformed("event", err)
		}
		switch ev.Type {
		case "response.output_text.delta":
			t.textDelta(string(ev.Delta))
		case "response.output_item.added":
			if ev.Item.Type == "function_call" {
				t.startTool(ev.OutputIndex, ev.Item.CallID, ev.Item.Name)
			}
		case "response.function_call_arguments.delta":
			t.toolArgs(ev.OutputIndex, string(ev.Delta))
		case "response.output_item.done":
			if ev.Item.Type == "function_call" {
				responsesToolDone(t, ev.OutputIndex, ev.Item.CallID, ev.Item.Name, string(ev.Item.Arguments))
			}
		case "response.completed":
			responsesUsage(t, &ev)
			if t.hasToolCalls() {
				return StopToolUse, nil
			}
			return StopEndTurn, nil
		case "response.incomplete":
			responsesUsage(t, &ev)
			reason := ""
			if d := ev.Response.IncompleteDetails; d != nil {
				reason = d.Reason
			}
			return mapStop(reason), nil
		case "response.failed":
			e := ev.Response.Error
			if e == nil {
				e = &responsesError{}
			}
			return "", streamEventError(e.Message, e.Code, e.Type)
		case "error":
			if e := ev.Error; e != nil {
				return "", streamEventError(e.Message, e.Code, e.Type)
			}
			return "", streamEventError(ev.Message, ev.Code)
		}
		// Reasoning, refusal and other event types are ignored.
	}
}

// responsesToolDone completes a function call. Its done item carries the
// whole call, which stands in for an added item or argument deltas that a
// server left out.
func responsesToolDone(t *turn, key int, id, name, args string) {
	if c := t.find(key); c == nil || c.done {
		t.startTool(key, id, name)
	}
	if c := t.find(key); c.args.Len() == 0 {
		t.toolArgs(key, args)
	}
	t.toolDone(key)
}

func responsesUsage(t *turn, ev *responsesEvent) {
	if u := ev.Response.Usage; u != nil {
		t.setUsage(u.InputTokens, u.OutputTokens)
	}
}

func (responsesDialect) models(ctx context.Context, cfg *ProviderConfig) ([]ModelInfo, error) {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	r := request{method: http.MethodGet, url: cfg.baseURL() + "/models", header: responsesHeader(cfg, "application/json")}
	if err := fetchJSON(ctx, cfg, r, &list); err != nil {
		return nil, err
	}
	models := make([]ModelInfo, 0, len(list.Data))
	for _, m := range list.Data {
		models = append(models, ModelInfo{ID: m.ID, Capabilities: familyCapabilities(OpenAI, m.ID)})
	}
	return models, nil
}

// contextWindow is 0: OpenAI's model list does not report windows, so the
// built-in estimate applies.
func (responsesDialect) contextWindow(context.Context, *ProviderConfig, string) (int, error) {
	return 0, nil
}
