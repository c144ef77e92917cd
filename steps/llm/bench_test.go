package llm

// Benchmarks of stream decoding: each provider's decoder on a recorded
// stream, beside a baseline that only splits the same bytes into lines, in
// the same run. The ratio is the cost of decoding; docs/benchmarks.md has
// the figures.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"github.com/task-x/runtime/steps/llm/llmtest"
)

// recordStream returns the raw body the fake server streams for a turn of
// many small text deltas and one tool call with chunked arguments, as the
// kind's client requests it.
func recordStream(b *testing.B, kind Kind) []byte {
	b.Helper()
	chunks := make([]string, 2000)
	for i := range chunks {
		chunks[i] = fmt.Sprintf("word%d ", i)
	}
	srv := llmtest.New(b, llmtest.Options{Kind: llmtest.Kind(kind)}, llmtest.Turn{
		Text:      chunks,
		ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: `{"path":"a.go","text":"` + string(bytes.Repeat([]byte("x"), 4000)) + `"}`, Chunks: 200}},
	})
	cfg := ProviderConfig{Kind: kind, Model: "m", BaseURL: srv.BaseURL(), APIKey: "sk-bench-000000"}
	req := &ChatRequest{Messages: []Message{{Role: RoleUser, Content: []ContentPart{{Type: PartText, Text: "go"}}}}}
	r, err := dialects[kind].chat(&cfg, req)
	if err != nil {
		b.Fatal(err)
	}
	s, err := open(context.Background(), &cfg, r)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	body, err := io.ReadAll(s)
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// countEvents counts the provider's events in a stream: SSE data fields or
// NDJSON lines.
func countEvents(body []byte, kind Kind) int {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), maxStreamLine)
	for sc.Scan() {
		line := sc.Bytes()
		if kind == Ollama && len(bytes.TrimSpace(line)) > 0 || bytes.HasPrefix(line, []byte("data:")) {
			n++
		}
	}
	return n
}

func BenchmarkDecodeStream(b *testing.B) {
	for _, kind := range []Kind{Anthropic, OpenAI, OpenAICompatible, Ollama} {
		body := recordStream(b, kind)
		events := countEvents(body, kind)
		b.Run(fmt.Sprintf("kind=%s/impl=decoder", kind), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for range b.N {
				t := newTurn(nil)
				if _, err := dialects[kind].decode(bytes.NewReader(body), t); err != nil {
					b.Fatal(err)
				}
				if res := t.finish(StopEndTurn); len(res.ToolCalls) != 1 {
					b.Fatalf("%d tool calls", len(res.ToolCalls))
				}
			}
			b.ReportMetric(float64(events*b.N)/b.Elapsed().Seconds(), "events/s")
		})
		b.Run(fmt.Sprintf("kind=%s/impl=lines", kind), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for range b.N {
				sc := bufio.NewScanner(bytes.NewReader(body))
				sc.Buffer(make([]byte, 0, 64<<10), maxStreamLine)
				n := 0
				for sc.Scan() {
					n++
				}
				if n == 0 {
					b.Fatal("no lines")
				}
			}
			b.ReportMetric(float64(events*b.N)/b.Elapsed().Seconds(), "events/s")
		})
		// A second baseline: the lines and a validity scan of each event's
		// JSON, the least any JSON decoder does.
		b.Run(fmt.Sprintf("kind=%s/impl=lines+scan", kind), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for range b.N {
				sc := bufio.NewScanner(bytes.NewReader(body))
				sc.Buffer(make([]byte, 0, 64<<10), maxStreamLine)
				for sc.Scan() {
					line := bytes.TrimPrefix(sc.Bytes(), []byte("data: "))
					if len(line) > 0 && line[0] == '{' && !json.Valid(line) {
						b.Fatalf("invalid event %q", line)
					}
				}
			}
			b.ReportMetric(float64(events*b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
