package llmtest_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/task-x/runtime/steps/llm/llmtest"
)

func TestOpenAIStreamsTheResponsesEventSequence(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAI}, llmtest.Turn{
		Text:      []string{"Hi", " there"},
		ToolCalls: []llmtest.ToolCall{{Name: "read", Args: `{"a":1}`, Chunks: 2}},
		Usage:     &llmtest.Usage{InputTokens: 12, OutputTokens: 3},
	})
	evs := streamOf(t, srv, llmtest.OpenAI)
	want := []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added",
		"response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.completed",
	}
	if got := names(evs); !slices.Equal(got, want) {
		t.Fatalf("events = %q\nwant     %q", got, want)
	}
	for i, ev := range evs {
		d := object(t, ev.data)
		if d["type"] != ev.name || d["sequence_number"] != float64(i) {
			t.Errorf("event %d %q: type %v, sequence_number %v", i, ev.name, d["type"], d["sequence_number"])
		}
	}
	if d := object(t, evs[4].data); d["item_id"] != "msg_llmtest_1" || d["output_index"] != 0.0 || d["content_index"] != 0.0 {
		t.Errorf("text delta = %s", evs[4].data)
	}
	added := object(t, evs[9].data)
	if at(added, "output_index") != 1.0 || at(added, "item", "type") != "function_call" || at(added, "item", "id") != "fc_llmtest_1_1" ||
		at(added, "item", "call_id") != "call_llmtest_1_1" || at(added, "item", "name") != "read" || at(added, "item", "arguments") != "" {
		t.Errorf("function call item added = %s", evs[9].data)
	}
	if d := object(t, evs[12].data); d["arguments"] != `{"a":1}` || d["item_id"] != "fc_llmtest_1_1" {
		t.Errorf("arguments done = %s", evs[12].data)
	}
	done := object(t, evs[14].data)
	if at(done, "response", "status") != "completed" || at(done, "response", "usage", "input_tokens") != 12.0 ||
		at(done, "response", "usage", "output_tokens") != 3.0 || at(done, "response", "usage", "total_tokens") != 15.0 ||
		at(done, "response", "output", 0, "content", 0, "text") != "Hi there" ||
		at(done, "response", "output", 1, "arguments") != `{"a":1}` {
		t.Errorf("response.completed = %s", evs[14].data)
	}
}

func TestOpenAIEndsWithCompletedOrIncomplete(t *testing.T) {
	t.Parallel()
	cases := []struct {
		stop, event, status string
		reason              any
	}{
		{llmtest.StopEndTurn, "response.completed", "completed", nil},
		{llmtest.StopToolUse, "response.completed", "completed", nil},
		{llmtest.StopSequence, "response.completed", "completed", nil},
		{llmtest.StopMaxTokens, "response.incomplete", "incomplete", "max_output_tokens"},
		{llmtest.StopContentFilter, "response.incomplete", "incomplete", "content_filter"},
		{llmtest.StopUnknown, "response.incomplete", "incomplete", "weird_reason"},
	}
	for _, tc := range cases {
		t.Run(tc.stop, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAI}, llmtest.Turn{Text: []string{"x"}, Stop: tc.stop})
			evs := streamOf(t, srv, llmtest.OpenAI)
			last := evs[len(evs)-1]
			r := object(t, last.data)
			if last.name != tc.event || at(r, "response", "status") != tc.status ||
				at(r, "response", "incomplete_details", "reason") != tc.reason || at(r, "response", "usage") == nil {
				t.Errorf("last event %s %s, want %s status %s reason %v with usage", last.name, last.data, tc.event, tc.status, tc.reason)
			}
		})
	}
}

func TestOpenAIStreamErrorSendsErrorThenFailed(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAI}, llmtest.Turn{Text: []string{"a", "b"}, StreamError: "boom"})
	evs := streamOf(t, srv, llmtest.OpenAI)
	want := []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.content_part.added", "response.output_text.delta", "error", "response.failed"}
	if got := names(evs); !slices.Equal(got, want) {
		t.Fatalf("events = %q, want %q", got, want)
	}
	if e := object(t, evs[5].data); e["message"] != "boom" || e["sequence_number"] != 5.0 {
		t.Errorf("error event = %s", evs[5].data)
	}
	f := object(t, evs[6].data)
	if at(f, "response", "status") != "failed" || at(f, "response", "error", "message") != "boom" || f["sequence_number"] != 6.0 {
		t.Errorf("response.failed = %s", evs[6].data)
	}
}

func TestOpenAIErrorsCarryRetryAfterMs(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAI, APIKey: "k"})
	status, body := fetch(t, srv, llmtest.OpenAI, http.MethodPost, "/v1/responses", chatBody(llmtest.OpenAI))
	if e := object(t, body); status != 401 || at(e, "error", "code") != "invalid_api_key" || at(e, "error", "type") != "invalid_request_error" {
		t.Errorf("without a key: %d %s, want 401 invalid_api_key", status, body)
	}

	srv = llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAI},
		llmtest.Turn{Error: &llmtest.HTTPError{Status: 429, Message: "later", RetryAfter: "1.5"}})
	resp := postChat(t, srv, llmtest.OpenAI)
	if resp.Header.Get("Retry-After") != "1.5" || resp.Header.Get("retry-after-ms") != "1500" {
		t.Errorf("headers = %v, want Retry-After 1.5 and retry-after-ms 1500", resp.Header)
	}
	if msg := errorMessage(t, llmtest.OpenAI, resp.Body); msg != "later" {
		t.Errorf("message = %q", msg)
	}
}

func TestOpenAIListsModels(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAI, Models: []llmtest.Model{{ID: "gpt-5"}, {ID: "gpt-4.1"}}})
	status, body := fetch(t, srv, llmtest.OpenAI, http.MethodGet, "/v1/models", nil)
	list := object(t, body)
	if status != 200 || list["object"] != "list" || at(list, "data", 0, "id") != "gpt-5" ||
		at(list, "data", 1, "id") != "gpt-4.1" || at(list, "data", 1, "object") != "model" || at(list, "data", 1, "owned_by") == nil {
		t.Errorf("GET /v1/models = %d %s", status, body)
	}
	if status, body := fetch(t, srv, llmtest.OpenAI, http.MethodGet, "/v1/models/gpt-5", nil); status != 200 || at(object(t, body), "id") != "gpt-5" {
		t.Errorf("GET /v1/models/gpt-5 = %d %s", status, body)
	}
	if status, _ := fetch(t, srv, llmtest.OpenAI, http.MethodGet, "/v1/models/nope", nil); status != 404 {
		t.Errorf("GET /v1/models/nope = %d, want 404", status)
	}
}

func TestOpenAIAnswersWithoutStreamWhenNotAsked(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAI}, llmtest.Turn{
		Text:      []string{"a", "b"},
		ToolCalls: []llmtest.ToolCall{{Name: "read", Args: `{"p":1}`}},
		Stop:      llmtest.StopMaxTokens,
	})
	body := chatBody(llmtest.OpenAI)
	delete(body, "stream")
	status, b := fetch(t, srv, llmtest.OpenAI, http.MethodPost, "/v1/responses", body)
	r := object(t, b)
	if status != 200 || r["object"] != "response" || r["status"] != "incomplete" ||
		at(r, "incomplete_details", "reason") != "max_output_tokens" ||
		at(r, "output", 0, "content", 0, "text") != "ab" || at(r, "output", 1, "call_id") != "call_llmtest_1_1" {
		t.Errorf("reply = %d %s", status, b)
	}
}
