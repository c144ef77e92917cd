package llm

// Kind names a provider API.
type Kind string

// The provider kinds of the protocol's ProviderConfig.
const (
	Anthropic        Kind = "anthropic"
	OpenAI           Kind = "openai"
	OpenAICompatible Kind = "openaiCompatible"
	Ollama           Kind = "ollama"
)

// Capabilities says what the runtime can do with a provider kind.
type Capabilities struct {
	// Streaming: responses arrive as deltas (chat/event textDelta).
	Streaming bool `json:"streaming"`
	// Tools: the API takes tool definitions and returns tool calls.
	Tools bool `json:"tools"`
	// Images: user messages may carry image parts.
	Images bool `json:"images"`
	// ListModels: the endpoint lists its models (provider/listModels).
	ListModels bool `json:"listModels"`
	// ContextWindowLookup: the endpoint reports a model's context window;
	// otherwise the runtime uses its built-in estimate.
	ContextWindowLookup bool `json:"contextWindowLookup"`
	// BaseURLRequired: ProviderConfig.baseUrl must be set.
	BaseURLRequired bool `json:"baseUrlRequired"`
}

// ProviderInfo is one entry of initialize's providers list.
type ProviderInfo struct {
	Kind           Kind         `json:"kind"`
	Capabilities   Capabilities `json:"capabilities"`
	RequiresAPIKey bool         `json:"requiresApiKey"`
	DefaultBaseURL string       `json:"defaultBaseUrl,omitempty"`
}

// Providers lists every provider kind the runtime speaks, in the order of
// the protocol's ProviderConfig.kind.
func Providers() []ProviderInfo {
	return []ProviderInfo{
		{
			Kind:           Anthropic,
			Capabilities:   Capabilities{Streaming: true, Tools: true, Images: true, ListModels: true, ContextWindowLookup: true},
			RequiresAPIKey: true,
			DefaultBaseURL: "https://api.anthropic.com",
		},
		{
			Kind:           OpenAI,
			Capabilities:   Capabilities{Streaming: true, Tools: true, Images: true, ListModels: true},
			RequiresAPIKey: true,
			DefaultBaseURL: "https://api.openai.com/v1",
		},
		{
			Kind:           OpenAICompatible,
			Capabilities:   Capabilities{Streaming: true, Tools: true, Images: true, ListModels: true, ContextWindowLookup: true, BaseURLRequired: true},
			RequiresAPIKey: true,
		},
		{
			Kind:           Ollama,
			Capabilities:   Capabilities{Streaming: true, Tools: true, Images: true, ListModels: true, ContextWindowLookup: true},
			RequiresAPIKey: false,
			DefaultBaseURL: "http://127.0.0.1:11434",
		},
	}
}
