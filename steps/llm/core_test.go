package llm

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestRetryAfterReadsSecondsDatesAndMilliseconds(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		header map[string]string
		want   int64
	}{
		{"seconds", map[string]string{"Retry-After": "7"}, 7000},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500},
		{"an HTTP date", map[string]string{"Retry-After": now.Add(30 * time.Second).Format(http.TimeFormat)}, 30000},
		{"a date in the past is nothing", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"OpenAI's retry-after-ms wins", map[string]string{"Retry-After": "7", "Retry-After-Ms": "250"}, 250},
		{"garbage is nothing", map[string]string{"Retry-After": "soon"}, 0},
		{"absent is nothing", nil, 0},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		if got := retryAfter(h, now); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestStatusErrorKinds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		types  []string
		want   ErrorKind
	}{
		{400, nil, KindInvalidRequest},
		{401, nil, KindAuth},
		{403, nil, KindPermissionDenied},
		{404, nil, KindNotFound},
		{404, []string{"invalid_request_error", "model_not_found"}, KindNotFound},
		{408, nil, KindTimeout},
		{413, nil, KindInvalidRequest},
		{422, nil, KindInvalidRequest},
		{429, nil, KindRateLimited},
		{500, nil, KindServer},
		{502, nil, KindServer},
		{503, nil, KindOverloaded},
		{529, []string{"overloaded_error"}, KindOverloaded},
		{400, []string{"invalid_request_error", ""}, KindInvalidRequest},
		{500, []string{"overloaded_error"}, KindOverloaded},
	}
	for _, tc := range cases {
		e := statusError(tc.status, nil, "", tc.types...)
		if e.Kind != tc.want || e.Status != tc.status || e.Retryable != tc.want.Retryable() || e.Message == "" {
			t.Errorf("status %d %v: got %+v, want kind %s", tc.status, tc.types, e, tc.want)
		}
	}
	retryable := map[ErrorKind]bool{KindRateLimited: true, KindOverloaded: true, KindServer: true, KindNetwork: true, KindTimeout: true}
	for _, k := range []ErrorKind{KindInvalidConfig, KindInvalidRequest, KindAuth, KindPermissionDenied, KindNotFound,
		KindRateLimited, KindOverloaded, KindServer, KindNetwork, KindTimeout, KindCancelled, KindProtocol} {
		if k.Retryable() != retryable[k] {
			t.Errorf("%s: retryable %v", k, k.Retryable())
		}
	}
}

func TestErrorBodyShapes(t *testing.T) {
	t.Parallel()
	cases := []struct{ body, msg, typ string }{
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "Overloaded", "overloaded_error"},
		{`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, "Rate limit reached", "rate_limit_exceeded"},
		{`{"error":"model 'x' not found"}`, "model 'x' not found", ""},
		{`{"message":"bad gateway"}`, "bad gateway", ""},
		{"upstream connect error\n", "upstream connect error", ""},
	}
	for _, tc := range cases {
		msg, types := errorBody([]byte(tc.body))
		if msg != tc.msg || (tc.typ != "" && !contains(types, tc.typ)) {
			t.Errorf("%s: %q %v", tc.body, msg, types)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestSSEReader(t *testing.T) {
	t.Parallel()
	in := ": a comment\r\n" +
		"event: one\r\ndata: {\"a\":1}\r\n\r\n" +
		"data: line1\ndata: line2\nid: 9\nretry: 10\n\n" +
		"event: three\rdata:no-space\r\r" +
		"\n\n" +
		"event: cut\ndata: {\"never\":true}\n" // no blank line: not dispatched
	r := newSSEReader(strings.NewReader(in))
	want := []sseEvent{{"one", []byte(`{"a":1}`)}, {"", []byte("line1\nline2")}, {"three", []byte("no-space")}}
	for i, w := range want {
		ev, err := r.next()
		if err != nil || ev.name != w.name || string(ev.data) != string(w.data) {
			t.Fatalf("event %d: %q %q %v, want %q %q", i, ev.name, ev.data, err, w.name, w.data)
		}
	}
	if _, err := r.next(); !errors.Is(err, errStreamEnded) && !errors.Is(err, io.EOF) {
		t.Fatalf("after the last event: %v", err)
	}
}

func TestLineReaderRefusesACutLastLine(t *testing.T) {
	t.Parallel()
	r := newLineReader(strings.NewReader("{\"a\":1}\n\n{\"b\":2}\n{\"c\""))
	for _, want := range []string{`{"a":1}`, `{"b":2}`} {
		line, err := r.next()
		if err != nil || string(line) != want {
			t.Fatalf("%q %v, want %s", line, err, want)
		}
	}
	if _, err := r.next(); !errors.Is(err, errStreamEnded) {
		t.Fatalf("a cut line: %v, want errStreamEnded", err)
	}
}

func TestTurnAssemblesToolCallsAndEmitsInOrder(t *testing.T) {
	t.Parallel()
	var events []Event
	tr := newTurn(func(e Event) { events = append(events, e) })
	tr.textDelta("Hel")
	tr.textDelta("")
	tr.textDelta("lo")
	tr.startTool(1, "call_1", "read_file")
	tr.startTool(2, "call_2", "search")
	for _, piece := range []string{`{"pa`, `th":"日本`, `/é.go"}`} {
		tr.toolArgs(1, piece)
	}
	tr.toolArgs(2, `not json`)
	tr.toolDone(1)
	in, out := 12, 3
	tr.setUsage(&in, nil)
	tr.setUsage(nil, &out)
	res := tr.finish(StopToolUse)

	var types []EventType
	for _, e := range events {
		types = append(types, e.Type)
	}
	wantTypes := []EventType{EventTextDelta, EventTextDelta, EventToolCall, EventToolCall, EventUsage, EventDone}
	if len(types) != len(wantTypes) {
		t.Fatalf("events %v, want %v", types, wantTypes)
	}
	for i := range types {
		if types[i] != wantTypes[i] {
			t.Fatalf("events %v, want %v", types, wantTypes)
		}
	}
	if res.Text != "Hello" || res.StopReason != StopToolUse || res.Usage != (Usage{12, 3}) || len(res.ToolCalls) != 2 {
		t.Fatalf("result %+v", res)
	}
	var input map[string]string
	if err := json.Unmarshal(res.ToolCalls[0].Input, &input); err != nil || input["path"] != "日本/é.go" {
		t.Fatalf("first call input %s: %v", res.ToolCalls[0].Input, err)
	}
	bad := res.ToolCalls[1]
	if string(bad.Input) != "{}" || bad.ParseError == "" || bad.RawInput != "not json" {
		t.Fatalf("a call with bad arguments: %+v", bad)
	}
	b, _ := json.Marshal(events[2])
	if !strings.Contains(string(b), `"type":"toolCall"`) || !strings.Contains(string(b), `"name":"read_file"`) || !strings.Contains(string(b), `"input":{"path"`) {
		t.Fatalf("toolCall event JSON: %s", b)
	}
	b, _ = json.Marshal(events[0])
	if string(b) != `{"type":"textDelta","text":"Hel"}` {
		t.Fatalf("textDelta event JSON: %s", b)
	}
}

func TestEstimateContextWindow(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind  Kind
		model string
		want  int
	}{
		{Anthropic, "claude-opus-4-6", 1_000_000},
		{Anthropic, "claude-sonnet-4-6-20260101", 1_000_000},
		{Anthropic, "claude-opus-4-7", 1_000_000},
		{Anthropic, "claude-sonnet-5", 1_000_000},
		{Anthropic, "claude-sonnet-4-5-20250929", 200_000},
		{Anthropic, "claude-opus-4-1", 200_000},
		{Anthropic, "claude-3-5-sonnet-latest", 200_000},
		{Anthropic, "claude-3-7-sonnet-20250219", 200_000},
		{OpenAI, "gpt-4.1-mini", 1_000_000},
		{OpenAI, "gpt-5", 272_000},
		{OpenAI, "gpt-5-codex", 272_000},
		{OpenAI, "gpt-4o", 128_000},
		{Ollama, "qwen3:latest", 32_768},
		{OpenAICompatible, "meta-llama/Llama-3.1-8B", 32_768},
	}
	for _, tc := range cases {
		if got := EstimateContextWindow(tc.kind, tc.model); got != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.kind, tc.model, got, tc.want)
		}
	}
}

func TestCapabilitiesComeInTheProtocolsOrder(t *testing.T) {
	t.Parallel()
	got := orderCapabilities([]Capability{CapEmbedding, "completion", CapThinking, CapTools, CapTools, CapVision})
	want := []Capability{CapTools, CapVision, CapThinking, CapEmbedding}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%v, want %v", got, want)
		}
	}
	if c := orderCapabilities(nil); c == nil || len(c) != 0 {
		t.Fatalf("no capabilities must be an empty list, got %#v", c)
	}
}

func TestTimeoutIsClamped(t *testing.T) {
	t.Parallel()
	ms := func(v int) *int { return &v }
	for _, tc := range []struct {
		in   *int
		want time.Duration
	}{{nil, 120 * time.Second}, {ms(5), time.Second}, {ms(-1), time.Second}, {ms(30_000), 30 * time.Second}, {ms(10_000_000), 10 * time.Minute}} {
		c := ProviderConfig{TimeoutMs: tc.in}
		if got := c.Timeout(); got != tc.want {
			t.Errorf("timeoutMs %v: %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestATextDeltaNeverCarriesHalfACharacter(t *testing.T) {
	t.Parallel()
	var deltas []string
	tr := newTurn(func(e Event) {
		if e.Type == EventTextDelta {
			deltas = append(deltas, e.Text)
		}
	})
	word := "日本é"
	tr.textDelta(word[:1])
	tr.textDelta(word[1:4])
	tr.textDelta(word[4:7] + word[7:8])
	tr.textDelta(word[8:])
	res := tr.finish(StopEndTurn)
	if res.Text != word {
		t.Fatalf("text %q, want %q", res.Text, word)
	}
	for _, d := range deltas {
		if !utf8.ValidString(d) {
			t.Fatalf("a delta carries half a character: %q (all: %q)", d, deltas)
		}
	}
}

func TestExactStringKeepsTheBytes(t *testing.T) {
	t.Parallel()
	cases := []struct{ raw, want string }{
		{`"plain"`, "plain"},
		{`"a\"b\\c\/d\n\t"`, "a\"b\\c/d\n\t"},
		{`"\u65e5\u00e9"`, "日é"},
		{`"\ud83d\ude00"`, "😀"},
		{"\"\xe6\x97\"", "\xe6\x97"}, // half a character stays half a character
		{`null`, ""},
	}
	for _, tc := range cases {
		var s exactString
		if err := json.Unmarshal([]byte(tc.raw), &s); err != nil || string(s) != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.raw, s, err, tc.want)
		}
	}
}
