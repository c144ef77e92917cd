package llmtest_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/task-x/runtime/steps/llm/llmtest"
)

func TestAnthropicStreamsTheMessagesEventSequence(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic}, llmtest.Turn{
		Text:      []string{"Hi", " there"},
		ToolCalls: []llmtest.ToolCall{{Name: "read", Args: `{"a":1}`, Chunks: 2}, {ID: "toolu_given", Name: "list"}},
		Usage:     &llmtest.Usage{InputTokens: 12, OutputTokens: 3},
	})
	resp := postChat(t, srv, llmtest.Anthropic)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type = %q, want text/event-stream", ct)
	}
	evs, err := readStream(llmtest.Anthropic, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"message_start",
		"content_block_start", "ping", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop",
	}
	if got := names(evs); !slices.Equal(got, want) {
		t.Fatalf("events = %q\nwant     %q", got, want)
	}
	for i, ev := range evs {
		if typ := at(object(t, ev.data), "type"); typ != ev.name {
			t.Errorf("event %d %q carries type %v", i, ev.name, typ)
		}
	}
	start := object(t, evs[0].data)
	if at(start, "message", "model") != "test-model" || at(start, "message", "usage", "input_tokens") != 12.0 ||
		at(start, "message", "usage", "output_tokens") != 1.0 {
		t.Errorf("message_start = %s, want the model echoed, input_tokens 12, output_tokens 1", evs[0].data)
	}
	tool := object(t, evs[6].data)
	if at(tool, "index") != 1.0 || at(tool, "content_block", "type") != "tool_use" ||
		at(tool, "content_block", "id") != "toolu_llmtest_1_1" || at(tool, "content_block", "name") != "read" {
		t.Errorf("first tool block start = %s", evs[6].data)
	}
	if id := at(object(t, evs[10].data), "content_block", "id"); id != "toolu_given" {
		t.Errorf("second tool id = %v, want the scripted toolu_given", id)
	}
	end := object(t, evs[13].data)
	if at(end, "delta", "stop_reason") != "tool_use" || at(end, "usage", "output_tokens") != 3.0 {
		t.Errorf("message_delta = %s, want stop_reason tool_use and output_tokens 3", evs[13].data)
	}
}

func TestAnthropicEncodesEveryStopReason(t *testing.T) {
	t.Parallel()
	cases := []struct {
		stop, reason string
		sequence     any
	}{
		{"", "end_turn", nil},
		{llmtest.StopEndTurn, "end_turn", nil},
		{llmtest.StopMaxTokens, "max_tokens", nil},
		{llmtest.StopToolUse, "tool_use", nil},
		{llmtest.StopSequence, "stop_sequence", "###"},
		{llmtest.StopContentFilter, "refusal", nil},
		{llmtest.StopUnknown, "weird_reason", nil},
	}
	for _, tc := range cases {
		t.Run("stop "+tc.stop+" is "+tc.reason, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic}, llmtest.Turn{Text: []string{"x"}, Stop: tc.stop})
			evs := streamWith(t, srv, llmtest.Anthropic, map[string]any{"stop_sequences": []string{"###"}})
			delta := object(t, evs[len(evs)-2].data)
			if at(delta, "delta", "stop_reason") != tc.reason || at(delta, "delta", "stop_sequence") != tc.sequence {
				t.Errorf("message_delta = %s, want stop_reason %q, stop_sequence %v", evs[len(evs)-2].data, tc.reason, tc.sequence)
			}
		})
	}
}

func TestAnthropicPingsOnceEvenWithoutContent(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic}, llmtest.Turn{})
	want := []string{"message_start", "ping", "message_delta", "message_stop"}
	if got := names(streamOf(t, srv, llmtest.Anthropic)); !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

func TestAnthropicStreamErrorIsAnOverloadedErrorEvent(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic},
		llmtest.Turn{Text: []string{"a", "b"}, StreamError: "busy"})
	evs := streamOf(t, srv, llmtest.Anthropic)
	want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "error"}
	if got := names(evs); !slices.Equal(got, want) {
		t.Fatalf("events = %q, want %q", got, want)
	}
	e := object(t, evs[4].data)
	if at(e, "type") != "error" || at(e, "error", "type") != "overloaded_error" || at(e, "error", "message") != "busy" {
		t.Errorf("error event = %s", evs[4].data)
	}
}

func TestAnthropicRequiresTheVersionHeader(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic}, llmtest.TextTurn("x"))
	req := newRequest(t, t.Context(), llmtest.Anthropic, http.MethodPost, chatURL(srv, llmtest.Anthropic), "", chatBody(llmtest.Anthropic))
	req.Header.Del("anthropic-version")
	resp := do(t, req)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status = %d, want 400", resp.StatusCode)
	}
	if msg := errorMessage(t, llmtest.Anthropic, resp.Body); !strings.Contains(msg, "anthropic-version") {
		t.Errorf("message = %q, want it to name the header", msg)
	}
	if srv.Remaining() != 1 {
		t.Errorf("a rejected request used up a turn")
	}
}

func TestAnthropicErrorTypesFollowTheStatus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		typ    string
		want   string
	}{
		{400, "", "invalid_request_error"},
		{401, "", "authentication_error"},
		{403, "", "permission_error"},
		{404, "", "not_found_error"},
		{429, "", "rate_limit_error"},
		{500, "", "api_error"},
		{529, "", "overloaded_error"},
		{400, "custom_error", "custom_error"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic},
				llmtest.Turn{Error: &llmtest.HTTPError{Status: tc.status, Type: tc.typ, Message: "m"}})
			status, body := fetch(t, srv, llmtest.Anthropic, http.MethodPost, "/v1/messages", chatBody(llmtest.Anthropic))
			e := object(t, body)
			if status != tc.status || at(e, "type") != "error" || at(e, "error", "type") != tc.want {
				t.Errorf("got %d %s, want %d with error.type %s", status, body, tc.status, tc.want)
			}
		})
	}
}

func TestAnthropicListsModelsInPages(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic, Models: []llmtest.Model{
		{ID: "claude-a"}, {ID: "claude-b", ContextWindow: 1_000_000}, {ID: "claude-c"},
	}})
	ids := func(page map[string]any) []string {
		var out []string
		for _, m := range page["data"].([]any) {
			out = append(out, at(m, "id").(string))
		}
		return out
	}
	status, body := fetch(t, srv, llmtest.Anthropic, http.MethodGet, "/v1/models?limit=2", nil)
	first := object(t, body)
	if status != 200 || !slices.Equal(ids(first), []string{"claude-a", "claude-b"}) || first["has_more"] != true ||
		first["first_id"] != "claude-a" || first["last_id"] != "claude-b" {
		t.Errorf("first page = %d %s", status, body)
	}
	if at(first, "data", 0, "max_input_tokens") != nil || at(first, "data", 1, "max_input_tokens") != 1e6 ||
		at(first, "data", 1, "type") != "model" || at(first, "data", 1, "display_name") == nil || at(first, "data", 1, "created_at") == nil {
		t.Errorf("entries = %s, want max_input_tokens only on claude-b", body)
	}
	_, body = fetch(t, srv, llmtest.Anthropic, http.MethodGet, "/v1/models?limit=2&after_id=claude-b", nil)
	if second := object(t, body); !slices.Equal(ids(second), []string{"claude-c"}) || second["has_more"] != false {
		t.Errorf("second page = %s", body)
	}
	status, body = fetch(t, srv, llmtest.Anthropic, http.MethodGet, "/v1/models/claude-b", nil)
	if status != 200 || at(object(t, body), "max_input_tokens") != 1e6 {
		t.Errorf("GET /v1/models/claude-b = %d %s", status, body)
	}
	status, body = fetch(t, srv, llmtest.Anthropic, http.MethodGet, "/v1/models/nope", nil)
	if status != 404 || at(object(t, body), "error", "type") != "not_found_error" {
		t.Errorf("GET /v1/models/nope = %d %s, want 404 not_found_error", status, body)
	}
}

func TestAnthropicAnswersWithoutStreamWhenNotAsked(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic}, llmtest.Turn{
		Text:      []string{"a", "b"},
		ToolCalls: []llmtest.ToolCall{{Name: "read", Args: `{"path":"é.go"}`, Chunks: 3}},
	})
	body := chatBody(llmtest.Anthropic)
	delete(body, "stream")
	status, b := fetch(t, srv, llmtest.Anthropic, http.MethodPost, "/v1/messages", body)
	m := object(t, b)
	if status != 200 || at(m, "type") != "message" || at(m, "content", 0, "text") != "ab" ||
		at(m, "content", 1, "input", "path") != "é.go" || at(m, "stop_reason") != "tool_use" ||
		at(m, "usage", "output_tokens") != 5.0 {
		t.Errorf("reply = %d %s", status, b)
	}
}
