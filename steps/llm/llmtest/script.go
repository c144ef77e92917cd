package llmtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The protocol's stop reasons (runtime-protocol.md, chat/send), for Turn.Stop.
// Each kind encodes them in its own words; StopUnknown encodes a reason the
// provider never documents.
const (
	StopEndTurn       = "endTurn"
	StopMaxTokens     = "maxTokens"
	StopToolUse       = "toolUse"
	StopSequence      = "stopSequence"
	StopContentFilter = "contentFilter"
	StopUnknown       = "unknown"
)

// undocumentedReason is what StopUnknown puts on the wire.
const undocumentedReason = "weird_reason"

// Turn is one scripted model response: one HTTP reply to one chat request.
// The zero Turn is an empty answer that ends the turn.
type Turn struct {
	// Text chunks, streamed in order as separate deltas.
	Text []string
	// ToolCalls follow the text.
	ToolCalls []ToolCall
	// Usage is the reported usage; nil means {InputTokens: 10, OutputTokens: 5}.
	Usage *Usage
	// Stop is the protocol stop reason (the Stop* constants), encoded in
	// the provider's own words. "" means StopToolUse when there are tool
	// calls, else StopEndTurn.
	Stop string
	// Delay is the pause between streamed events; every event is flushed.
	Delay time.Duration
	// Gap is one extra pause after the first event: an idle gap mid-stream.
	Gap time.Duration
	// HeaderDelay is the pause before the response headers.
	HeaderDelay time.Duration
	// Error answers with this HTTP error instead of a stream.
	Error *HTTPError
	// CutAfter > 0 aborts the connection after this many events (SSE events
	// or NDJSON lines, counting every one the kind sends): the client sees
	// the body end without its terminal event, as io.ErrUnexpectedEOF.
	CutAfter int
	// Malformed inserts one event whose JSON is broken after the first
	// text delta (after the first event when there is no text). The rest
	// of the stream follows it unchanged.
	Malformed bool
	// StreamError sends the provider's in-stream error event with this
	// message after the first text delta (after the first event when there
	// is no text), then ends the body cleanly.
	StreamError string
}

// ToolCall is one scripted tool call.
type ToolCall struct {
	// ID is the call's id; "" generates a stable one from the chat request
	// number and the call's position (toolu_llmtest_1_1, call_llmtest_1_1).
	ID   string
	Name string
	// Args is the raw JSON text of the arguments, such as {"path":"a.go"}.
	// It is sent as given, so a test may send broken JSON on purpose
	// (except to Ollama, whose arguments travel as a JSON object).
	Args string
	// Chunks splits Args into this many pieces across deltas (0 and 1 mean
	// one piece). The split is by bytes and may fall inside a multi-byte
	// UTF-8 character: the pieces then carry those raw bytes inside their
	// JSON strings, and only the concatenated bytes are valid UTF-8. Ollama
	// sends arguments whole, so Chunks does not apply there.
	Chunks int
}

// Usage is the token count a turn reports.
type Usage struct{ InputTokens, OutputTokens int }

// HTTPError is an error reply in the provider's own error body shape.
type HTTPError struct {
	Status  int
	Message string
	// Type is the provider's error type (anthropic "rate_limit_error",
	// openai "invalid_request_error"); "" derives it from Status.
	Type string
	// RetryAfter is the Retry-After header value, such as "7"; "" sends none.
	RetryAfter string
}

// TextTurn is a turn that streams the given text chunks and ends the turn.
func TextTurn(chunks ...string) Turn { return Turn{Text: chunks} }

// ToolTurn is a turn that calls the given tools.
func ToolTurn(calls ...ToolCall) Turn { return Turn{ToolCalls: calls} }

// ErrorTurn is a turn that answers with an HTTP error.
func ErrorTurn(status int, message string) Turn {
	return Turn{Error: &HTTPError{Status: status, Message: message}}
}

// validate reports the mistakes in a scripted turn that would otherwise
// surface as a puzzling client failure.
func (t Turn) validate(kind Kind) []string {
	var bad []string
	switch t.Stop {
	case "", StopEndTurn, StopMaxTokens, StopToolUse, StopSequence, StopContentFilter, StopUnknown:
	default:
		bad = append(bad, fmt.Sprintf("Stop %q: want one of endTurn, maxTokens, toolUse, stopSequence, contentFilter, unknown or empty", t.Stop))
	}
	if t.CutAfter < 0 {
		bad = append(bad, fmt.Sprintf("CutAfter %d: want 0 (no cut) or more", t.CutAfter))
	}
	if t.Error != nil && (t.Error.Status < 400 || t.Error.Status > 599) {
		bad = append(bad, fmt.Sprintf("Error.Status %d: want 400 to 599", t.Error.Status))
	}
	for i, tc := range t.ToolCalls {
		if tc.Chunks < 0 {
			bad = append(bad, fmt.Sprintf("ToolCalls[%d].Chunks %d: want 0 or more", i, tc.Chunks))
		}
		if kind == Ollama && tc.Args != "" && !isJSONObject(tc.Args) {
			bad = append(bad, fmt.Sprintf("ToolCalls[%d].Args %q: Ollama sends arguments as a JSON object, so they must be one", i, tc.Args))
		}
	}
	return bad
}

// call is one chat request being answered with its turn.
type call struct {
	turn Turn
	n    int            // the chat request's number, from 1; it makes ids stable
	body map[string]any // the decoded request body
}

// model echoes the request's model, as the real APIs do.
func (c *call) model() string {
	if m, ok := c.body["model"].(string); ok {
		return m
	}
	return "llmtest-model"
}

func (c *call) usage() Usage {
	if c.turn.Usage != nil {
		return *c.turn.Usage
	}
	return Usage{InputTokens: 10, OutputTokens: 5}
}

// stop is the turn's protocol stop reason with the default resolved.
func (c *call) stop() string {
	switch {
	case c.turn.Stop != "":
		return c.turn.Stop
	case len(c.turn.ToolCalls) > 0:
		return StopToolUse
	default:
		return StopEndTurn
	}
}

func (c *call) text() string { return strings.Join(c.turn.Text, "") }

// toolID is the id of the i-th tool call, generated with prefix when the
// script leaves it empty.
func (c *call) toolID(i int, prefix string) string {
	if id := c.turn.ToolCalls[i].ID; id != "" {
		return id
	}
	return fmt.Sprintf("%s_llmtest_%d_%d", prefix, c.n, i+1)
}

// splitBytes cuts s into n pieces of nearly equal byte length, ignoring
// rune boundaries on purpose. n < 2 gives s whole; n is capped at len(s) so
// that no piece is empty.
func splitBytes(s string, n int) []string {
	if n > len(s) {
		n = len(s)
	}
	if n < 2 {
		return []string{s}
	}
	pieces := make([]string, n)
	for i := range n {
		pieces[i] = s[i*len(s)/n : (i+1)*len(s)/n]
	}
	return pieces
}

func isJSONObject(s string) bool {
	var v map[string]any
	return json.Unmarshal([]byte(s), &v) == nil && v != nil
}

// created is the fixed creation time the fake reports, so that output is
// the same on every run.
var created = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// reportf fails the test that owns the server. Errorf is safe from any
// goroutine, unlike Fatalf.
func reportf(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Errorf("llmtest: "+format, args...)
}
