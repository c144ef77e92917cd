package e2e

import (
	"encoding/base64"
	"strings"
	"testing"
)

// pngBase64 is a 1x1 PNG.
const pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

func userText(text string) map[string]any {
	return map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}}
}

func imagePart(mediaType, data string) map[string]any {
	return map[string]any{"type": "image", "mediaType": mediaType, "data": data}
}

// TestProviderConfigAndChatRequestRules checks every validation rule of
// ProviderConfig, ChatRequest and ImageInput: -32602 with the field named.
func TestProviderConfigAndChatRequestRules(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	good := func() map[string]any {
		return map[string]any{"kind": "anthropic", "model": "claude-sonnet-4-5", "apiKey": "sk-ant-test-000000"}
	}
	with := func(k string, v any) map[string]any {
		p := good()
		if v == nil {
			delete(p, k)
		} else {
			p[k] = v
		}
		return p
	}
	okRequest := map[string]any{"messages": []any{userText("hi")}}
	cases := []struct {
		name     string
		provider any
		request  any
		field    string
		rule     string
	}{
		{"the provider is required", nil, okRequest, "provider", "required"},
		{"kind is required", with("kind", nil), okRequest, "provider.kind", "required"},
		{"kind is one of four", with("kind", "gemini"), okRequest, "provider.kind", "one of"},
		{"kind is a string", with("kind", 4), okRequest, "provider.kind", "string"},
		{"model is required", with("model", nil), okRequest, "provider.model", "required"},
		{"model is at most 256 characters", with("model", strings.Repeat("m", 257)), okRequest, "provider.model", "257 characters, at most 256"},
		{"model has no control characters", with("model", "claude\nsonnet"), okRequest, "provider.model", "control"},
		{"baseUrl is http or https", with("baseUrl", "ftp://example.com"), okRequest, "provider.baseUrl", "http or https"},
		{"baseUrl has no credentials", with("baseUrl", "https://user:pw@example.com"), okRequest, "provider.baseUrl", "credentials"},
		{"baseUrl is required for openaiCompatible", map[string]any{"kind": "openaiCompatible", "model": "m", "apiKey": "sk-test-000000"}, okRequest, "provider.baseUrl", "required"},
		{"apiKey is required for anthropic", with("apiKey", nil), okRequest, "provider.apiKey", "required"},
		{"apiKey is required for openai", map[string]any{"kind": "openai", "model": "gpt-5"}, okRequest, "provider.apiKey", "required"},
		{"apiKey is refused over plain http to another host", with("baseUrl", "http://api.example.com"), okRequest, "provider.apiKey", "http"},
		{"timeoutMs is a number", with("timeoutMs", "fast"), okRequest, "provider.timeoutMs", "integer"},
		{"unknown provider fields are refused", with("region", "eu"), okRequest, "provider.region", "unknown field"},
		{"the request is required", good(), nil, "request", "required"},
		{"messages are required", good(), map[string]any{"messages": []any{}}, "request.messages", "required"},
		{"the first message is the user's", good(), map[string]any{"messages": []any{map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "x"}}}}}, "request.messages[0].role", "user"},
		{"roles are user or assistant", good(), map[string]any{"messages": []any{userText("a"), map[string]any{"role": "system", "content": []any{map[string]any{"type": "text", "text": "x"}}}}}, "request.messages[1].role", "assistant"},
		{"part types are known", good(), map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "video"}}}}}, "request.messages[0].content[0].type", "one of"},
		{"a part carries only its own fields", good(), map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "x", "toolUseId": "t1"}}}}}, "request.messages[0].content[0].toolUseId", "not allowed"},
		{"unknown part fields are refused", good(), map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "x", "colour": "red"}}}}}, "request.messages[0].content[0].colour", "unknown field"},
		{"a tool schema is an object", good(), map[string]any{"messages": []any{userText("a")}, "tools": []any{map[string]any{"name": "t", "inputSchema": "string"}}}, "request.tools[0].inputSchema", "JSON Schema object"},
		{"temperature is 0 to 2", good(), map[string]any{"messages": []any{userText("a")}, "temperature": 2.5}, "request.temperature", "0 to 2"},
		{"maxTokens is positive", good(), map[string]any{"messages": []any{userText("a")}, "maxTokens": 0}, "request.maxTokens", "1 to"},
		{"an image has a known media type", good(), map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{imagePart("image/bmp", pngBase64)}}}}, "request.messages[0].content[0].mediaType", "image/png"},
		{"an image is base64", good(), map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{imagePart("image/png", "not base64!")}}}}, "request.messages[0].content[0].data", "base64"},
		{"an image has no data: prefix", good(), map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{imagePart("image/png", "data:image/png;base64,"+pngBase64)}}}}, "request.messages[0].content[0].data", "prefix"},
		{"an image is at most 7 000 000 characters", good(), map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{imagePart("image/png", base64.StdEncoding.EncodeToString(make([]byte, 5_250_003)))}}}}, "request.messages[0].content[0].data", "at most 7000000"},
		{"a message takes at most 8 images", good(), map[string]any{"messages": []any{map[string]any{"role": "user", "content": nineImages()}}}, "request.messages[0].content", "at most 8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			params := map[string]any{}
			if tc.provider != nil {
				params["provider"] = tc.provider
			}
			if tc.request != nil {
				params["request"] = tc.request
			}
			ExpectError(t, r.Call("chat/send", params), codeInvalidParams, tc.field+":", tc.rule)
		})
	}

	// The provider methods share the config rules.
	for _, method := range []string{"provider/listModels", "provider/models", "provider/contextWindow", "provider/test"} {
		ExpectError(t, r.Call(method, map[string]any{"provider": with("kind", "gemini")}), codeInvalidParams, "provider.kind:")
		ExpectError(t, r.Call(method, map[string]any{}), codeInvalidParams, "provider: required")
	}
}

func nineImages() []any {
	var parts []any
	for range 9 {
		parts = append(parts, imagePart("image/png", pngBase64))
	}
	return parts
}
