// Package llm owns the model providers: the four kinds the runtime speaks to
// (Anthropic, OpenAI, OpenAI-compatible endpoints and Ollama), what each can
// do, and the types that travel on the wire for them.
//
// It imports nothing of the project above it (rpc, steps/agent). Its one
// invariant: a provider's API key never reaches a log.
package llm
