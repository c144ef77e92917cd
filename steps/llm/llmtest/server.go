package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
)

// Kind names the provider API a server speaks, with the strings of the
// protocol's ProviderConfig.kind.
type Kind string

// The four kinds.
const (
	Anthropic        Kind = "anthropic"
	OpenAI           Kind = "openai"
	OpenAICompatible Kind = "openaiCompatible"
	Ollama           Kind = "ollama"
)

// Kinds lists every kind, for tests that run once per provider.
func Kinds() []Kind { return []Kind{Anthropic, OpenAI, OpenAICompatible, Ollama} }

// Model is one entry of the model list endpoints.
type Model struct {
	ID string
	// ContextWindow, when not 0, goes in the kind's field: Anthropic
	// max_input_tokens; OpenAI-compatible the field ContextField names;
	// Ollama model_info["<family>.context_length"] of /api/show.
	ContextWindow int
	// ContextField (OpenAI-compatible only) is "context_length" (the
	// default), "max_context_length", "context_window", "max_model_len",
	// "top_provider.context_length" or "max_token_size".
	ContextField string
	// Capabilities are Ollama's /api/show capabilities ("completion",
	// "tools", "vision", "thinking", "embedding"). OpenAI-compatible
	// endpoints report them OpenRouter's way: "tools" in
	// supported_parameters, "vision" as architecture.input_modalities
	// ["text","image"], "thinking" as supported_parameters "reasoning".
	Capabilities []string
	// ParameterSize is Ollama's details.parameter_size, such as "8.2B".
	ParameterSize string
	// Quantization is Ollama's details.quantization_level, such as "Q4_K_M".
	Quantization string
	// Family is Ollama's details.family and model_info key prefix; "" is
	// "llama".
	Family string
}

// Options configure a server.
type Options struct {
	Kind Kind
	// Models are served by the model list endpoints.
	Models []Model
	// NoModels makes an OpenAI-compatible /models answer 404, as an
	// endpoint that cannot list does.
	NoModels bool
	// APIKey, when set, makes every request without it fail with 401 in
	// the provider's error shape (Anthropic x-api-key; the others
	// Authorization: Bearer). Such a request does not use up a turn.
	APIKey string
}

// Request is one request the server received.
type Request struct {
	Method, Path string
	Query        url.Values
	Header       http.Header
	Body         []byte
	// JSON is the decoded body when it is a JSON object. It is shared
	// between copies: read it, do not change it.
	JSON map[string]any
	// ClientClosed: the client went away before the reply finished.
	ClientClosed bool
}

// Server is a fake model provider of one kind on 127.0.0.1 that answers
// chat requests from a script of turns, one turn a request in arrival
// order, and records every request before answering it.
type Server struct {
	opts Options
	d    dialect
	hs   *httptest.Server
	t    testing.TB
	done chan struct{} // closed when the test ends: every pause gives up

	mu      sync.Mutex
	turns   []Turn
	served  int        // turns handed out so far
	reqs    []*Request // every request, in arrival order
	chats   []*Request // the chat requests among them
	changed chan struct{}
}

// New starts a server of opts.Kind that answers with turns (Push adds
// more). It is closed when the test ends.
func New(t testing.TB, opts Options, turns ...Turn) *Server {
	t.Helper()
	d := dialectFor(opts.Kind)
	if d == nil {
		t.Fatalf("llmtest: unknown kind %q: want anthropic, openai, openaiCompatible or ollama", opts.Kind)
	}
	s := &Server{opts: opts, d: d, t: t, done: make(chan struct{}), changed: make(chan struct{})}
	s.Push(turns...)
	s.hs = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	t.Cleanup(s.close)
	return s
}

func (s *Server) close() {
	close(s.done)
	// Close waits for every handler; a stream stuck writing to a client
	// that stopped reading would hold it forever.
	s.hs.CloseClientConnections()
	s.hs.Close()
}

// URL is the server's root, http://127.0.0.1:port.
func (s *Server) URL() string { return s.hs.URL }

// BaseURL is what ProviderConfig.baseUrl should be: URL() for Anthropic
// and Ollama, URL()+"/v1" for OpenAI and OpenAI-compatible endpoints.
func (s *Server) BaseURL() string { return s.d.baseURL(s.hs.URL) }

// Push appends turns to the script. A malformed turn fails the test.
func (s *Server) Push(turns ...Turn) {
	s.t.Helper()
	for i, turn := range turns {
		for _, msg := range turn.validate(s.opts.Kind) {
			reportf(s.t, "turn %d: %s", i+1, msg)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
}

// Remaining is the number of scripted turns no request has used yet.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns) - s.served
}

// Requests returns every request received so far (chat and model
// endpoints), in order.
func (s *Server) Requests() []Request { return s.copies(func() []*Request { return s.reqs }) }

// ChatRequests returns the requests to the chat endpoint, in order.
func (s *Server) ChatRequests() []Request { return s.copies(func() []*Request { return s.chats }) }

func (s *Server) copies(list func() []*Request) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, 0, len(list()))
	for _, r := range list() {
		out = append(out, *r)
	}
	return out
}

// WaitRequests waits until at least n chat requests have arrived.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	return s.wait(ctx, func() bool { return len(s.chats) >= n },
		"waiting for %d chat requests", n)
}

// WaitClosed waits until the client closed the connection of the n-th chat
// request (counting from 1, as in ChatRequests()[n-1]) before its reply
// finished, which proves that cancelling a call closes its stream. A stream
// sent without Delay, Gap or HeaderDelay may finish before any client can
// close it. It returns the context's error (wrapped) when ctx ends first.
func (s *Server) WaitClosed(ctx context.Context, n int) error {
	if n < 1 {
		return fmt.Errorf("llmtest: WaitClosed(%d): chat requests count from 1", n)
	}
	return s.wait(ctx, func() bool { return len(s.chats) >= n && s.chats[n-1].ClientClosed },
		"waiting for the client to close chat request %d", n)
}

// wait blocks until cond, checked under the lock, holds.
func (s *Server) wait(ctx context.Context, cond func() bool, format string, args ...any) error {
	for {
		s.mu.Lock()
		ok, changed := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("llmtest: "+format+": %w", append(args, ctx.Err())...)
		}
	}
}

// notify wakes every waiter; the caller holds s.mu.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) markClosed(r *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.ClientClosed = true
	s.notify()
}

// record stores a request and, for an accepted chat request, hands it the
// next turn under the same lock, so that turns follow arrival order.
func (s *Server) record(r *http.Request, body []byte, decoded map[string]any, chat, accepted bool) (*Request, *call, bool) {
	rec := &Request{
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  r.URL.Query(),
		Header: r.Header.Clone(),
		Body:   body,
		JSON:   decoded,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notify()
	s.reqs = append(s.reqs, rec)
	if !chat {
		return rec, nil, false
	}
	s.chats = append(s.chats, rec)
	c := &call{n: len(s.chats), body: decoded}
	if !accepted || s.served >= len(s.turns) {
		return rec, c, false
	}
	c.turn = s.turns[s.served]
	s.served++
	return rec, c, true
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away mid-body; there is nobody to answer
	}
	var decoded map[string]any
	if json.Unmarshal(body, &decoded) != nil {
		decoded = nil
	}
	chat := r.Method == http.MethodPost && r.URL.Path == s.d.chatPath()
	// A rejected request is recorded but uses up no turn: the real API
	// would not have started generating either.
	reject := s.d.precheck(r)
	if s.opts.APIKey != "" && !s.d.authorized(r.Header, s.opts.APIKey) {
		e := s.d.unauthorized()
		reject = &e
	}
	if reject == nil && chat && decoded == nil {
		reject = &HTTPError{Status: http.StatusBadRequest, Message: "llmtest: the chat request body is not a JSON object"}
	}
	rec, c, ok := s.record(r, body, decoded, chat, reject == nil)
	switch {
	case reject != nil:
		s.writeError(w, *reject)
	case chat && !ok:
		s.mu.Lock()
		total := len(s.turns)
		s.mu.Unlock()
		s.writeError(w, HTTPError{Status: http.StatusInternalServerError,
			Message: fmt.Sprintf("llmtest: no scripted turn left for chat request %d (%d turns scripted)", c.n, total)})
	case chat:
		s.serveChat(w, r, rec, c)
	case !s.d.serveModels(s, w, r, body):
		s.writeError(w, HTTPError{Status: http.StatusNotFound,
			Message: fmt.Sprintf("llmtest: %s %s is not an endpoint of %s", r.Method, r.URL.Path, s.opts.Kind)})
	}
}

func (s *Server) serveChat(w http.ResponseWriter, r *http.Request, rec *Request, c *call) {
	if !s.pause(r, rec, c.turn.HeaderDelay) {
		return
	}
	if e := c.turn.Error; e != nil {
		s.writeError(w, *e)
		return
	}
	if !s.d.streaming(c.body) {
		s.writeJSON(w, http.StatusOK, s.d.reply(c))
		return
	}
	s.play(w, r, rec, c.turn, s.plan(c))
}

// writeError answers with e in the kind's error shape.
func (s *Server) writeError(w http.ResponseWriter, e HTTPError) {
	if e.RetryAfter != "" {
		w.Header().Set("Retry-After", e.RetryAfter)
	}
	if h, ok := s.d.(errorHeaderer); ok {
		h.errorHeaders(w.Header(), e)
	}
	s.writeJSON(w, e.Status, s.d.errorBody(e))
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, body json.RawMessage) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
