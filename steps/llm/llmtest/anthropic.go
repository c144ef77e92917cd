package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// anthropic speaks the Messages API: POST /v1/messages with named SSE
// events, and /v1/models.
type anthropic struct{}

func (anthropic) chatPath() string           { return "/v1/messages" }
func (anthropic) baseURL(root string) string { return root }
func (anthropic) streamContentType() string  { return "text/event-stream; charset=utf-8" }

func (anthropic) authorized(h http.Header, key string) bool { return h.Get("x-api-key") == key }

func (anthropic) unauthorized() HTTPError {
	return HTTPError{Status: http.StatusUnauthorized, Type: "authentication_error", Message: "invalid x-api-key"}
}

func (anthropic) precheck(r *http.Request) *HTTPError {
	if r.Header.Get("anthropic-version") == "" {
		return &HTTPError{Status: http.StatusBadRequest, Message: "anthropic-version: header is required"}
	}
	return nil
}

func (anthropic) streaming(body map[string]any) bool { return body["stream"] == true }

// anthropicStop is a protocol stop reason in the API's words.
func anthropicStop(stop string) string {
	switch stop {
	case StopEndTurn:
		return "end_turn"
	case StopMaxTokens:
		return "max_tokens"
	case StopToolUse:
		return "tool_use"
	case StopSequence:
		return "stop_sequence"
	case StopContentFilter:
		return "refusal"
	}
	return undocumentedReason
}

// stopSequence is the matched sequence the API reports: the request's
// first, or a stand-in when it had none.
func (anthropic) stopSequence(c *call) any {
	if c.stop() != StopSequence {
		return nil
	}
	if seqs, ok := c.body["stop_sequences"].([]any); ok && len(seqs) > 0 {
		if s, ok := seqs[0].(string); ok {
			return s
		}
	}
	return "STOP"
}

func (a anthropic) frames(c *call) []frame {
	u := c.usage()
	ev := func(name string, data json.RawMessage) frame { return frame{b: sseEvent(name, data)} }
	fs := []frame{ev("message_start", object("type", "message_start", "message", object(
		"id", fmt.Sprintf("msg_llmtest_%d", c.n),
		"type", "message",
		"role", "assistant",
		"model", c.model(),
		"content", json.RawMessage("[]"),
		"stop_reason", nil,
		"stop_sequence", nil,
		"usage", object("input_tokens", u.InputTokens, "cache_creation_input_tokens", 0,
			"cache_read_input_tokens", 0, "output_tokens", 1),
	)))}
	ping := ev("ping", object("type", "ping"))
	pinged := false
	// The API pings once, right after the first block opens.
	start := func(index int, block json.RawMessage) {
		fs = append(fs, ev("content_block_start", object("type", "content_block_start", "index", index, "content_block", block)))
		if !pinged {
			fs, pinged = append(fs, ping), true
		}
	}
	stop := func(index int) {
		fs = append(fs, ev("content_block_stop", object("type", "content_block_stop", "index", index)))
	}
	index := 0
	if len(c.turn.Text) > 0 {
		start(index, object("type", "text", "text", ""))
		for _, chunk := range c.turn.Text {
			f := ev("content_block_delta", object("type", "content_block_delta", "index", index,
				"delta", object("type", "text_delta", "text", bytesString(chunk))))
			f.delta = true
			fs = append(fs, f)
		}
		stop(index)
		index++
	}
	for i, tc := range c.turn.ToolCalls {
		start(index, object("type", "tool_use", "id", c.toolID(i, "toolu"), "name", tc.Name, "input", json.RawMessage("{}")))
		for _, piece := range splitBytes(tc.Args, tc.Chunks) {
			fs = append(fs, ev("content_block_delta", object("type", "content_block_delta", "index", index,
				"delta", object("type", "input_json_delta", "partial_json", bytesString(piece)))))
		}
		stop(index)
		index++
	}
	if !pinged {
		fs = append(fs, ping)
	}
	fs = append(fs,
		ev("message_delta", object("type", "message_delta",
			"delta", object("stop_reason", anthropicStop(c.stop()), "stop_sequence", a.stopSequence(c)),
			"usage", object("output_tokens", u.OutputTokens))),
		ev("message_stop", object("type", "message_stop")),
	)
	return fs
}

func (anthropic) malformed(*call) []byte {
	return sseEvent("content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"broken`))
}

func (anthropic) streamError(_ *call, message string, _ int) [][]byte {
	return [][]byte{sseEvent("error", object("type", "error",
		"error", object("type", "overloaded_error", "message", message)))}
}

func (a anthropic) reply(c *call) json.RawMessage {
	var content []json.RawMessage
	if text := c.text(); text != "" {
		content = append(content, object("type", "text", "text", bytesString(text)))
	}
	for i, tc := range c.turn.ToolCalls {
		content = append(content, object("type", "tool_use", "id", c.toolID(i, "toolu"), "name", tc.Name, "input", rawArgs(tc.Args)))
	}
	u := c.usage()
	return object(
		"id", fmt.Sprintf("msg_llmtest_%d", c.n),
		"type", "message",
		"role", "assistant",
		"model", c.model(),
		"content", array(content...),
		"stop_reason", anthropicStop(c.stop()),
		"stop_sequence", a.stopSequence(c),
		"usage", object("input_tokens", u.InputTokens, "output_tokens", u.OutputTokens),
	)
}

func (anthropic) errorBody(e HTTPError) json.RawMessage {
	t := e.Type
	if t == "" {
		t = anthropicErrorType(e.Status)
	}
	return object("type", "error", "error", object("type", t, "message", e.Message))
}

// anthropicErrorType is the documented error type of an HTTP status.
func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 504:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func (a anthropic) serveModels(s *Server, w http.ResponseWriter, r *http.Request, _ []byte) bool {
	if r.Method != http.MethodGet {
		return false
	}
	if r.URL.Path == "/v1/models" {
		a.listModels(s, w, r)
		return true
	}
	id, ok := strings.CutPrefix(r.URL.Path, "/v1/models/")
	if !ok || id == "" {
		return false
	}
	for _, m := range s.opts.Models {
		if m.ID == id {
			s.writeJSON(w, http.StatusOK, anthropicModel(m))
			return true
		}
	}
	s.writeError(w, HTTPError{Status: http.StatusNotFound, Message: "model: " + id})
	return true
}

// listModels pages the models as the API does, with limit (default 20, 1
// to 1000) and after_id. An after_id the list does not hold gives an empty
// last page, so a client following a wrong cursor stops.
func (anthropic) listModels(s *Server, w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			s.writeError(w, HTTPError{Status: http.StatusBadRequest, Message: "limit: Input should be between 1 and 1000"})
			return
		}
		limit = n
	}
	models := s.opts.Models
	if after := q.Get("after_id"); after != "" {
		models = nil
		for i, m := range s.opts.Models {
			if m.ID == after {
				models = s.opts.Models[i+1:]
				break
			}
		}
	}
	hasMore := len(models) > limit
	if hasMore {
		models = models[:limit]
	}
	data := make([]json.RawMessage, 0, len(models))
	for _, m := range models {
		data = append(data, anthropicModel(m))
	}
	var first, last any
	if len(models) > 0 {
		first, last = models[0].ID, models[len(models)-1].ID
	}
	s.writeJSON(w, http.StatusOK, object("data", array(data...), "has_more", hasMore, "first_id", first, "last_id", last))
}

func anthropicModel(m Model) json.RawMessage {
	pairs := []any{"type", "model", "id", m.ID, "display_name", m.ID, "created_at", created.Format("2006-01-02T15:04:05Z")}
	if m.ContextWindow > 0 {
		pairs = append(pairs, "max_input_tokens", m.ContextWindow)
	}
	return object(pairs...)
}
