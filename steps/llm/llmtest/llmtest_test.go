package llmtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/task-x/runtime/steps/llm/llmtest"
)

func TestTextChunksArriveInOrderAsSeparateDeltas(t *testing.T) {
	t.Parallel()
	chunks := []string{"Hel", "lo, ", "wörld", " 日本", "\n\"quoted\" \\ tab\t"}
	for _, kind := range llmtest.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: kind}, llmtest.TextTurn(chunks...))
			texts, args := deltas(t, kind, streamOf(t, srv, kind))
			if !slices.Equal(texts, chunks) {
				t.Errorf("text deltas = %q, want %q", texts, chunks)
			}
			if len(args) != 0 {
				t.Errorf("argument deltas = %q, want none", args)
			}
		})
	}
}

func TestEveryEventIsJSONExceptTheMalformedOne(t *testing.T) {
	t.Parallel()
	turn := llmtest.Turn{
		Text:      []string{"a", "b"},
		ToolCalls: []llmtest.ToolCall{{Name: "read", Args: `{"path":"日本.go"}`, Chunks: 4}},
	}
	for _, kind := range llmtest.Kinds() {
		for _, malformed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/malformed=%v", kind, malformed), func(t *testing.T) {
				t.Parallel()
				turn := turn
				turn.Malformed = malformed
				srv := llmtest.New(t, llmtest.Options{Kind: kind}, turn)
				evs := streamOf(t, srv, kind)
				var broken []int
				for i, ev := range evs {
					if kind == llmtest.OpenAICompatible && string(ev.data) == "[DONE]" {
						continue
					}
					if !json.Valid(ev.data) {
						broken = append(broken, i)
					}
				}
				want := 0
				if malformed {
					want = 1
				}
				if len(broken) != want {
					t.Fatalf("events %v are not JSON, want %d such event", broken, want)
				}
				texts, _ := deltas(t, kind, evs)
				if !slices.Equal(texts, turn.Text) {
					t.Errorf("text deltas = %q, want %q", texts, turn.Text)
				}
				if malformed && !slices.ContainsFunc(evs[broken[0]+1:], func(ev event) bool { return bytes.Contains(ev.data, []byte(`"b"`)) }) {
					t.Errorf("the malformed event did not come after the first text delta")
				}
			})
		}
	}
}

func TestToolCallChunksSplitTheArgumentsByBytes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		args   string
		chunks int
		// midRune: some piece must end inside a multi-byte character.
		midRune bool
	}{
		{"one piece when Chunks is 0", `{"path":"a.go"}`, 0, false},
		{"ascii in three pieces", `{"path":"a.go"}`, 3, false},
		{"é split inside the character", `{"p":"é"}`, 4, true},
		{"日本 split inside the characters", `{"p":"日本"}`, 5, true},
		{"more chunks than bytes gives one byte each", `{}`, 9, false},
		{"empty arguments", ``, 3, false},
	}
	for _, kind := range []llmtest.Kind{llmtest.Anthropic, llmtest.OpenAI, llmtest.OpenAICompatible} {
		for _, tc := range cases {
			t.Run(string(kind)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				srv := llmtest.New(t, llmtest.Options{Kind: kind},
					llmtest.ToolTurn(llmtest.ToolCall{Name: "read", Args: tc.args, Chunks: tc.chunks}))
				_, args := deltas(t, kind, streamOf(t, srv, kind))
				if len(args) != 1 {
					t.Fatalf("got arguments for %d calls, want 1", len(args))
				}
				pieces := args[0]
				want := max(1, min(tc.chunks, len(tc.args)))
				if len(pieces) != want {
					t.Errorf("got %d pieces %q, want %d", len(pieces), pieces, want)
				}
				if got := strings.Join(pieces, ""); got != tc.args {
					t.Errorf("reassembled bytes = %q, want %q", got, tc.args)
				}
				split := slices.ContainsFunc(pieces, func(p string) bool { return !utf8.ValidString(p) })
				if split != tc.midRune {
					t.Errorf("a piece ends inside a character: %v, want %v (pieces %q)", split, tc.midRune, pieces)
				}
			})
		}
	}
}

func TestHTTPErrorsCarryStatusRetryAfterAndMessage(t *testing.T) {
	t.Parallel()
	for _, kind := range llmtest.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: kind},
				llmtest.Turn{Error: &llmtest.HTTPError{Status: 429, Message: "slow down", RetryAfter: "7"}})
			resp := postChat(t, srv, kind)
			if resp.StatusCode != 429 {
				t.Errorf("status = %d, want 429", resp.StatusCode)
			}
			if got := resp.Header.Get("Retry-After"); got != "7" {
				t.Errorf("Retry-After = %q, want 7", got)
			}
			if got := resp.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", got)
			}
			if got := errorMessage(t, kind, resp.Body); got != "slow down" {
				t.Errorf("message = %q, want %q", got, "slow down")
			}
		})
	}
}

func TestAnExhaustedScriptAnswers500(t *testing.T) {
	t.Parallel()
	for _, kind := range llmtest.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: kind}, llmtest.TextTurn("only one"))
			streamOf(t, srv, kind)
			resp := postChat(t, srv, kind)
			if resp.StatusCode != 500 {
				t.Errorf("status = %d, want 500", resp.StatusCode)
			}
			if msg := errorMessage(t, kind, resp.Body); !strings.Contains(msg, "llmtest: no scripted turn left") {
				t.Errorf("message = %q, want it to say no scripted turn is left", msg)
			}
			srv.Push(llmtest.TextTurn("pushed"))
			texts, _ := deltas(t, kind, streamOf(t, srv, kind))
			if !slices.Equal(texts, []string{"pushed"}) {
				t.Errorf("after Push the text is %q, want the pushed turn", texts)
			}
		})
	}
}

func TestCutAfterEndsTheBodyWithUnexpectedEOF(t *testing.T) {
	t.Parallel()
	for _, kind := range llmtest.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: kind},
				llmtest.Turn{Text: []string{"a", "b", "c", "d"}, CutAfter: 2})
			resp := postChat(t, srv, kind)
			evs, err := readStream(kind, resp.Body)
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("read error = %v, want io.ErrUnexpectedEOF", err)
			}
			if len(evs) != 2 {
				t.Errorf("got %d events before the cut, want 2", len(evs))
			}
			if srv.ChatRequests()[0].ClientClosed {
				t.Errorf("a cut by the server counts as the client going away")
			}
		})
	}
}

func TestWaitClosedSeesAClientThatCancelsMidStream(t *testing.T) {
	t.Parallel()
	for _, kind := range llmtest.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			// The hour-long delay never elapses: the cancel ends the stream.
			srv := llmtest.New(t, llmtest.Options{Kind: kind},
				llmtest.Turn{Text: []string{"a", "b"}, Delay: time.Hour})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp := do(t, newRequest(t, ctx, kind, http.MethodPost, chatURL(srv, kind), "", chatBody(kind)))
			if _, err := bufio.NewReader(resp.Body).ReadBytes('\n'); err != nil {
				t.Fatalf("reading the first event: %v", err)
			}
			cancel()
			wctx, wcancel := context.WithTimeout(context.Background(), waitLimit)
			defer wcancel()
			if err := srv.WaitClosed(wctx, 1); err != nil {
				t.Fatal(err)
			}
			if !srv.ChatRequests()[0].ClientClosed {
				t.Errorf("ChatRequests()[0].ClientClosed = false after WaitClosed")
			}
		})
	}
}

func TestWaitClosedReturnsTheContextErrorForAFinishedStream(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic}, llmtest.TextTurn("done"))
	streamOf(t, srv, llmtest.Anthropic)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := srv.WaitClosed(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitClosed = %v, want context.Canceled", err)
	}
	if err := srv.WaitClosed(context.Background(), 0); err == nil {
		t.Errorf("WaitClosed(0) = nil, want an error: requests count from 1")
	}
}

func TestACancelDuringHeaderDelayCountsAsClosed(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible},
		llmtest.Turn{Text: []string{"late"}, HeaderDelay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	req := newRequest(t, ctx, llmtest.OpenAICompatible, http.MethodPost, chatURL(srv, llmtest.OpenAICompatible), "", chatBody(llmtest.OpenAICompatible))
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), waitLimit)
	defer wcancel()
	if err := srv.WaitRequests(wctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("client error = %v, want context.Canceled", err)
	}
	if err := srv.WaitClosed(wctx, 1); err != nil {
		t.Fatal(err)
	}
}

func TestDelaysHoldBackTheStream(t *testing.T) {
	t.Parallel()
	const d = 30 * time.Millisecond
	cases := []struct {
		name string
		turn llmtest.Turn
	}{
		{"HeaderDelay before the headers", llmtest.Turn{Text: []string{"a"}, HeaderDelay: d}},
		{"Gap after the first event", llmtest.Turn{Text: []string{"a"}, Gap: d}},
		{"Delay between events", llmtest.Turn{Text: []string{"a", "b", "c"}, Delay: d / 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Ollama}, tc.turn)
			start := time.Now()
			streamOf(t, srv, llmtest.Ollama)
			// A lower bound only: a slow machine cannot make it fail.
			if elapsed := time.Since(start); elapsed < d {
				t.Errorf("the stream took %v, want at least %v", elapsed, d)
			}
		})
	}
}

func TestRequestsAreRecordedWithTheirBody(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.OpenAICompatible, Models: []llmtest.Model{{ID: "m"}}},
		llmtest.TextTurn("one"))
	do(t, newRequest(t, context.Background(), llmtest.OpenAICompatible, http.MethodGet, srv.BaseURL()+"/models?x=1", "", nil))
	body := chatBody(llmtest.OpenAICompatible)
	body["temperature"] = 0.5
	resp := do(t, newRequest(t, context.Background(), llmtest.OpenAICompatible, http.MethodPost, chatURL(srv, llmtest.OpenAICompatible), "", body))
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}

	all := srv.Requests()
	if len(all) != 2 {
		t.Fatalf("recorded %d requests, want 2", len(all))
	}
	if all[0].Method != http.MethodGet || all[0].Path != "/v1/models" || all[0].Query.Get("x") != "1" {
		t.Errorf("first request = %s %s ?%v, want GET /v1/models ?x=1", all[0].Method, all[0].Path, all[0].Query)
	}
	chats := srv.ChatRequests()
	if len(chats) != 1 || chats[0].Path != "/v1/chat/completions" {
		t.Fatalf("chat requests = %+v, want the one POST /v1/chat/completions", chats)
	}
	var sent map[string]any
	if err := json.Unmarshal(chats[0].Body, &sent); err != nil {
		t.Fatalf("recorded body %q: %v", chats[0].Body, err)
	}
	if sent["temperature"] != 0.5 || chats[0].JSON["model"] != "test-model" {
		t.Errorf("recorded body %s, JSON %v: want the model sent", chats[0].Body, chats[0].JSON)
	}
	if got := chats[0].Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("recorded Content-Type = %q", got)
	}
}

func TestAPIKeyRejectsOtherKeysWithoutUsingATurn(t *testing.T) {
	t.Parallel()
	for _, kind := range llmtest.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Options{Kind: kind, APIKey: "right"}, llmtest.TextTurn("ok"))
			for _, key := range []string{"", "wrong"} {
				resp := do(t, newRequest(t, context.Background(), kind, http.MethodPost, chatURL(srv, kind), key, chatBody(kind)))
				if resp.StatusCode != 401 {
					t.Errorf("key %q: status %d, want 401", key, resp.StatusCode)
				}
				errorMessage(t, kind, resp.Body)
			}
			if n := srv.Remaining(); n != 1 {
				t.Errorf("Remaining() = %d after rejected requests, want 1", n)
			}
			resp := do(t, newRequest(t, context.Background(), kind, http.MethodPost, chatURL(srv, kind), "right", chatBody(kind)))
			if resp.StatusCode != 200 {
				t.Errorf("right key: status %d, want 200", resp.StatusCode)
			}
			if n := len(srv.ChatRequests()); n != 3 {
				t.Errorf("recorded %d chat requests, want all 3", n)
			}
		})
	}
}

func TestConcurrentRequestsEachGetOneTurn(t *testing.T) {
	t.Parallel()
	const n = 16
	var turns []llmtest.Turn
	for i := range n {
		turns = append(turns, llmtest.TextTurn(fmt.Sprint("turn ", i)))
	}
	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic}, turns...)
	var mu sync.Mutex
	var got []string
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req := newRequest(t, context.Background(), llmtest.Anthropic, http.MethodPost, chatURL(srv, llmtest.Anthropic), "", chatBody(llmtest.Anthropic))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			evs, err := readStream(llmtest.Anthropic, resp.Body)
			if err != nil {
				t.Error(err)
			}
			texts, _ := deltas(t, llmtest.Anthropic, evs)
			mu.Lock()
			got = append(got, texts...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(got)
	var want []string
	for _, turn := range turns {
		want = append(want, turn.Text...)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("texts served = %q, want each turn once: %q", got, want)
	}
	if srv.Remaining() != 0 || len(srv.ChatRequests()) != n {
		t.Errorf("Remaining() = %d, chat requests = %d; want 0 and %d", srv.Remaining(), len(srv.ChatRequests()), n)
	}
}

func TestBaseURLIsWhatProviderConfigTakes(t *testing.T) {
	t.Parallel()
	want := map[llmtest.Kind]string{
		llmtest.Anthropic: "", llmtest.OpenAI: "/v1", llmtest.OpenAICompatible: "/v1", llmtest.Ollama: "",
	}
	for _, kind := range llmtest.Kinds() {
		srv := llmtest.New(t, llmtest.Options{Kind: kind})
		if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") {
			t.Errorf("%s: URL() = %q, want http://127.0.0.1:port", kind, srv.URL())
		}
		if srv.BaseURL() != srv.URL()+want[kind] {
			t.Errorf("%s: BaseURL() = %q, want URL()+%q", kind, srv.BaseURL(), want[kind])
		}
	}
}

// recorder is a testing.TB that keeps the errors reported to it instead of
// failing; everything else goes to the real test.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestAMalformedTurnFailsTheTest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		kind llmtest.Kind
		turn llmtest.Turn
		want string
	}{
		{"an unknown stop reason", llmtest.Anthropic, llmtest.Turn{Stop: "done"}, `Stop "done"`},
		{"a negative CutAfter", llmtest.OpenAI, llmtest.Turn{CutAfter: -1}, "CutAfter -1"},
		{"an error status that is no error", llmtest.OpenAICompatible, llmtest.Turn{Error: &llmtest.HTTPError{Status: 200}}, "Error.Status 200"},
		{"negative chunks", llmtest.Anthropic, llmtest.ToolTurn(llmtest.ToolCall{Name: "x", Chunks: -2}), "Chunks -2"},
		{"Ollama arguments that are no object", llmtest.Ollama, llmtest.ToolTurn(llmtest.ToolCall{Name: "x", Args: `[1]`}), "Ollama sends arguments as a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{TB: t}
			llmtest.New(rec, llmtest.Options{Kind: tc.kind}, tc.turn)
			if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], tc.want) {
				t.Errorf("reported %q, want one error containing %q", rec.errs, tc.want)
			}
		})
	}
	t.Run("broken arguments are allowed where they travel as text", func(t *testing.T) {
		t.Parallel()
		rec := &recorder{TB: t}
		llmtest.New(rec, llmtest.Options{Kind: llmtest.OpenAICompatible}, llmtest.ToolTurn(llmtest.ToolCall{Name: "x", Args: `{"a":`}))
		if len(rec.errs) != 0 {
			t.Errorf("reported %q, want nothing", rec.errs)
		}
	})
}
