package llm

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Timeout bounds of ProviderConfig.timeoutMs.
const (
	DefaultTimeoutMs = 120_000
	MinTimeoutMs     = 1_000
	MaxTimeoutMs     = 600_000
)

// ProviderConfig names a provider endpoint and model (runtime-protocol.md,
// ProviderConfig). The API key is tagged secret: the params decoder hands it
// to the log redactor, and nothing here logs it.
type ProviderConfig struct {
	Kind      Kind   `json:"kind"`
	Model     string `json:"model"`
	BaseURL   string `json:"baseUrl,omitempty"`
	APIKey    string `json:"apiKey,omitempty" secret:"true"`
	TimeoutMs *int   `json:"timeoutMs,omitempty"`
}

// Validate checks the config against the protocol's table. Field names in
// errors are relative to the config (the caller adds "provider.").
func (c *ProviderConfig) Validate() error {
	switch c.Kind {
	case Anthropic, OpenAI, OpenAICompatible, Ollama:
	case "":
		return errors.New("kind: required; one of anthropic, openai, openaiCompatible, ollama")
	default:
		return errors.New("kind: must be one of anthropic, openai, openaiCompatible, ollama")
	}
	if n := utf8.RuneCountInString(c.Model); n == 0 {
		return errors.New("model: required, 1 to 256 characters")
	} else if n > 256 {
		return fmt.Errorf("model: %d characters, at most 256", n)
	}
	if strings.IndexFunc(c.Model, unicode.IsControl) >= 0 {
		return errors.New("model: must not contain control characters")
	}
	if !utf8.ValidString(c.Model) {
		return errors.New("model: must be valid UTF-8")
	}
	if c.BaseURL == "" && c.Kind == OpenAICompatible {
		return errors.New("baseUrl: required for openaiCompatible")
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		switch {
		case err != nil:
			return errors.New("baseUrl: not a valid URL")
		case u.Scheme != "http" && u.Scheme != "https":
			return errors.New("baseUrl: must be an http or https URL")
		case u.User != nil:
			return errors.New("baseUrl: must not contain credentials; use apiKey")
		case u.Host == "" || u.Hostname() == "":
			return errors.New("baseUrl: must name a host")
		case u.RawQuery != "" || u.Fragment != "":
			return errors.New("baseUrl: must not have a query or a fragment")
		}
	}
	if c.APIKey == "" && c.Kind != Ollama {
		return fmt.Errorf("apiKey: required for %s", c.Kind)
	}
	if c.APIKey != "" && strings.IndexFunc(c.APIKey, unicode.IsControl) >= 0 {
		return errors.New("apiKey: must not contain control characters")
	}
	if c.APIKey != "" {
		if u, err := url.Parse(c.baseURL()); err == nil && u.Scheme == "http" && !isLoopback(u.Hostname()) {
			return errors.New("apiKey: refused over plain http to a host that is not loopback; use https")
		}
	}
	return nil
}

// isLoopback reports whether host is this machine: localhost or a loopback
// address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Timeout is the effective timeoutMs: the default when unset, clamped to
// 1 s .. 10 min.
func (c *ProviderConfig) Timeout() time.Duration {
	ms := DefaultTimeoutMs
	if c.TimeoutMs != nil {
		ms = min(max(*c.TimeoutMs, MinTimeoutMs), MaxTimeoutMs)
	}
	return time.Duration(ms) * time.Millisecond
}

// baseURL is the configured base URL or the kind's default, without a
// trailing slash.
func (c *ProviderConfig) baseURL() string {
	base := c.BaseURL
	if base == "" {
		for _, p := range Providers() {
			if p.Kind == c.Kind {
				base = p.DefaultBaseURL
			}
		}
	}
	return strings.TrimRight(base, "/")
}
