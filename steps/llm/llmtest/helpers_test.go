package llmtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/task-x/runtime/steps/llm/llmtest"
)

// waitLimit bounds every wait, so a hang fails the test instead of the run.
const waitLimit = 10 * time.Second

// event is one event of a raw stream: an SSE event (name and data line) or
// one NDJSON line.
type event struct {
	name string
	data []byte
}

// chatURL is the chat endpoint of a kind, reached through BaseURL as a
// client configured with ProviderConfig.baseUrl would.
func chatURL(srv *llmtest.Server, kind llmtest.Kind) string {
	switch kind {
	case llmtest.Anthropic:
		return srv.BaseURL() + "/v1/messages"
	case llmtest.OpenAI:
		return srv.BaseURL() + "/responses"
	case llmtest.OpenAICompatible:
		return srv.BaseURL() + "/chat/completions"
	}
	return srv.BaseURL() + "/api/chat"
}

// newRequest builds a request with the headers a client of kind sends.
func newRequest(t *testing.T, ctx context.Context, kind llmtest.Kind, method, url, key string, body any) *http.Request {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if kind == llmtest.Anthropic {
		req.Header.Set("anthropic-version", "2023-06-01")
		if key != "" {
			req.Header.Set("x-api-key", key)
		}
	} else if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return req
}

func do(t *testing.T, req *http.Request) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// chatBody is a minimal streaming chat request of kind.
func chatBody(kind llmtest.Kind) map[string]any {
	body := map[string]any{"model": "test-model", "stream": true}
	if kind == llmtest.OpenAI {
		body["input"] = "hi"
	} else {
		body["messages"] = []any{map[string]any{"role": "user", "content": "hi"}}
	}
	return body
}

// postChat sends a streaming chat request and returns the response.
func postChat(t *testing.T, srv *llmtest.Server, kind llmtest.Kind) *http.Response {
	t.Helper()
	return do(t, newRequest(t, context.Background(), kind, http.MethodPost, chatURL(srv, kind), "", chatBody(kind)))
}

// readStream reads a whole stream and returns its events and the read
// error that ended it (nil for a clean end).
func readStream(kind llmtest.Kind, body io.Reader) ([]event, error) {
	var evs []event
	br := bufio.NewReader(body)
	var cur event
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
			switch {
			case kind == llmtest.Ollama:
				evs = append(evs, event{data: line})
			case len(line) == 0:
				if cur.data != nil {
					evs = append(evs, cur)
				}
				cur = event{}
			default:
				if v, ok := bytes.CutPrefix(line, []byte("event: ")); ok {
					cur.name = string(v)
				} else if v, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
					cur.data = v
				}
			}
		}
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
	}
}

func streamOf(t *testing.T, srv *llmtest.Server, kind llmtest.Kind) []event {
	t.Helper()
	resp := postChat(t, srv, kind)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	evs, err := readStream(kind, resp.Body)
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	return evs
}

// unquoteBytes decodes a JSON string literal keeping every byte that is not
// an escape as it is, unlike encoding/json, which turns invalid UTF-8 into
// U+FFFD.
func unquoteBytes(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	s := string(raw)
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		t.Fatalf("not a JSON string: %s", raw)
	}
	s = s[1 : len(s)-1]
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b = append(b, s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'u':
			r := hex4(t, s[i+1:i+5])
			i += 4
			if utf16.IsSurrogate(r) && strings.HasPrefix(s[i+1:], `\u`) {
				r = utf16.DecodeRune(r, hex4(t, s[i+3:i+7]))
				i += 6
			}
			b = utf8.AppendRune(b, r)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

func hex4(t *testing.T, s string) rune {
	t.Helper()
	n, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		t.Fatalf("bad \\u escape %q", s)
	}
	return rune(n)
}

// deltas extracts the text deltas and, per tool call, the argument pieces
// of a stream, byte for byte.
func deltas(t *testing.T, kind llmtest.Kind, evs []event) (texts []string, args [][]string) {
	t.Helper()
	slot := map[int]int{} // the kind's index of a call -> its position in args
	addArg := func(index int, piece json.RawMessage) {
		if _, ok := slot[index]; !ok {
			slot[index] = len(args)
			args = append(args, nil)
		}
		args[slot[index]] = append(args[slot[index]], unquoteBytes(t, piece))
	}
	for _, ev := range evs {
		switch kind {
		case llmtest.Anthropic:
			var e struct {
				Index int
				Delta struct {
					Type        string
					Text        json.RawMessage
					PartialJSON json.RawMessage `json:"partial_json"`
				}
			}
			if ev.name != "content_block_delta" || json.Unmarshal(ev.data, &e) != nil {
				continue
			}
			if e.Delta.Type == "text_delta" {
				texts = append(texts, unquoteBytes(t, e.Delta.Text))
			} else {
				addArg(e.Index, e.Delta.PartialJSON)
			}
		case llmtest.OpenAI:
			var e struct {
				OutputIndex int `json:"output_index"`
				Delta       json.RawMessage
			}
			if json.Unmarshal(ev.data, &e) != nil {
				continue
			}
			switch ev.name {
			case "response.output_text.delta":
				texts = append(texts, unquoteBytes(t, e.Delta))
			case "response.function_call_arguments.delta":
				addArg(e.OutputIndex, e.Delta)
			}
		case llmtest.OpenAICompatible:
			var e struct {
				Choices []struct {
					Delta struct {
						Content   json.RawMessage
						ToolCalls []struct {
							Index    int
							ID       string
							Function struct{ Arguments json.RawMessage }
						} `json:"tool_calls"`
					}
				}
			}
			if json.Unmarshal(ev.data, &e) != nil || len(e.Choices) == 0 {
				continue
			}
			d := e.Choices[0].Delta
			if d.Content != nil && string(d.Content) != `""` {
				texts = append(texts, unquoteBytes(t, d.Content))
			}
			for _, tc := range d.ToolCalls {
				if tc.ID == "" { // the first delta of a call names it; the rest carry arguments
					addArg(tc.Index, tc.Function.Arguments)
				}
			}
		case llmtest.Ollama:
			var e struct {
				Message struct{ Content json.RawMessage }
			}
			if json.Unmarshal(ev.data, &e) == nil && e.Message.Content != nil && string(e.Message.Content) != `""` {
				texts = append(texts, unquoteBytes(t, e.Message.Content))
			}
		}
	}
	return texts, args
}

func names(evs []event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.name)
	}
	return out
}

// errorMessage decodes the message of an error body in kind's shape.
func errorMessage(t *testing.T, kind llmtest.Kind, body io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	if kind == llmtest.Ollama {
		var e struct{ Error string }
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("error body %s: %v", b, err)
		}
		return e.Error
	}
	var e struct {
		Error struct{ Message, Type string }
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Type == "" {
		t.Fatalf("error body %s is not in the %s shape (%v)", b, kind, err)
	}
	return e.Error.Message
}

// fetch sends a request to path on the server's root and returns the status
// and the raw body.
func fetch(t *testing.T, srv *llmtest.Server, kind llmtest.Kind, method, path string, body any) (int, []byte) {
	t.Helper()
	resp := do(t, newRequest(t, context.Background(), kind, method, srv.URL()+path, "", body))
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// object decodes a JSON object, failing the test when it is not one.
func object(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

// at follows a path of keys and indexes into decoded JSON; nil when absent.
func at(v any, path ...any) any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[p]
		case int:
			a, _ := v.([]any)
			if p >= len(a) {
				return nil
			}
			v = a[p]
		}
	}
	return v
}

// streamWith sends a chat request with extra body fields and reads the
// whole stream.
func streamWith(t *testing.T, srv *llmtest.Server, kind llmtest.Kind, extra map[string]any) []event {
	t.Helper()
	body := chatBody(kind)
	for k, v := range extra {
		body[k] = v
	}
	resp := do(t, newRequest(t, context.Background(), kind, http.MethodPost, chatURL(srv, kind), "", body))
	evs, err := readStream(kind, resp.Body)
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	return evs
}
