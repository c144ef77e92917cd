package workflow

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// Benchmarks of the engine beside baselines that do the same work with
// plain goroutines, a sync.WaitGroup and channels, bounded to the same
// parallelism. The figures and how to read them are in
// docs/benchmarks.md.

const benchSteps = 10_000

// benchShape is a DAG of no-op steps.
type benchShape struct {
	name  string
	steps []Step
}

func benchShapes() []benchShape {
	ids := make([]StepID, benchSteps)
	for i := range ids {
		ids[i] = StepID(fmt.Sprintf("s%d", i))
	}
	chain := make([]Step, benchSteps)
	fan := make([]Step, benchSteps)
	tree := make([]Step, benchSteps)
	middle := ids[1 : benchSteps-1]
	for i := range benchSteps {
		chain[i] = Step{ID: ids[i], Kind: testKind}
		fan[i] = Step{ID: ids[i], Kind: testKind}
		tree[i] = Step{ID: ids[i], Kind: testKind}
		if i > 0 {
			chain[i].Deps = ids[i-1 : i]
			tree[i].Deps = []StepID{ids[(i-1)/2]}
		}
		switch {
		case i == benchSteps-1:
			fan[i].Deps = middle // the sink waits for every middle step
		case i > 0:
			fan[i].Deps = ids[:1]
		}
	}
	return []benchShape{{"chain", chain}, {"fan", fan}, {"tree", tree}}
}

// noop is every benchmark step's runner.
func noop(context.Context, *StepContext) (any, error) { return nil, nil }

// countSink counts events. Only the coordinator calls it, and the count is
// read after the run has ended, so it needs no lock.
type countSink struct{ n int }

func (c *countSink) Emit(Event) { c.n++ }

func reportPerStep(b *testing.B, steps int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*steps), "ns/step")
}

func BenchmarkShapes(b *testing.B) {
	reg := runners(noop)
	for _, shape := range benchShapes() {
		for _, p := range []int{1, 3, 8} {
			b.Run(fmt.Sprintf("%s/p=%d/engine", shape.name, p), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					sink := &countSink{}
					r, err := Start(context.Background(), "bench", shape.steps, Options{
						MaxParallel: p, Registry: reg, Sinks: []Sink{sink},
					})
					if err != nil {
						b.Fatal(err)
					}
					if res := r.Wait(); res.Status != StatusSucceeded || sink.n != 2*benchSteps+2 {
						b.Fatalf("run %s with %d events", res.Status, sink.n)
					}
				}
				reportPerStep(b, benchSteps)
			})
			b.Run(fmt.Sprintf("%s/p=%d/baseline", shape.name, p), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					runBaseline(shape.steps, p, noop)
				}
				reportPerStep(b, benchSteps)
			})
		}
	}
}

// runBaseline runs steps the plain way: a goroutine per step that waits
// for its dependencies' done channels, then for one of p slots, runs, and
// closes its own; a WaitGroup waits for them all.
func runBaseline(steps []Step, p int, run RunFunc) {
	done := make(map[StepID]chan struct{}, len(steps))
	for _, s := range steps {
		done[s.ID] = make(chan struct{})
	}
	slots := make(chan struct{}, p)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range steps {
		s := &steps[i]
		deps := make([]chan struct{}, len(s.Deps))
		for k, d := range s.Deps {
			deps[k] = done[d]
		}
		own := done[s.ID]
		wg.Go(func() {
			for _, d := range deps {
				<-d
			}
			slots <- struct{}{}
			_, _ = run(ctx, &StepContext{Step: s})
			<-slots
			close(own)
		})
	}
	wg.Wait()
}

// BenchmarkExpand compares a chain given to Start with the same chain
// grown one step at a time: by each step adding the next
// (StepContext.Expand), or by the caller while the first step runs
// (Run.Expand). Two sizes show that an expansion costs the same however
// big the run already is.
func BenchmarkExpand(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		chain := make([]Step, n)
		for i := range chain {
			chain[i] = Step{ID: StepID(fmt.Sprintf("e%d", i)), Kind: testKind, Input: i}
			if i > 0 {
				chain[i].Deps = []StepID{chain[i-1].ID}
			}
		}
		check := func(b *testing.B, r *Run, sink *countSink) {
			if res := r.Wait(); res.Status != StatusSucceeded || len(res.Steps) != n || sink.n != 2*n+2 {
				b.Fatalf("run %s with %d steps and %d events", res.Status, len(res.Steps), sink.n)
			}
		}
		b.Run(fmt.Sprintf("n=%d/upfront", n), func(b *testing.B) {
			b.ReportAllocs()
			reg := runners(noop)
			for b.Loop() {
				sink := &countSink{}
				r, err := Start(context.Background(), "bench", chain, Options{Registry: reg, Sinks: []Sink{sink}})
				if err != nil {
					b.Fatal(err)
				}
				check(b, r, sink)
			}
			reportPerStep(b, n)
		})
		b.Run(fmt.Sprintf("n=%d/by-steps", n), func(b *testing.B) {
			b.ReportAllocs()
			reg := runners(func(_ context.Context, sc *StepContext) (any, error) {
				if next := sc.Step.Input.(int) + 1; next < n {
					return nil, sc.Expand(chain[next])
				}
				return nil, nil
			})
			for b.Loop() {
				sink := &countSink{}
				r, err := Start(context.Background(), "bench", chain[:1], Options{Registry: reg, Sinks: []Sink{sink}})
				if err != nil {
					b.Fatal(err)
				}
				check(b, r, sink)
			}
			reportPerStep(b, n)
		})
		b.Run(fmt.Sprintf("n=%d/by-caller", n), func(b *testing.B) {
			b.ReportAllocs()
			release := make(chan struct{})
			reg := runners(func(_ context.Context, sc *StepContext) (any, error) {
				if sc.Step.Input.(int) == 0 {
					<-release
				}
				return nil, nil
			})
			for b.Loop() {
				sink := &countSink{}
				r, err := Start(context.Background(), "bench", chain[:1], Options{Registry: reg, Sinks: []Sink{sink}})
				if err != nil {
					b.Fatal(err)
				}
				for i := 1; i < n; i++ {
					if err := r.Expand(chain[i]); err != nil {
						b.Fatal(err)
					}
				}
				release <- struct{}{}
				check(b, r, sink)
			}
			reportPerStep(b, n)
		})
	}
}
