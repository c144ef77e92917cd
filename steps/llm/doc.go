// Package llm owns the model providers: the four kinds the runtime speaks to
// (Anthropic's Messages API, OpenAI's Responses API, OpenAI-compatible Chat
// Completions servers, and Ollama), what each can do, streaming turns with
// tool calls and images, model lists and context windows, and the
// ProviderError every failure becomes.
//
// The wire code is written here rather than taken from the official SDKs:
// the protocol needs timeoutMs to bound the wait for headers and then each
// idle gap of a stream (the SDKs' timeouts are whole-request deadlines), it
// needs no retries (the SDKs retry by default), it maps every failure,
// including errors inside a stream, to one table, and two of the four kinds
// have no official SDK. One transport and one SSE/NDJSON reader serve all
// four; each kind adds a dialect: its request shape and its event decoding.
//
// It imports nothing of the project above it (rpc, steps/agent). Its
// invariants: a provider's API key never reaches a log or an error message,
// and a call is never retried by the runtime.
package llm
