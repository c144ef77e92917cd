package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrorKind classifies a provider failure (runtime-protocol.md, Errors).
type ErrorKind string

// The kinds of ProviderError.
const (
	KindInvalidConfig    ErrorKind = "invalidConfig"
	KindInvalidRequest   ErrorKind = "invalidRequest"
	KindAuth             ErrorKind = "auth"
	KindPermissionDenied ErrorKind = "permissionDenied"
	KindNotFound         ErrorKind = "notFound"
	KindRateLimited      ErrorKind = "rateLimited"
	KindOverloaded       ErrorKind = "overloaded"
	KindServer           ErrorKind = "server"
	KindNetwork          ErrorKind = "network"
	KindTimeout          ErrorKind = "timeout"
	KindCancelled        ErrorKind = "cancelled"
	KindProtocol         ErrorKind = "protocol"
)

// Retryable reports whether a request that failed this way may succeed if
// sent again. The runtime itself never sends a stream again.
func (k ErrorKind) Retryable() bool {
	switch k {
	case KindRateLimited, KindOverloaded, KindServer, KindNetwork, KindTimeout:
		return true
	}
	return false
}

// ProviderError is every failure of a provider call, as it travels in the
// data of a -32001 error.
type ProviderError struct {
	Kind      ErrorKind `json:"kind"`
	Message   string    `json:"message"`
	Status    int       `json:"status,omitempty"`
	Retryable bool      `json:"retryable"`
	// RetryAfterMs is the provider's Retry-After, when it sent one.
	RetryAfterMs int64 `json:"retryAfterMs,omitempty"`
}

func (e *ProviderError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s (HTTP %d): %s", e.Kind, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

func newError(kind ErrorKind, format string, args ...any) *ProviderError {
	return &ProviderError{Kind: kind, Message: fmt.Sprintf(format, args...), Retryable: kind.Retryable()}
}

// Causes of a cancelled request context, set by the transport.
var (
	errHeaderTimeout = errors.New("no response headers within timeoutMs")
	errIdleTimeout   = errors.New("the stream was idle for longer than timeoutMs")
)

// classify turns any failure of a call into a ProviderError. ctx is the
// call's context, whose cause tells a timeout from a cancellation.
func classify(ctx context.Context, err error) *ProviderError {
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe
	}
	if cause := context.Cause(ctx); cause != nil {
		switch {
		case errors.Is(cause, errHeaderTimeout), errors.Is(cause, errIdleTimeout):
			return newError(KindTimeout, "%s", cause.Error())
		default:
			return newError(KindCancelled, "the request was cancelled")
		}
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return newError(KindTimeout, "%s", scrub(err))
	}
	return newError(KindNetwork, "%s", scrub(err))
}

// scrub renders a transport error without the request URL's query (which
// some endpoints use for keys) and without repeating Go's "Post" prefix.
func scrub(err error) string {
	var ue interface {
		Unwrap() error
	}
	msg := err.Error()
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil && strings.Contains(msg, "://") {
			msg = inner.Error()
		}
	}
	return msg
}

// statusError maps an HTTP error reply. providerTypes are the error type
// and code the provider's body names (anthropic "overloaded_error", OpenAI
// "rate_limit_exceeded", ...); a known one refines the status.
func statusError(status int, header http.Header, message string, providerTypes ...string) *ProviderError {
	kind := kindForStatus(status)
	for _, t := range providerTypes {
		if k, ok := kindForType[t]; ok {
			kind = k
			break
		}
	}
	if message == "" {
		message = http.StatusText(status)
	}
	if message == "" {
		message = fmt.Sprintf("HTTP %d", status)
	}
	e := &ProviderError{Kind: kind, Message: message, Status: status, Retryable: kind.Retryable()}
	e.RetryAfterMs = retryAfter(header, time.Now())
	return e
}

// streamEventError is the ProviderError of an error event inside a stream:
// the kind its type or code names, else server (the stream started, so the
// request itself was accepted).
func streamEventError(message string, types ...string) *ProviderError {
	kind := KindServer
	for _, t := range types {
		if k, ok := kindForType[t]; ok {
			kind = k
			break
		}
	}
	if message == "" {
		message = "the provider reported an error in the stream"
	}
	return &ProviderError{Kind: kind, Message: clipText(message), Retryable: kind.Retryable()}
}

// kindForType maps the specific error types and codes providers put in
// their bodies; generic ones (invalid_request_error, api_error) say no more
// than the status.
var kindForType = map[string]ErrorKind{
	"overloaded_error":     KindOverloaded,
	"rate_limit_error":     KindRateLimited,
	"rate_limit_exceeded":  KindRateLimited,
	"insufficient_quota":   KindRateLimited,
	"authentication_error": KindAuth,
	"invalid_api_key":      KindAuth,
	"permission_error":     KindPermissionDenied,
	"not_found_error":      KindNotFound,
	"model_not_found":      KindNotFound,
}

func kindForStatus(status int) ErrorKind {
	switch {
	case status == http.StatusUnauthorized:
		return KindAuth
	case status == http.StatusForbidden:
		return KindPermissionDenied
	case status == http.StatusNotFound:
		return KindNotFound
	case status == http.StatusRequestTimeout:
		return KindTimeout
	case status == http.StatusTooManyRequests:
		return KindRateLimited
	case status == http.StatusServiceUnavailable || status == 529:
		return KindOverloaded
	case status >= 500:
		return KindServer
	}
	return KindInvalidRequest
}

// retryAfter reads Retry-After (seconds or an HTTP date) or OpenAI's
// retry-after-ms, in milliseconds; 0 when absent or unreadable.
func retryAfter(h http.Header, now time.Time) int64 {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return int64(ms)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return int64(s * 1000)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now).Milliseconds()
	}
	return 0
}
