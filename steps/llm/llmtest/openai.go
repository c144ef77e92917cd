package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// openai speaks the Responses API: POST /v1/responses with named SSE events
// that carry a sequence_number, and /v1/models.
type openai struct{}

func (openai) chatPath() string           { return "/v1/responses" }
func (openai) baseURL(root string) string { return root + "/v1" }
func (openai) streamContentType() string  { return "text/event-stream; charset=utf-8" }

func (openai) authorized(h http.Header, key string) bool { return bearer(h, key) }
func (openai) unauthorized() HTTPError                   { return openaiUnauthorized() }
func (openai) precheck(*http.Request) *HTTPError         { return nil }
func (openai) streaming(body map[string]any) bool        { return body["stream"] == true }

// bearer reports whether h carries key as a bearer token.
func bearer(h http.Header, key string) bool {
	return h.Get("Authorization") == "Bearer "+key
}

func openaiUnauthorized() HTTPError {
	return HTTPError{Status: http.StatusUnauthorized, Type: "invalid_request_error", Message: "Incorrect API key provided."}
}

// openaiEnding is how a Responses stream ends for a protocol stop reason:
// the terminal event, the response status and incomplete_details.reason.
// The API has no stop sequences, so stopSequence ends like endTurn.
func openaiEnding(stop string) (event, status, reason string) {
	switch stop {
	case StopEndTurn, StopToolUse, StopSequence:
		return "response.completed", "completed", ""
	case StopMaxTokens:
		return "response.incomplete", "incomplete", "max_output_tokens"
	case StopContentFilter:
		return "response.incomplete", "incomplete", "content_filter"
	}
	return "response.incomplete", "incomplete", undocumentedReason
}

// ids of the response and its output items.
func (openai) respID(c *call) string { return fmt.Sprintf("resp_llmtest_%d", c.n) }
func (openai) msgID(c *call) string  { return fmt.Sprintf("msg_llmtest_%d", c.n) }
func (openai) fcID(c *call, i int) string {
	return fmt.Sprintf("fc_llmtest_%d_%d", c.n, i+1)
}

// response is the response object of the lifecycle events and the reply.
func (o openai) response(c *call, status, reason string, output []json.RawMessage, usage bool) json.RawMessage {
	var incomplete, u any
	if reason != "" {
		incomplete = object("reason", reason)
	}
	if usage {
		n := c.usage()
		u = object(
			"input_tokens", n.InputTokens,
			"input_tokens_details", object("cached_tokens", 0),
			"output_tokens", n.OutputTokens,
			"output_tokens_details", object("reasoning_tokens", 0),
			"total_tokens", n.InputTokens+n.OutputTokens,
		)
	}
	return object(
		"id", o.respID(c),
		"object", "response",
		"created_at", created.Unix(),
		"status", status,
		"error", nil,
		"incomplete_details", incomplete,
		"model", c.model(),
		"output", array(output...),
		"usage", u,
	)
}

// items are the finished output items of a turn, as response.completed
// and the non-streaming reply list them.
func (o openai) items(c *call, itemStatus string) []json.RawMessage {
	var out []json.RawMessage
	if len(c.turn.Text) > 0 {
		out = append(out, o.message(c, itemStatus, array(o.textPart(c.text()))))
	}
	for i, tc := range c.turn.ToolCalls {
		out = append(out, o.functionCall(c, i, tc, "completed", tc.Args))
	}
	return out
}

func (o openai) message(c *call, status string, content json.RawMessage) json.RawMessage {
	return object("id", o.msgID(c), "type", "message", "status", status, "content", content, "role", "assistant")
}

func (openai) textPart(text string) json.RawMessage {
	return object("type", "output_text", "annotations", json.RawMessage("[]"), "logprobs", json.RawMessage("[]"), "text", bytesString(text))
}

func (o openai) functionCall(c *call, i int, tc ToolCall, status, args string) json.RawMessage {
	return object("id", o.fcID(c, i), "type", "function_call", "status", status,
		"arguments", bytesString(args), "call_id", c.toolID(i, "call"), "name", tc.Name)
}

func (o openai) frames(c *call) []frame {
	var fs []frame
	ev := func(typ string, pairs ...any) *frame {
		pairs = append(append([]any{"type", typ}, pairs...), "sequence_number", len(fs))
		fs = append(fs, frame{b: sseEvent(typ, object(pairs...))})
		return &fs[len(fs)-1]
	}
	event, status, reason := openaiEnding(c.stop())
	itemStatus := "completed"
	if status == "incomplete" {
		itemStatus = "incomplete"
	}
	ev("response.created", "response", o.response(c, "in_progress", "", nil, false))
	ev("response.in_progress", "response", o.response(c, "in_progress", "", nil, false))
	index := 0
	if len(c.turn.Text) > 0 {
		id, text := o.msgID(c), c.text()
		ev("response.output_item.added", "output_index", index, "item", o.message(c, "in_progress", json.RawMessage("[]")))
		ev("response.content_part.added", "item_id", id, "output_index", index, "content_index", 0, "part", o.textPart(""))
		for _, chunk := range c.turn.Text {
			ev("response.output_text.delta", "item_id", id, "output_index", index, "content_index", 0,
				"delta", bytesString(chunk), "logprobs", json.RawMessage("[]")).delta = true
		}
		ev("response.output_text.done", "item_id", id, "output_index", index, "content_index", 0,
			"text", bytesString(text), "logprobs", json.RawMessage("[]"))
		ev("response.content_part.done", "item_id", id, "output_index", index, "content_index", 0, "part", o.textPart(text))
		ev("response.output_item.done", "output_index", index, "item", o.message(c, itemStatus, array(o.textPart(text))))
		index++
	}
	for i, tc := range c.turn.ToolCalls {
		id := o.fcID(c, i)
		ev("response.output_item.added", "output_index", index, "item", o.functionCall(c, i, tc, "in_progress", ""))
		for _, piece := range splitBytes(tc.Args, tc.Chunks) {
			ev("response.function_call_arguments.delta", "item_id", id, "output_index", index, "delta", bytesString(piece))
		}
		ev("response.function_call_arguments.done", "item_id", id, "output_index", index, "arguments", bytesString(tc.Args))
		ev("response.output_item.done", "output_index", index, "item", o.functionCall(c, i, tc, "completed", tc.Args))
		index++
	}
	ev(event, "response", o.response(c, status, reason, o.items(c, itemStatus), true))
	return fs
}

func (o openai) malformed(c *call) []byte {
	return sseEvent("response.output_text.delta",
		[]byte(`{"type":"response.output_text.delta","item_id":"`+o.msgID(c)+`","output_index":0,"content_index":0,"delta":"broken`))
}

func (o openai) streamError(c *call, message string, seq int) [][]byte {
	return [][]byte{
		sseEvent("error", object("type", "error", "code", "server_error", "message", message, "param", nil, "sequence_number", seq)),
		sseEvent("response.failed", object("type", "response.failed",
			"response", o.failed(c, message), "sequence_number", seq+1)),
	}
}

// failed is the response object of response.failed.
func (o openai) failed(c *call, message string) json.RawMessage {
	return object("id", o.respID(c), "object", "response", "created_at", created.Unix(), "status", "failed",
		"error", object("code", "server_error", "message", message), "incomplete_details", nil,
		"model", c.model(), "output", json.RawMessage("[]"), "usage", nil)
}

func (o openai) reply(c *call) json.RawMessage {
	_, status, reason := openaiEnding(c.stop())
	itemStatus := "completed"
	if status == "incomplete" {
		itemStatus = "incomplete"
	}
	return o.response(c, status, reason, o.items(c, itemStatus), true)
}

func (openai) errorBody(e HTTPError) json.RawMessage { return openaiErrorBody(e) }

// errorHeaders adds retry-after-ms beside Retry-After, as the API does.
func (openai) errorHeaders(h http.Header, e HTTPError) {
	if secs, err := strconv.ParseFloat(e.RetryAfter, 64); err == nil {
		h.Set("retry-after-ms", strconv.FormatInt(int64(secs*1000), 10))
	}
}

// openaiErrorBody is the error shape of the Responses and Chat Completions
// APIs (and of the endpoints compatible with them).
func openaiErrorBody(e HTTPError) json.RawMessage {
	typ, code := openaiErrorType(e.Status)
	if e.Type != "" {
		typ = e.Type
	}
	return object("error", object("message", e.Message, "type", typ, "param", nil, "code", code))
}

// openaiErrorType is the error type and code the API sends with an HTTP
// status.
func openaiErrorType(status int) (typ string, code any) {
	switch {
	case status == 401:
		return "invalid_request_error", "invalid_api_key"
	case status == 403:
		return "permission_error", nil
	case status == 404:
		return "invalid_request_error", "not_found"
	case status == 429:
		return "requests", "rate_limit_exceeded"
	case status >= 500:
		return "server_error", nil
	}
	return "invalid_request_error", nil
}

func (openai) serveModels(s *Server, w http.ResponseWriter, r *http.Request, _ []byte) bool {
	if r.Method != http.MethodGet {
		return false
	}
	entry := func(m Model) json.RawMessage {
		return object("id", m.ID, "object", "model", "created", created.Unix(), "owned_by", "llmtest")
	}
	if r.URL.Path == "/v1/models" {
		data := make([]json.RawMessage, 0, len(s.opts.Models))
		for _, m := range s.opts.Models {
			data = append(data, entry(m))
		}
		s.writeJSON(w, http.StatusOK, object("object", "list", "data", array(data...)))
		return true
	}
	id, ok := strings.CutPrefix(r.URL.Path, "/v1/models/")
	if !ok || id == "" {
		return false
	}
	for _, m := range s.opts.Models {
		if m.ID == id {
			s.writeJSON(w, http.StatusOK, entry(m))
			return true
		}
	}
	s.writeError(w, HTTPError{Status: http.StatusNotFound, Message: fmt.Sprintf("The model '%s' does not exist", id)})
	return true
}
