package llm

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxModels bounds the model lists of provider/listModels and provider/models.
const MaxModels = 500

// ModelInfo is what an endpoint says of one model (provider/models).
type ModelInfo struct {
	ID            string       `json:"id"`
	ContextWindow int          `json:"contextWindow,omitempty"`
	Capabilities  []Capability `json:"capabilities"`
	Details       string       `json:"details,omitempty"`
}

// Capability is one thing a model can do.
type Capability string

// The capabilities, in the order the protocol lists them.
const (
	CapTools     Capability = "tools"
	CapVision    Capability = "vision"
	CapThinking  Capability = "thinking"
	CapEmbedding Capability = "embedding"
)

var capabilityOrder = []Capability{CapTools, CapVision, CapThinking, CapEmbedding}

// orderCapabilities returns the known capabilities of caps, once each, in
// the protocol's order (never nil).
func orderCapabilities(caps []Capability) []Capability {
	out := []Capability{}
	for _, c := range capabilityOrder {
		if slices.Contains(caps, c) {
			out = append(out, c)
		}
	}
	return out
}

// ListModels returns the endpoint's model ids, sorted, at most MaxModels.
func (c *Client) ListModels(ctx context.Context) ([]string, error) {
	models, err := c.Models(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(models))
	for i, m := range models {
		ids[i] = m.ID
	}
	return ids, nil
}

// Models returns what the endpoint says of its models, sorted by id, at most
// MaxModels, with the built-in window estimate where the endpoint gives none
// (Anthropic and OpenAI only, as the protocol says).
func (c *Client) Models(ctx context.Context) ([]ModelInfo, error) {
	models, err := c.d.models(ctx, &c.cfg)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(models, func(a, b ModelInfo) int { return strings.Compare(a.ID, b.ID) })
	models = slices.CompactFunc(models, func(a, b ModelInfo) bool { return a.ID == b.ID })
	if len(models) > MaxModels {
		models = models[:MaxModels]
	}
	for i := range models {
		m := &models[i]
		if m.ContextWindow == 0 && (c.cfg.Kind == Anthropic || c.cfg.Kind == OpenAI) {
			m.ContextWindow = EstimateContextWindow(c.cfg.Kind, m.ID)
		}
		m.Capabilities = orderCapabilities(m.Capabilities)
	}
	return models, nil
}

// windowCacheTTL is how long an endpoint's answer about a window is kept.
const windowCacheTTL = 5 * time.Minute

type windowKey struct {
	kind        Kind
	base, model string
}

type windowEntry struct {
	tokens  int
	expires time.Time
}

var windowCache = struct {
	sync.Mutex
	m map[windowKey]windowEntry
}{m: map[windowKey]windowEntry{}}

// now is the clock of the cache; tests replace it.
var now = time.Now

// ContextWindow returns the model's input window: the endpoint's answer
// (kept for 5 minutes), else the built-in estimate. An endpoint that fails
// to answer also gets the estimate, uncached: the window is a budget, not a
// contract, and a passing failure must not fix it for 5 minutes.
func (c *Client) ContextWindow(ctx context.Context) int {
	key := windowKey{kind: c.cfg.Kind, base: c.cfg.baseURL(), model: c.cfg.Model}
	windowCache.Lock()
	e, ok := windowCache.m[key]
	windowCache.Unlock()
	if ok && now().Before(e.expires) {
		return e.tokens
	}
	tokens, err := c.d.contextWindow(ctx, &c.cfg, c.cfg.Model)
	if err != nil {
		// A failed lookup (a passing 500, a cancelled call) is not an
		// answer: the estimate stands in, and the next call asks again.
		return EstimateContextWindow(c.cfg.Kind, c.cfg.Model)
	}
	if tokens <= 0 {
		tokens = EstimateContextWindow(c.cfg.Kind, c.cfg.Model) // the endpoint does not say
	}
	windowCache.Lock()
	windowCache.m[key] = windowEntry{tokens: tokens, expires: now().Add(windowCacheTTL)}
	windowCache.Unlock()
	return tokens
}

// claudeVersion finds the family version of a Claude model id:
// claude-opus-4-6 and claude-4-6-opus give 4.6, claude-3-5-sonnet 3.5.
var claudeVersion = regexp.MustCompile(`^claude-(?:(?:opus|sonnet|haiku)-)?(\d+)(?:[-.](\d))?(?:\D|$)`)

// EstimateContextWindow is the built-in estimate of the protocol's Context
// compression section.
func EstimateContextWindow(kind Kind, model string) int {
	m := strings.ToLower(model)
	switch kind {
	case Anthropic:
		if major, minor, ok := claudeFamilyVersion(m); ok && (major > 4 || major == 4 && minor >= 6) {
			return 1_000_000
		}
		return 200_000
	case OpenAI:
		switch {
		case strings.HasPrefix(m, "gpt-4.1"):
			return 1_000_000
		case strings.HasPrefix(m, "gpt-5"):
			return 272_000
		}
		return 128_000
	}
	return 32_768
}

func claudeFamilyVersion(m string) (major, minor int, ok bool) {
	sm := claudeVersion.FindStringSubmatch(m)
	if sm == nil {
		return 0, 0, false
	}
	major, _ = strconv.Atoi(sm[1])
	if sm[2] != "" {
		minor, _ = strconv.Atoi(sm[2])
	}
	return major, minor, true
}

// familyCapabilities is what Anthropic and the official OpenAI API models
// can do, from the model's family (their model lists do not say).
func familyCapabilities(kind Kind, model string) []Capability {
	m := strings.ToLower(model)
	switch kind {
	case Anthropic:
		caps := []Capability{CapTools, CapVision}
		if major, minor, ok := claudeFamilyVersion(m); ok && (major >= 4 || major == 3 && minor >= 7) {
			caps = append(caps, CapThinking)
		}
		return caps
	case OpenAI:
		switch {
		case strings.Contains(m, "embedding"):
			return []Capability{CapEmbedding}
		case strings.HasPrefix(m, "o1"), strings.HasPrefix(m, "o3"), strings.HasPrefix(m, "o4"), strings.HasPrefix(m, "gpt-5"):
			return []Capability{CapTools, CapVision, CapThinking}
		case strings.HasPrefix(m, "gpt-4o"), strings.HasPrefix(m, "gpt-4.1"), strings.HasPrefix(m, "gpt-4-turbo"), strings.HasPrefix(m, "chatgpt-4o"):
			return []Capability{CapTools, CapVision}
		case strings.HasPrefix(m, "gpt-4"), strings.HasPrefix(m, "gpt-3.5-turbo"):
			return []Capability{CapTools}
		}
	}
	return nil
}

// TestResult is provider/test's answer.
type TestResult struct {
	LatencyMs int64    `json:"latencyMs"`
	Models    []string `json:"models"`
	// ModelAvailable is null when the endpoint cannot list its models.
	ModelAvailable *bool `json:"modelAvailable"`
	// Capabilities is the kind's, with what the endpoint says of the
	// configured model (Ollama: tool support from /api/show).
	Capabilities Capabilities `json:"capabilities"`
	// ModelCapabilities is what the endpoint says of the configured model.
	ModelCapabilities []Capability `json:"modelCapabilities"`
}

// errCannotList is returned by a dialect whose endpoint has no model list.
var errCannotList = errors.New("the endpoint cannot list its models")

// Test checks connection and credentials by listing the models; an
// OpenAI-compatible endpoint without a model list gets a one-token chat
// instead.
func (c *Client) Test(ctx context.Context) (*TestResult, error) {
	start := time.Now()
	res := &TestResult{Models: []string{}, ModelCapabilities: []Capability{}}
	for _, p := range Providers() {
		if p.Kind == c.cfg.Kind {
			res.Capabilities = p.Capabilities
		}
	}
	models, err := c.Models(ctx)
	switch {
	case errors.Is(err, errCannotList):
		one := 1
		probe := &ChatRequest{MaxTokens: &one, Messages: []Message{{Role: RoleUser, Content: []ContentPart{{Type: PartText, Text: "ping"}}}}}
		if _, err := c.Chat(ctx, probe, nil); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		available := false
		for _, m := range models {
			res.Models = append(res.Models, m.ID)
			if sameModel(c.cfg.Kind, m.ID, c.cfg.Model) {
				available = true
				res.ModelCapabilities = m.Capabilities
			}
		}
		res.ModelAvailable = &available
		if available && c.cfg.Kind == Ollama {
			res.Capabilities.Tools = slices.Contains(res.ModelCapabilities, CapTools)
			res.Capabilities.Images = slices.Contains(res.ModelCapabilities, CapVision)
		}
	}
	res.LatencyMs = time.Since(start).Milliseconds()
	return res, nil
}

// sameModel compares model ids; Ollama's "name" means "name:latest".
func sameModel(kind Kind, a, b string) bool {
	if kind == Ollama {
		return withTag(a) == withTag(b)
	}
	return a == b
}

func withTag(name string) string {
	if strings.Contains(name, ":") {
		return name
	}
	return name + ":latest"
}
