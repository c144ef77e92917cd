package llm

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// StopReason says why the model stopped.
type StopReason string

// The protocol's stop reasons.
const (
	StopEndTurn       StopReason = "endTurn"
	StopMaxTokens     StopReason = "maxTokens"
	StopToolUse       StopReason = "toolUse"
	StopSequence      StopReason = "stopSequence"
	StopContentFilter StopReason = "contentFilter"
	StopUnknown       StopReason = "unknown"
)

// Usage counts tokens.
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
}

// ToolCall is a complete tool call with its parsed input. When the model's
// arguments are not a JSON object, Input is {} and ParseError says why
// (with RawInput, what the model sent), so the caller can tell the model.
type ToolCall struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Input      json.RawMessage `json:"input"`
	ParseError string          `json:"parseError,omitempty"`
	RawInput   string          `json:"rawInput,omitempty"`
}

// EventType names a streaming event of chat/send.
type EventType string

// The chat/event types.
const (
	EventTextDelta EventType = "textDelta"
	EventToolCall  EventType = "toolCall"
	EventUsage     EventType = "usage"
	EventDone      EventType = "done"
)

// Event is one chat/event: fields by type as in the protocol's table.
type Event struct {
	Type EventType `json:"type"`
	// textDelta
	Text string `json:"text,omitempty"`
	// toolCall
	*ToolCall
	// usage
	Usage *Usage `json:"usage,omitempty"`
	// done
	StopReason StopReason `json:"stopReason,omitempty"`
}

// ChatResult combines a turn's events.
type ChatResult struct {
	Text       string     `json:"text"`
	ToolCalls  []ToolCall `json:"toolCalls"`
	StopReason StopReason `json:"stopReason"`
	Usage      Usage      `json:"usage"`
}

// turn assembles one streamed response from a provider's events and emits
// the protocol's events as it goes: text at once, a tool call when its
// arguments are complete, usage and done at the end.
type turn struct {
	emit      func(Event)
	text      strings.Builder
	partial   string         // the start of a character split across deltas
	calls     []*pendingCall // in the order they started
	usage     Usage
	usageSeen bool
	stop      StopReason
	finished  bool
}

type pendingCall struct {
	key      int
	id, name string
	args     strings.Builder
	done     bool
	call     ToolCall
}

func newTurn(emit func(Event)) *turn {
	if emit == nil {
		emit = func(Event) {}
	}
	return &turn{emit: emit}
}

// textDelta adds text. Deltas are decoded byte for byte, so a character a
// provider split across two deltas is held back until it is whole: no event
// carries half a character.
func (t *turn) textDelta(s string) {
	s = t.partial + s
	t.partial = ""
	if cut := incompleteTail(s); cut < len(s) {
		s, t.partial = s[:cut], s[cut:]
	}
	if s == "" {
		return
	}
	t.text.WriteString(s)
	t.emit(Event{Type: EventTextDelta, Text: s})
}

// incompleteTail returns where an unfinished UTF-8 sequence at the end of s
// starts, or len(s) when s ends whole.
func incompleteTail(s string) int {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return i
			}
			break
		}
	}
	return len(s)
}

// startTool opens a tool call; key is the provider's index of the call.
func (t *turn) startTool(key int, id, name string) {
	if c := t.find(key); c != nil && !c.done {
		if id != "" {
			c.id = id
		}
		if name != "" {
			c.name = name
		}
		return
	}
	t.calls = append(t.calls, &pendingCall{key: key, id: id, name: name})
}

// toolArgs appends a piece of a call's JSON arguments. Pieces are
// concatenated as they come and parsed only when the call is complete, so a
// split anywhere (inside a string, an escape, a character) is harmless.
func (t *turn) toolArgs(key int, piece string) {
	c := t.find(key)
	if c == nil || c.done {
		t.startTool(key, "", "")
		c = t.find(key)
	}
	c.args.WriteString(piece)
}

// toolDone completes a call: its arguments are parsed and it is emitted.
func (t *turn) toolDone(key int) {
	if c := t.find(key); c != nil && !c.done {
		t.complete(c)
	}
}

// fullTool records a call that arrived whole (Ollama).
func (t *turn) fullTool(id, name string, input json.RawMessage) {
	key := len(t.calls) + 1<<20 // never collides with a provider index
	t.startTool(key, id, name)
	t.toolArgs(key, string(input))
	t.toolDone(key)
}

func (t *turn) find(key int) *pendingCall {
	for i := len(t.calls) - 1; i >= 0; i-- {
		if t.calls[i].key == key {
			return t.calls[i]
		}
	}
	return nil
}

func (t *turn) complete(c *pendingCall) {
	c.done = true
	c.call = ToolCall{ID: c.id, Name: c.name, Input: json.RawMessage("{}")}
	raw := strings.TrimSpace(c.args.String())
	switch {
	case raw == "" || raw == "null":
	case !json.Valid([]byte(raw)):
		c.call.ParseError = "the arguments are not valid JSON"
		c.call.RawInput = raw
	case raw[0] != '{':
		c.call.ParseError = "the arguments are not a JSON object"
		c.call.RawInput = raw
	default:
		c.call.Input = json.RawMessage(raw)
	}
	call := c.call
	t.emit(Event{Type: EventToolCall, ToolCall: &call})
}

// setUsage records counts; nil leaves a count as it was (providers report
// input and output at different times).
func (t *turn) setUsage(input, output *int) {
	if input != nil {
		t.usage.InputTokens = *input
		t.usageSeen = true
	}
	if output != nil {
		t.usage.OutputTokens = *output
		t.usageSeen = true
	}
}

// finish completes the turn: open tool calls are completed, usage and done
// are emitted, and the result is returned. A stop of toolUse without calls,
// or calls with a stop of endTurn, keep the provider's word.
func (t *turn) finish(stop StopReason) *ChatResult {
	if stop == "" {
		stop = StopUnknown
	}
	if p := t.partial; p != "" {
		t.partial = ""
		t.text.WriteString(p)
		t.emit(Event{Type: EventTextDelta, Text: p}) // never completed: as it is
	}
	for _, c := range t.calls {
		if !c.done {
			t.complete(c)
		}
	}
	t.finished = true
	t.stop = stop
	if t.usageSeen {
		u := t.usage
		t.emit(Event{Type: EventUsage, Usage: &u})
	}
	t.emit(Event{Type: EventDone, StopReason: stop})
	res := &ChatResult{Text: t.text.String(), ToolCalls: []ToolCall{}, StopReason: stop, Usage: t.usage}
	for _, c := range t.calls {
		res.ToolCalls = append(res.ToolCalls, c.call)
	}
	return res
}

// hasToolCalls reports whether any call was seen.
func (t *turn) hasToolCalls() bool { return len(t.calls) > 0 }

// stopReasons maps each provider's words to the protocol's.
var stopReasons = map[string]StopReason{
	// Anthropic
	"end_turn": StopEndTurn, "max_tokens": StopMaxTokens, "tool_use": StopToolUse,
	"stop_sequence": StopSequence, "refusal": StopContentFilter, "pause_turn": StopEndTurn,
	"model_context_window_exceeded": StopMaxTokens,
	// OpenAI (chat completions, responses incomplete reasons) and Ollama
	"stop": StopEndTurn, "length": StopMaxTokens, "tool_calls": StopToolUse, "function_call": StopToolUse,
	"content_filter": StopContentFilter, "max_output_tokens": StopMaxTokens,
}

func mapStop(s string) StopReason {
	if r, ok := stopReasons[s]; ok {
		return r
	}
	return StopUnknown
}
