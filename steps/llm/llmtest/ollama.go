package llmtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ollama speaks Ollama's native API: POST /api/chat with newline-delimited
// JSON, /api/tags and /api/show.
type ollama struct{}

func (ollama) chatPath() string           { return "/api/chat" }
func (ollama) baseURL(root string) string { return root }
func (ollama) streamContentType() string  { return "application/x-ndjson" }

func (ollama) authorized(h http.Header, key string) bool { return bearer(h, key) }
func (ollama) unauthorized() HTTPError {
	return HTTPError{Status: http.StatusUnauthorized, Message: "unauthorized"}
}
func (ollama) precheck(*http.Request) *HTTPError { return nil }

// streaming: Ollama streams unless the request says "stream": false.
func (ollama) streaming(body map[string]any) bool { return body["stream"] != false }

func (ollama) errorBody(e HTTPError) json.RawMessage { return object("error", e.Message) }

// ollamaDone is a protocol stop reason as a done_reason. Ollama reports
// "stop" after tool calls, and has no stop-sequence or content-filter
// reason of its own.
func ollamaDone(stop string) string {
	switch stop {
	case StopEndTurn, StopToolUse, StopSequence, StopContentFilter:
		return "stop"
	case StopMaxTokens:
		return "length"
	}
	return undocumentedReason
}

func (ollama) createdAt() string { return created.Format(time.RFC3339Nano) }

// toolCalls is a message's tool_calls: arguments as an object, and the
// id and index newer versions send.
func (ollama) toolCalls(c *call) json.RawMessage {
	calls := make([]json.RawMessage, 0, len(c.turn.ToolCalls))
	for i, tc := range c.turn.ToolCalls {
		calls = append(calls, object("id", c.toolID(i, "call"),
			"function", object("index", i, "name", tc.Name, "arguments", rawArgs(tc.Args))))
	}
	return array(calls...)
}

// final is the last object of a reply, with done, done_reason and the
// counts and durations.
func (o ollama) final(c *call, msg json.RawMessage) json.RawMessage {
	u := c.usage()
	return object("model", c.model(), "created_at", o.createdAt(), "message", msg,
		"done", true, "done_reason", ollamaDone(c.stop()),
		"total_duration", 1_500_000_000, "load_duration", 100_000_000,
		"prompt_eval_count", u.InputTokens, "prompt_eval_duration", 400_000_000,
		"eval_count", u.OutputTokens, "eval_duration", 1_000_000_000)
}

func (o ollama) frames(c *call) []frame {
	line := func(msg json.RawMessage) []byte {
		return ndjsonLine(object("model", c.model(), "created_at", o.createdAt(), "message", msg, "done", false))
	}
	var fs []frame
	for _, chunk := range c.turn.Text {
		fs = append(fs, frame{b: line(object("role", "assistant", "content", bytesString(chunk))), delta: true})
	}
	if len(c.turn.ToolCalls) > 0 {
		fs = append(fs, frame{b: line(object("role", "assistant", "content", "", "tool_calls", o.toolCalls(c)))})
	}
	return append(fs, frame{b: ndjsonLine(o.final(c, object("role", "assistant", "content", "")))})
}

func (o ollama) malformed(c *call) []byte {
	return ndjsonLine([]byte(`{"model":"` + c.model() + `","created_at":"` + o.createdAt() + `","message":{"role":"assistant","content":"broken`))
}

func (ollama) streamError(_ *call, message string, _ int) [][]byte {
	return [][]byte{ndjsonLine(object("error", message))}
}

func (o ollama) reply(c *call) json.RawMessage {
	msg := []any{"role", "assistant", "content", bytesString(c.text())}
	if len(c.turn.ToolCalls) > 0 {
		msg = append(msg, "tool_calls", o.toolCalls(c))
	}
	return o.final(c, object(msg...))
}

func (o ollama) serveModels(s *Server, w http.ResponseWriter, r *http.Request, body []byte) bool {
	switch {
	case r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("Ollama is running"))
	case r.URL.Path == "/api/version" && r.Method == http.MethodGet:
		s.writeJSON(w, http.StatusOK, object("version", "0.12.6"))
	case r.URL.Path == "/api/tags" && r.Method == http.MethodGet:
		models := make([]json.RawMessage, 0, len(s.opts.Models))
		for _, m := range s.opts.Models {
			models = append(models, object("name", m.ID, "model", m.ID, "modified_at", o.createdAt(),
				"size", 4_920_753_328, "digest", digest(m.ID), "details", ollamaDetails(m)))
		}
		s.writeJSON(w, http.StatusOK, object("models", array(models...)))
	case r.URL.Path == "/api/show" && r.Method == http.MethodPost:
		o.show(s, w, body)
	default:
		return false
	}
	return true
}

// show answers /api/show, which takes the name as "model" (or the older
// "name") and resolves a name without a tag to ":latest".
func (o ollama) show(s *Server, w http.ResponseWriter, body []byte) {
	var req struct{ Model, Name string }
	if err := json.Unmarshal(body, &req); err != nil {
		s.writeError(w, HTTPError{Status: http.StatusBadRequest, Message: "invalid request body: " + err.Error()})
		return
	}
	name := req.Model
	if name == "" {
		name = req.Name
	}
	if name == "" {
		s.writeError(w, HTTPError{Status: http.StatusBadRequest, Message: "model is required"})
		return
	}
	for _, m := range s.opts.Models {
		if withTag(m.ID) != withTag(name) {
			continue
		}
		family := ollamaFamily(m)
		info := []any{"general.architecture", family, "general.parameter_count", 8_030_261_248}
		if m.ContextWindow > 0 {
			info = append(info, family+".context_length", m.ContextWindow)
		}
		caps := m.Capabilities
		if caps == nil {
			caps = []string{"completion"}
		}
		s.writeJSON(w, http.StatusOK, object(
			"license", "",
			"modelfile", "# Modelfile generated by llmtest\nFROM "+m.ID+"\n",
			"parameters", "",
			"template", "{{ .Prompt }}",
			"details", ollamaDetails(m),
			"model_info", object(info...),
			"capabilities", caps,
			"modified_at", o.createdAt(),
		))
		return
	}
	s.writeError(w, HTTPError{Status: http.StatusNotFound, Message: fmt.Sprintf("model '%s' not found", name)})
}

func withTag(name string) string {
	if strings.Contains(name, ":") {
		return name
	}
	return name + ":latest"
}

func ollamaFamily(m Model) string {
	if m.Family != "" {
		return m.Family
	}
	return "llama"
}

func ollamaDetails(m Model) json.RawMessage {
	family := ollamaFamily(m)
	return object("parent_model", "", "format", "gguf", "family", family, "families", []string{family},
		"parameter_size", m.ParameterSize, "quantization_level", m.Quantization)
}

// digest is a stable stand-in for a model's content digest.
func digest(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}
