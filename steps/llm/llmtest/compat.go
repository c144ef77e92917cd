package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// compat speaks Chat Completions as OpenAI-compatible endpoints do (vLLM,
// LM Studio, OpenRouter, llama.cpp): POST /v1/chat/completions with unnamed
// SSE events ending in data: [DONE], and /v1/models.
type compat struct{}

func (compat) chatPath() string           { return "/v1/chat/completions" }
func (compat) baseURL(root string) string { return root + "/v1" }
func (compat) streamContentType() string  { return "text/event-stream; charset=utf-8" }

func (compat) authorized(h http.Header, key string) bool { return bearer(h, key) }
func (compat) unauthorized() HTTPError                   { return openaiUnauthorized() }
func (compat) precheck(*http.Request) *HTTPError         { return nil }
func (compat) streaming(body map[string]any) bool        { return body["stream"] == true }
func (compat) errorBody(e HTTPError) json.RawMessage     { return openaiErrorBody(e) }

// compatFinish is a protocol stop reason as a finish_reason. Chat
// Completions says "stop" for a stop sequence too.
func compatFinish(stop string) string {
	switch stop {
	case StopEndTurn, StopSequence:
		return "stop"
	case StopMaxTokens:
		return "length"
	case StopToolUse:
		return "tool_calls"
	case StopContentFilter:
		return "content_filter"
	}
	return undocumentedReason
}

// includeUsage reports whether the request asked for the usage chunk.
func includeUsage(body map[string]any) bool {
	opts, _ := body["stream_options"].(map[string]any)
	return opts["include_usage"] == true
}

func (compat) id(c *call) string { return fmt.Sprintf("chatcmpl-llmtest-%d", c.n) }

func (compat) usage(c *call) json.RawMessage {
	u := c.usage()
	return object("prompt_tokens", u.InputTokens, "completion_tokens", u.OutputTokens,
		"total_tokens", u.InputTokens+u.OutputTokens)
}

func (cp compat) frames(c *call) []frame {
	withUsage := includeUsage(c.body)
	chunk := func(choices json.RawMessage, usage any) []byte {
		pairs := []any{"id", cp.id(c), "object", "chat.completion.chunk", "created", created.Unix(),
			"model", c.model(), "choices", choices}
		if withUsage {
			// With include_usage, OpenAI sends "usage": null on every
			// chunk but the last.
			pairs = append(pairs, "usage", usage)
		}
		return sseData(object(pairs...))
	}
	choice := func(delta json.RawMessage, finish any) []byte {
		return chunk(array(object("index", 0, "delta", delta, "logprobs", nil, "finish_reason", finish)), nil)
	}
	fs := []frame{{b: choice(object("role", "assistant", "content", ""), nil)}}
	for _, text := range c.turn.Text {
		fs = append(fs, frame{b: choice(object("content", bytesString(text)), nil), delta: true})
	}
	for i, tc := range c.turn.ToolCalls {
		fs = append(fs, frame{b: choice(object("tool_calls", array(object("index", i, "id", c.toolID(i, "call"),
			"type", "function", "function", object("name", tc.Name, "arguments", "")))), nil)})
		for _, piece := range splitBytes(tc.Args, tc.Chunks) {
			fs = append(fs, frame{b: choice(object("tool_calls", array(object("index", i,
				"function", object("arguments", bytesString(piece))))), nil)})
		}
	}
	fs = append(fs, frame{b: choice(json.RawMessage("{}"), compatFinish(c.stop()))})
	if withUsage {
		fs = append(fs, frame{b: chunk(json.RawMessage("[]"), cp.usage(c))})
	}
	return append(fs, frame{b: sseData([]byte("[DONE]"))})
}

func (cp compat) malformed(c *call) []byte {
	return sseData([]byte(`{"id":"` + cp.id(c) + `","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"broken`))
}

// streamError is the error chunk OpenAI-compatible servers send when
// generation fails after the headers went out; no [DONE] follows it.
func (compat) streamError(_ *call, message string, _ int) [][]byte {
	return [][]byte{sseData(object("error", object("message", message, "type", "server_error", "param", nil, "code", nil)))}
}

func (cp compat) reply(c *call) json.RawMessage {
	msg := []any{"role", "assistant", "content", nil}
	if len(c.turn.Text) > 0 {
		msg[3] = bytesString(c.text())
	}
	if len(c.turn.ToolCalls) > 0 {
		calls := make([]json.RawMessage, 0, len(c.turn.ToolCalls))
		for i, tc := range c.turn.ToolCalls {
			calls = append(calls, object("id", c.toolID(i, "call"), "type", "function",
				"function", object("name", tc.Name, "arguments", bytesString(tc.Args))))
		}
		msg = append(msg, "tool_calls", array(calls...))
	}
	return object("id", cp.id(c), "object", "chat.completion", "created", created.Unix(), "model", c.model(),
		"choices", array(object("index", 0, "message", object(msg...), "logprobs", nil, "finish_reason", compatFinish(c.stop()))),
		"usage", cp.usage(c))
}

func (compat) serveModels(s *Server, w http.ResponseWriter, r *http.Request, _ []byte) bool {
	if r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
		return false
	}
	if s.opts.NoModels {
		s.writeError(w, HTTPError{Status: http.StatusNotFound, Message: "llmtest: this endpoint cannot list models"})
		return true
	}
	data := make([]json.RawMessage, 0, len(s.opts.Models))
	for _, m := range s.opts.Models {
		data = append(data, compatModel(m))
	}
	s.writeJSON(w, http.StatusOK, object("object", "list", "data", array(data...)))
	return true
}

// compatModel is a /models entry with the context window in the field the
// model names, and its capabilities the OpenRouter way when it has any.
func compatModel(m Model) json.RawMessage {
	pairs := []any{"id", m.ID, "object", "model", "created", created.Unix(), "owned_by", "llmtest"}
	if m.ContextWindow > 0 {
		field := m.ContextField
		if field == "" {
			field = "context_length"
		}
		if outer, inner, nested := strings.Cut(field, "."); nested {
			pairs = append(pairs, outer, object(inner, m.ContextWindow))
		} else {
			pairs = append(pairs, field, m.ContextWindow)
		}
	}
	if m.Capabilities != nil {
		params := []string{"max_tokens", "temperature"}
		if slices.Contains(m.Capabilities, "tools") {
			params = append(params, "tools", "tool_choice")
		}
		if slices.Contains(m.Capabilities, "thinking") {
			params = append(params, "reasoning", "include_reasoning")
		}
		inputs := []string{"text"}
		if slices.Contains(m.Capabilities, "vision") {
			inputs = append(inputs, "image")
		}
		pairs = append(pairs, "supported_parameters", params,
			"architecture", object("input_modalities", inputs, "output_modalities", []string{"text"}))
	}
	return object(pairs...)
}
