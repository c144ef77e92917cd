package llm

import (
	"bufio"
	"context"
	"errors"
	"io"
)

// dialect is one provider API's wire format. Each kind has one; Client
// holds what they share (validation, transport, timeouts, errors, the
// assembly of a turn, caching).
type dialect interface {
	// chat builds the streaming request of one turn.
	chat(cfg *ProviderConfig, req *ChatRequest) (request, error)
	// decode reads a stream into t up to the provider's final event and
	// returns the stop reason in the protocol's words. A stream that ends
	// before its final event returns errStreamEnded; a malformed one, a
	// ProviderError of kind protocol; an error event, the ProviderError it
	// describes.
	decode(body io.Reader, t *turn) (StopReason, error)
	// models lists the endpoint's models with what it says of each.
	models(ctx context.Context, cfg *ProviderConfig) ([]ModelInfo, error)
	// contextWindow asks the endpoint for one model's input window; 0 when
	// it does not say.
	contextWindow(ctx context.Context, cfg *ProviderConfig, model string) (int, error)
}

// Client talks to one provider endpoint with one model.
type Client struct {
	cfg ProviderConfig
	d   dialect
}

// NewClient validates cfg and returns its client.
func NewClient(cfg ProviderConfig) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, &ProviderError{Kind: KindInvalidConfig, Message: err.Error()}
	}
	d, ok := dialects[cfg.Kind]
	if !ok {
		return nil, newError(KindInvalidConfig, "kind: %s has no client", cfg.Kind)
	}
	return &Client{cfg: cfg, d: d}, nil
}

// dialects holds each kind's wire format; each file registers its own.
var dialects = map[Kind]dialect{}

// Config returns the client's config.
func (c *Client) Config() ProviderConfig { return c.cfg }

// Chat streams one turn: emit gets each event as it comes (textDelta,
// toolCall, usage, done), and the result combines them. Cancelling ctx
// closes the HTTP stream at once. The call is never retried.
func (c *Client) Chat(ctx context.Context, req *ChatRequest, emit func(Event)) (*ChatResult, error) {
	if err := req.Validate(); err != nil {
		return nil, newError(KindInvalidRequest, "%v", err)
	}
	r, err := c.d.chat(&c.cfg, req)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, &c.cfg, r)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	t := newTurn(emit)
	stop, err := c.d.decode(s, t)
	if err != nil {
		return nil, streamFailure(s, err)
	}
	return t.finish(stop), nil
}

// streamFailure classifies an error met while reading a stream: the call's
// own end (cancellation, an idle timeout) first, then what the stream said.
func streamFailure(s *stream, err error) *ProviderError {
	if s.ctx.Err() != nil {
		return classify(s.ctx, err)
	}
	var pe *ProviderError
	switch {
	case errors.As(err, &pe):
		return pe
	case errors.Is(err, bufio.ErrTooLong):
		return newError(KindProtocol, "a line of the stream is longer than %d bytes", maxStreamLine)
	case errors.Is(err, errStreamEnded), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return newError(KindNetwork, "%s", errStreamEnded.Error())
	}
	return classify(s.ctx, err)
}

// malformed is the error of a stream event that cannot be read.
func malformed(what string, err error) *ProviderError {
	return newError(KindProtocol, "malformed %s in the stream: %v", what, err)
}
