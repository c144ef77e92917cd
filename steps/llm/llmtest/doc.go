// Package llmtest is a fake model provider for tests: an HTTP server on
// 127.0.0.1 that speaks one of the four provider APIs (Anthropic Messages,
// OpenAI Responses, OpenAI-compatible Chat Completions, Ollama) with the
// events, fields and error shapes the real ones send, answers chat requests
// from a script of turns, and records every request it receives.
//
// A turn scripts what one reply holds (text chunks, tool calls, usage, the
// stop reason) and how it goes wrong (an HTTP error, a pause before the
// headers, an idle gap, a stream cut mid-way, a broken event, an in-stream
// error). Unit tests of steps/llm and the e2e suite share it:
//
//	srv := llmtest.New(t, llmtest.Options{Kind: llmtest.Anthropic},
//		llmtest.Turn{
//			Text:      []string{"Let me ", "look."},
//			ToolCalls: []llmtest.ToolCall{{Name: "read", Args: `{"path":"é.go"}`, Chunks: 3}},
//		},
//		llmtest.TextTurn("Done."),
//	)
//	// Point the client under test at srv.BaseURL() (ProviderConfig.baseUrl)
//	// and run it; then look at what it sent:
//	second := srv.ChatRequests()[1].JSON // the request that carried the tool result
//
// Cancellation is observable too: script a turn with a Delay, cancel the
// client mid-stream, and srv.WaitClosed(ctx, n) returns once the server has
// seen the n-th chat request's connection go away.
//
// It imports nothing of the project, so that any package's tests can use
// it (steps/llm's own tests included). Its invariants: turns are handed
// out in the order chat requests arrive, one a request, and a request is
// recorded before it is answered, so a test that has seen a reply can
// always see the request behind it.
package llmtest
