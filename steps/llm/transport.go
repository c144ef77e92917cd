package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// httpClient is shared by every provider call: connections are pooled per
// endpoint, proxies come from the environment, and there is no overall
// deadline (a stream may run for minutes; timeoutMs bounds its idle gaps).
var httpClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

// bearerHeader authenticates with the API key as a bearer token, when there
// is one (OpenAI-compatible servers, Ollama behind a proxy).
func bearerHeader(cfg *ProviderConfig) http.Header {
	h := http.Header{}
	if cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	return h
}

// maxErrorBody bounds how much of an error reply is read.
const maxErrorBody = 64 << 10

// stream is an open HTTP response body whose every idle gap longer than
// the config's timeout ends the call with a timeout.
type stream struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	body    io.ReadCloser
	timeout time.Duration
	idle    *time.Timer
	once    sync.Once
}

func (s *stream) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	if n > 0 {
		s.idle.Reset(s.timeout)
	}
	return n, err
}

// Close ends the call; the connection closes if the body was not drained,
// so the provider sees a cancelled stream at once.
func (s *stream) Close() error {
	s.once.Do(func() {
		s.idle.Stop()
		s.body.Close()
		s.cancel(nil)
	})
	return nil
}

// fail classifies a failure while reading the stream.
func (s *stream) fail(err error) *ProviderError { return classify(s.ctx, err) }

// request describes one HTTP call to a provider.
type request struct {
	method string
	url    string
	body   any // marshalled as JSON when not nil
	header http.Header
}

// open sends the request and returns its body as a stream. The timeout
// covers the wait for the response headers (connecting included), then
// every gap between reads. An HTTP error status becomes a ProviderError.
func open(ctx context.Context, cfg *ProviderConfig, r request) (*stream, error) {
	var body io.Reader
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return nil, newError(KindInvalidRequest, "encoding the request: %v", err)
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	timeout := cfg.Timeout()
	headerTimer := time.AfterFunc(timeout, func() { cancel(errHeaderTimeout) })
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		headerTimer.Stop()
		cancel(nil)
		return nil, newError(KindInvalidConfig, "baseUrl: %v", err)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	headerTimer.Stop()
	if err != nil {
		pe := classify(ctx, err)
		cancel(nil)
		return nil, pe
	}
	s := &stream{ctx: ctx, cancel: cancel, body: resp.Body, timeout: timeout}
	s.idle = time.AfterFunc(timeout, func() { cancel(errIdleTimeout) })
	if resp.StatusCode >= 300 {
		defer s.Close()
		raw, err := io.ReadAll(io.LimitReader(s, maxErrorBody))
		if err != nil && len(raw) == 0 {
			return nil, s.fail(err)
		}
		msg, types := errorBody(raw)
		return nil, statusError(resp.StatusCode, resp.Header, msg, types...)
	}
	return s, nil
}

// errorBody finds the message and the provider's error type in an error
// reply, whichever provider's shape it has:
// {"error":{"message","type","code"}} (OpenAI and compatible servers),
// {"type":"error","error":{"type","message"}} (Anthropic), {"error":"..."}
// (Ollama), {"message":"..."}, or plain text.
func errorBody(raw []byte) (message string, errTypes []string) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal(raw, &v) == nil {
		var nested struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		var flat string
		switch {
		case json.Unmarshal(v.Error, &nested) == nil && nested.Message != "":
			var code string
			_ = json.Unmarshal(nested.Code, &code)
			return clipText(nested.Message), []string{nested.Type, code}
		case json.Unmarshal(v.Error, &flat) == nil && flat != "":
			return clipText(flat), nil
		case v.Message != "":
			return clipText(v.Message), nil
		case v.Detail != "":
			return clipText(v.Detail), nil
		}
	}
	return clipText(strings.TrimSpace(string(raw))), nil
}

// clipText bounds a provider's message for the client.
func clipText(s string) string {
	const max = 2000
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// maxJSONBody bounds a non-streaming reply (model lists, model details).
const maxJSONBody = 16 << 20

// fetchJSON performs a non-streaming call and decodes its JSON reply into v,
// with the same timeouts and error mapping as a stream.
func fetchJSON(ctx context.Context, cfg *ProviderConfig, r request, v any) error {
	s, err := open(ctx, cfg, r)
	if err != nil {
		return err
	}
	defer s.Close()
	raw, err := io.ReadAll(io.LimitReader(s, maxJSONBody+1))
	if err != nil {
		return s.fail(err)
	}
	if len(raw) > maxJSONBody {
		return newError(KindProtocol, "the reply is larger than %d bytes", maxJSONBody)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return newError(KindProtocol, "the reply is not the JSON expected: %v", err)
	}
	return nil
}
