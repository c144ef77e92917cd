package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/creachadair/jrpc2"

	"github.com/task-x/runtime/steps/llm"
)

// ProviderParams are the params of provider/listModels, provider/models,
// provider/contextWindow and provider/test.
type ProviderParams struct {
	Provider *llm.ProviderConfig `json:"provider"`
}

// Validate checks the provider config.
func (p *ProviderParams) Validate() error { return validateProvider(p.Provider) }

func validateProvider(cfg *llm.ProviderConfig) error {
	if cfg == nil {
		return errors.New("provider: required")
	}
	if err := cfg.Validate(); err != nil {
		return prefixField("provider.", err)
	}
	return nil
}

// prefixField puts a parent's name in front of a "field: rule" error.
func prefixField(prefix string, err error) error {
	msg := err.Error()
	if len(msg) > 0 && msg[0] == '[' {
		prefix = prefix[:len(prefix)-1] // "images." + "[0].data" reads images[0].data
	}
	return errors.New(prefix + msg)
}

// ChatSendParams are chat/send's params.
type ChatSendParams struct {
	Provider *llm.ProviderConfig `json:"provider"`
	Request  *llm.ChatRequest    `json:"request"`
}

// Validate checks the provider and the request.
func (p *ChatSendParams) Validate() error {
	if err := validateProvider(p.Provider); err != nil {
		return err
	}
	if p.Request == nil {
		return errors.New("request: required")
	}
	if err := p.Request.Validate(); err != nil {
		return prefixField("request.", err)
	}
	return nil
}

// ChatEventParams are the params of a chat/event notification.
type ChatEventParams struct {
	RequestID json.RawMessage `json:"requestId"`
	Event     llm.Event       `json:"event"`
}

func (s *Server) bindProviders() {
	s.bind("provider/listModels", typed(s, s.listModels))
	s.bind("provider/models", typed(s, s.providerModels))
	s.bind("provider/contextWindow", typed(s, s.contextWindow))
	s.bind("provider/test", typed(s, s.providerTest))
	s.bind("chat/send", typed(s, s.chatSend))
}

// client makes the provider client of validated params.
func client(cfg *llm.ProviderConfig) (*llm.Client, error) {
	return llm.NewClient(*cfg)
}

func (s *Server) listModels(ctx context.Context, p *ProviderParams) (map[string][]string, error) {
	c, err := client(p.Provider)
	if err != nil {
		return nil, err
	}
	ids, err := c.ListModels(ctx)
	if err != nil {
		return nil, err
	}
	return map[string][]string{"models": ids}, nil
}

func (s *Server) providerModels(ctx context.Context, p *ProviderParams) (map[string][]llm.ModelInfo, error) {
	c, err := client(p.Provider)
	if err != nil {
		return nil, err
	}
	models, err := c.Models(ctx)
	if err != nil {
		return nil, err
	}
	return map[string][]llm.ModelInfo{"models": models}, nil
}

func (s *Server) contextWindow(ctx context.Context, p *ProviderParams) (map[string]int, error) {
	c, err := client(p.Provider)
	if err != nil {
		return nil, err
	}
	return map[string]int{"tokens": c.ContextWindow(ctx)}, nil
}

func (s *Server) providerTest(ctx context.Context, p *ProviderParams) (*llm.TestResult, error) {
	c, err := client(p.Provider)
	if err != nil {
		return nil, err
	}
	return c.Test(ctx)
}

// chatSend streams one model turn: a chat/event notification for each event,
// written before the reply, then the combined result.
func (s *Server) chatSend(ctx context.Context, p *ChatSendParams) (*llm.ChatResult, error) {
	c, err := client(p.Provider)
	if err != nil {
		return nil, err
	}
	req := jrpc2.InboundRequest(ctx)
	srv := jrpc2.ServerFromContext(ctx)
	requestID := json.RawMessage(req.ID())
	start := time.Now()
	res, err := c.Chat(ctx, p.Request, func(ev llm.Event) {
		if err := srv.Notify(ctx, "chat/event", ChatEventParams{RequestID: requestID, Event: ev}); err != nil {
			s.log.Debug("chat/event not sent", "err", err.Error())
		}
	})
	if err != nil {
		var pe *llm.ProviderError
		if errors.As(err, &pe) {
			s.log.Info("model call failed", "provider", p.Provider.Kind, "model", p.Provider.Model,
				"kind", pe.Kind, "status", pe.Status, "ms", time.Since(start).Milliseconds())
		}
		return nil, err
	}
	s.log.Info("model call", "provider", p.Provider.Kind, "model", p.Provider.Model,
		"inputTokens", res.Usage.InputTokens, "outputTokens", res.Usage.OutputTokens,
		"stop", res.StopReason, "ms", time.Since(start).Milliseconds())
	return res, nil
}
