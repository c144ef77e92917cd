package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// compatDialect speaks the Chat Completions API of OpenAI-compatible
// servers (vLLM, OpenRouter, LM Studio, the llama.cpp server): a POST to
// {base}/chat/completions streamed as SSE data: chunks up to [DONE].
type compatDialect struct{}

func init() { dialects[OpenAICompatible] = compatDialect{} }

// compatBody is a Chat Completions request.
type compatBody struct {
	Model         string              `json:"model"`
	Messages      []compatMessage     `json:"messages"`
	Tools         []compatTool        `json:"tools,omitempty"`
	MaxTokens     int                 `json:"max_tokens"`
	Temperature   *float64            `json:"temperature,omitempty"`
	Stream        bool                `json:"stream"`
	StreamOptions compatStreamOptions `json:"stream_options"`
}

type compatStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// compatMessage is one message; Content is a string, or a list of
// compatPart when a user message carries images.
type compatMessage struct {
	Role       string           `json:"role"`
	Content    any              `json:"content"`
	ToolCalls  []compatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

type compatPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text,omitempty"`
	ImageURL *compatImageURL `json:"image_url,omitempty"`
}

type compatImageURL struct {
	URL string `json:"url"`
}

type compatToolCall struct {
	ID       string             `json:"id"`
	Type     string             `json:"type"`
	Function compatFunctionCall `json:"function"`
}

type compatFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// compatTool offers a function. Ollama takes tools in the same shape.
type compatTool struct {
	Type     string         `json:"type"`
	Function compatFunction `json:"function"`
}

type compatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

func compatTools(specs []ToolSpec) []compatTool {
	var out []compatTool
	for _, s := range specs {
		params := s.InputSchema
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, compatTool{Type: "function", Function: compatFunction{Name: s.Name, Description: s.Description, Parameters: params}})
	}
	return out
}

func (compatDialect) chat(cfg *ProviderConfig, req *ChatRequest) (request, error) {
	body := compatBody{
		Model:         cfg.Model,
		Messages:      compatMessages(req),
		Tools:         compatTools(req.Tools),
		MaxTokens:     req.MaxTokensOrDefault(),
		Temperature:   req.Temperature,
		Stream:        true,
		StreamOptions: compatStreamOptions{IncludeUsage: true},
	}
	return request{method: http.MethodPost, url: cfg.baseURL() + "/chat/completions", body: body, header: bearerHeader(cfg)}, nil
}

// compatMessages converts the conversation. A user message's tool results
// become tool messages ahead of the rest of it, because the API wants them
// right after the assistant message that made the calls.
func compatMessages(req *ChatRequest) []compatMessage {
	var out []compatMessage
	if req.System != "" {
		out = append(out, compatMessage{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		if m.Role == RoleAssistant {
			out = append(out, compatAssistant(m))
			continue
		}
		var parts []compatPart
		var texts []string
		images := false
		for _, p := range m.Content {
			switch p.Type {
			case PartToolResult:
				out = append(out, compatMessage{Role: "tool", ToolCallID: p.ToolUseID, Content: resultText(p)})
			case PartText:
				texts = append(texts, p.Text)
				parts = append(parts, compatPart{Type: "text", Text: p.Text})
			case PartImage:
				images = true
				url := "data:" + p.MediaType + ";base64," + p.Data
				parts = append(parts, compatPart{Type: "image_url", ImageURL: &compatImageURL{URL: url}})
			}
		}
		switch {
		case images:
			out = append(out, compatMessage{Role: "user", Content: parts})
		case len(texts) > 0:
			// Plain string content: some servers take nothing else.
			out = append(out, compatMessage{Role: "user", Content: strings.Join(texts, "\n\n")})
		}
	}
	return out
}

func compatAssistant(m Message) compatMessage {
	msg := compatMessage{Role: "assistant"}
	var texts []string
	for _, p := range m.Content {
		switch p.Type {
		case PartText:
			texts = append(texts, p.Text)
		case PartToolUse:
			args := string(p.Input)
			if len(p.Input) == 0 {
				args = "{}"
			}
			msg.ToolCalls = append(msg.ToolCalls, compatToolCall{ID: p.ID, Type: "function", Function: compatFunctionCall{Name: p.Name, Arguments: args}})
		}
	}
	msg.Content = strings.Join(texts, "\n\n")
	return msg
}

// resultText is a tool result as text, marked when the tool failed.
func resultText(p ContentPart) string {
	if p.IsError {
		return "Error: " + p.Content
	}
	return p.Content
}

// compatChunk is one chat.completion.chunk, or an error event.
type compatChunk struct {
	Choices []struct {
		Delta struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string      `json:"name"`
					Arguments exactString `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     *int `json:"prompt_tokens"`
		CompletionTokens *int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

func (compatDialect) decode(body io.Reader, t *turn) (StopReason, error) {
	r := newSSEReader(body)
	var stop StopReason
	finished := false
	ids := map[int]string{} // the id of the call open at each index
	for {
		ev, err := r.next()
		if errors.Is(err, io.EOF) {
			// llama.cpp-style servers end the body right after the chunk
			// with finish_reason (and usage) instead of sending [DONE]:
			// once the finish is seen, a clean end of the body is the end.
			if finished {
				return stop, nil
			}
			return "", errStreamEnded
		}
		if err != nil {
			return "", err
		}
		data := bytes.TrimSpace(ev.data)
		if string(data) == "[DONE]" {
			if !finished {
				return StopUnknown, nil
			}
			return stop, nil
		}
		if ev.name == "error" {
			return "", compatStreamError(data)
		}
		var c compatChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return "", malformed("event", err)
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			return "", compatStreamError(data)
		}
		if c.Usage != nil {
			t.setUsage(c.Usage.PromptTokens, c.Usage.CompletionTokens)
		}
		if len(c.Choices) == 0 {
			continue
		}
		choice := c.Choices[0]
		t.textDelta(choice.Delta.Content)
		for i, tc := range choice.Delta.ToolCalls {
			key := i
			if tc.Index != nil {
				key = *tc.Index
			}
			// Some servers number every call 0 and tell them apart by id:
			// a new id at an index closes the call open there.
			if prev, ok := ids[key]; ok && tc.ID != "" && tc.ID != prev {
				t.toolDone(key)
			}
			if tc.ID != "" {
				ids[key] = tc.ID
			}
			if tc.ID != "" || tc.Function.Name != "" {
				t.startTool(key, tc.ID, tc.Function.Name)
			}
			if tc.Function.Arguments != "" {
				t.toolArgs(key, string(tc.Function.Arguments))
			}
		}
		if fr := choice.FinishReason; fr != nil && *fr != "" {
			stop, finished = mapStop(*fr), true
		}
	}
}

// compatStreamError is the ProviderError of an in-stream error event of the
// OpenAI shape, {"error":{"message","type","code"}}.
func compatStreamError(data []byte) *ProviderError {
	msg, types := errorBody(data)
	return streamEventError(msg, types...)
}

// compatModel is one entry of GET /models, with the fields the servers
// use for the window and capabilities. The nested ones are decoded one by
// one so that a server's own shape for them does not fail the list.
type compatModel struct {
	ID                  string          `json:"id"`
	ContextLength       json.RawMessage `json:"context_length"`
	MaxContextLength    json.RawMessage `json:"max_context_length"`
	ContextWindow       json.RawMessage `json:"context_window"`
	MaxModelLen         json.RawMessage `json:"max_model_len"`
	TopProvider         json.RawMessage `json:"top_provider"`
	MaxTokenSize        json.RawMessage `json:"max_token_size"`
	SupportedParameters json.RawMessage `json:"supported_parameters"`
	Architecture        json.RawMessage `json:"architecture"`
}

func (m *compatModel) info() ModelInfo {
	var top struct {
		ContextLength json.RawMessage `json:"context_length"`
	}
	_ = json.Unmarshal(m.TopProvider, &top)
	info := ModelInfo{ID: m.ID}
	for _, raw := range []json.RawMessage{m.ContextLength, m.MaxContextLength, m.ContextWindow, m.MaxModelLen, top.ContextLength, m.MaxTokenSize} {
		if n := positiveInt(raw); n > 0 {
			info.ContextWindow = n
			break
		}
	}
	var params []string
	_ = json.Unmarshal(m.SupportedParameters, &params)
	var arch struct {
		InputModalities []string `json:"input_modalities"`
	}
	_ = json.Unmarshal(m.Architecture, &arch)
	has := func(list []string, words ...string) bool {
		return slices.ContainsFunc(list, func(s string) bool { return slices.Contains(words, s) })
	}
	if has(params, "tools") {
		info.Capabilities = append(info.Capabilities, CapTools)
	}
	if has(arch.InputModalities, "image") {
		info.Capabilities = append(info.Capabilities, CapVision)
	}
	if has(params, "reasoning", "include_reasoning") {
		info.Capabilities = append(info.Capabilities, CapThinking)
	}
	return info
}

// positiveInt reads a token count sent as a number or a numeric string;
// 0 when absent, null or anything else.
func positiveInt(raw json.RawMessage) int {
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0
		}
		var err error
		if f, err = strconv.ParseFloat(s, 64); err != nil {
			return 0
		}
	}
	if f < 1 || f > 1<<40 {
		return 0
	}
	return int(f)
}

func (compatDialect) models(ctx context.Context, cfg *ProviderConfig) ([]ModelInfo, error) {
	var list struct {
		Data []compatModel `json:"data"`
	}
	err := fetchJSON(ctx, cfg, request{method: http.MethodGet, url: cfg.baseURL() + "/models", header: bearerHeader(cfg)}, &list)
	var pe *ProviderError
	if errors.As(err, &pe) {
		switch pe.Status {
		case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
			return nil, errCannotList
		}
	}
	if err != nil {
		return nil, err
	}
	models := make([]ModelInfo, 0, len(list.Data))
	for i := range list.Data {
		if list.Data[i].ID != "" {
			models = append(models, list.Data[i].info())
		}
	}
	return models, nil
}

// contextWindow finds the model in the list; 0 when it is not there or the
// endpoint cannot list its models.
func (d compatDialect) contextWindow(ctx context.Context, cfg *ProviderConfig, model string) (int, error) {
	models, err := d.models(ctx, cfg)
	if errors.Is(err, errCannotList) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	for _, m := range models {
		if m.ID == model {
			return m.ContextWindow, nil
		}
	}
	return 0, nil
}
