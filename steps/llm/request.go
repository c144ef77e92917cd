package llm

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Limits of ChatRequest and ImageInput.
const (
	DefaultMaxTokens = 4096
	MaxImageChars    = 7_000_000
	MaxImages        = 8
)

// ChatRequest is one model turn (runtime-protocol.md, ChatRequest).
type ChatRequest struct {
	System      string     `json:"system,omitempty"`
	Messages    []Message  `json:"messages"`
	Tools       []ToolSpec `json:"tools,omitempty"`
	MaxTokens   *int       `json:"maxTokens,omitempty"`
	Temperature *float64   `json:"temperature,omitempty"`
	// ContextWindow is passed to APIs that take one (Ollama num_ctx).
	ContextWindow int `json:"contextWindow,omitempty"`
}

// Role is who wrote a message.
type Role string

// The roles of a Message.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one message of the conversation.
type Message struct {
	Role    Role          `json:"role"`
	Content []ContentPart `json:"content"`
}

// PartType tells the kinds of ContentPart apart.
type PartType string

// The ContentPart types.
const (
	PartText       PartType = "text"
	PartToolUse    PartType = "toolUse"
	PartToolResult PartType = "toolResult"
	PartImage      PartType = "image"
)

// ContentPart is one part of a message; Type says which fields it uses.
type ContentPart struct {
	Type PartType `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// toolUse
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// toolResult
	ToolUseID string `json:"toolUseId,omitempty"`
	ToolName  string `json:"toolName,omitempty"`
	Content   string `json:"content,omitempty"`
	IsError   bool   `json:"isError,omitempty"`
	// image
	MediaType string `json:"mediaType,omitempty"`
	Data      string `json:"data,omitempty"`
}

// ToolSpec offers a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// ImageInput is an image a user attaches (runtime-protocol.md, Images).
type ImageInput struct {
	MediaType string `json:"mediaType"`
	Data      string `json:"data"`
}

// imageMediaTypes are the accepted image media types.
var imageMediaTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// Validate checks an image: media type, base64 without a data: prefix, size.
func (im *ImageInput) Validate() error {
	if !imageMediaTypes[im.MediaType] {
		return errors.New("mediaType: must be image/png, image/jpeg, image/gif or image/webp")
	}
	if im.Data == "" {
		return errors.New("data: required (base64)")
	}
	if strings.HasPrefix(im.Data, "data:") {
		return errors.New("data: base64 without a data: prefix")
	}
	if len(im.Data) > MaxImageChars {
		return fmt.Errorf("data: %d characters, at most %d", len(im.Data), MaxImageChars)
	}
	if _, err := base64.StdEncoding.Strict().DecodeString(im.Data); err != nil {
		return errors.New("data: not valid base64")
	}
	return nil
}

// ValidateImages checks a list of images: each valid, at most MaxImages.
// Field names are relative to the list's own name.
func ValidateImages(images []ImageInput) error {
	if len(images) > MaxImages {
		return fmt.Errorf("%d images, at most %d", len(images), MaxImages)
	}
	for i := range images {
		if err := images[i].Validate(); err != nil {
			return fmt.Errorf("[%d].%w", i, err)
		}
	}
	return nil
}

// Validate checks the request against the protocol: messages present and
// starting with the user, parts well formed for their type, tool schemas
// objects, maxTokens and temperature in range.
func (r *ChatRequest) Validate() error {
	if len(r.Messages) == 0 {
		return errors.New("messages: required, at least one message")
	}
	if r.Messages[0].Role != RoleUser {
		return errors.New("messages[0].role: the first message must be the user's")
	}
	for i, m := range r.Messages {
		if err := m.validate(); err != nil {
			return fmt.Errorf("messages[%d].%w", i, err)
		}
	}
	names := map[string]bool{}
	for i, t := range r.Tools {
		switch {
		case t.Name == "":
			return fmt.Errorf("tools[%d].name: required", i)
		case names[t.Name]:
			return fmt.Errorf("tools[%d].name: %q is offered twice", i, t.Name)
		case !isJSONObject(t.InputSchema):
			return fmt.Errorf("tools[%d].inputSchema: must be a JSON Schema object", i)
		}
		names[t.Name] = true
		var schema struct {
			Type json.RawMessage `json:"type"`
		}
		_ = json.Unmarshal(t.InputSchema, &schema)
		if len(schema.Type) > 0 && string(schema.Type) != `"object"` {
			return fmt.Errorf(`tools[%d].inputSchema.type: must be "object"`, i)
		}
	}
	if r.MaxTokens != nil && (*r.MaxTokens < 1 || *r.MaxTokens > 1_000_000) {
		return fmt.Errorf("maxTokens: %d, must be 1 to 1000000", *r.MaxTokens)
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 2) {
		return fmt.Errorf("temperature: %g, must be 0 to 2", *r.Temperature)
	}
	if r.ContextWindow < 0 {
		return errors.New("contextWindow: must not be negative")
	}
	return nil
}

// MaxTokensOrDefault is maxTokens, 4096 when unset.
func (r *ChatRequest) MaxTokensOrDefault() int {
	if r.MaxTokens == nil {
		return DefaultMaxTokens
	}
	return *r.MaxTokens
}

func (m *Message) validate() error {
	if m.Role != RoleUser && m.Role != RoleAssistant {
		return errors.New(`role: must be "user" or "assistant"`)
	}
	if len(m.Content) == 0 {
		return errors.New("content: required, at least one part")
	}
	images := 0
	for i, p := range m.Content {
		if err := p.validate(m.Role); err != nil {
			return fmt.Errorf("content[%d].%w", i, err)
		}
		if p.Type == PartImage {
			images++
		}
	}
	if images > MaxImages {
		return fmt.Errorf("content: %d images, at most %d", images, MaxImages)
	}
	return nil
}

// validate checks that a part has what its type needs and nothing of
// another type's.
func (p *ContentPart) validate(role Role) error {
	set := []struct {
		field string
		isSet bool
	}{
		{"text", p.Text != ""}, {"id", p.ID != ""}, {"name", p.Name != ""}, {"input", len(p.Input) > 0},
		{"toolUseId", p.ToolUseID != ""}, {"toolName", p.ToolName != ""}, {"content", p.Content != ""},
		{"isError", p.IsError}, {"mediaType", p.MediaType != ""}, {"data", p.Data != ""},
	}
	var allowed []string
	switch p.Type {
	case PartText:
		allowed = []string{"text"}
	case PartToolUse:
		allowed = []string{"id", "name", "input"}
		switch {
		case role != RoleAssistant:
			return errors.New("type: toolUse parts belong to assistant messages")
		case p.ID == "":
			return errors.New("id: required for a toolUse part")
		case p.Name == "":
			return errors.New("name: required for a toolUse part")
		case len(p.Input) > 0 && !isJSONObject(p.Input):
			return errors.New("input: must be an object")
		}
	case PartToolResult:
		allowed = []string{"toolUseId", "toolName", "content", "isError"}
		switch {
		case role != RoleUser:
			return errors.New("type: toolResult parts belong to user messages")
		case p.ToolUseID == "":
			return errors.New("toolUseId: required for a toolResult part")
		}
	case PartImage:
		allowed = []string{"mediaType", "data"}
		im := ImageInput{MediaType: p.MediaType, Data: p.Data}
		if err := im.Validate(); err != nil {
			return err
		}
	case "":
		return errors.New("type: required; one of text, toolUse, toolResult, image")
	default:
		return errors.New("type: must be one of text, toolUse, toolResult, image")
	}
	for _, f := range set {
		if f.isSet && !slices.Contains(allowed, f.field) {
			return fmt.Errorf("%s: not allowed in a %s part", f.field, p.Type)
		}
	}
	return nil
}

func isJSONObject(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return strings.HasPrefix(s, "{") && json.Valid(raw)
}
