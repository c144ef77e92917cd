package workflow

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// What the engine's tests share: a Sink that records, steps and runners
// built in a line, and waits with a deadline (never a sleep).

const testKind Kind = "test"

// testDeadline bounds every wait of a test; a run that needs longer is
// stuck.
const testDeadline = 10 * time.Second

// recorder is a Sink that keeps every event and can tell a test when one
// it waits for has come.
type recorder struct {
	mu      sync.Mutex
	events  []Event
	waiters []eventWaiter
}

type eventWaiter struct {
	match func(Event) bool
	ch    chan struct{}
}

func (r *recorder) Emit(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	kept := r.waiters[:0]
	for _, w := range r.waiters {
		if w.match(e) {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	r.waiters = kept
}

// when returns a channel closed once an event matching match is emitted
// (at once if one was).
func (r *recorder) when(match func(Event) bool) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := make(chan struct{})
	for _, e := range r.events {
		if match(e) {
			close(ch)
			return ch
		}
	}
	r.waiters = append(r.waiters, eventWaiter{match, ch})
	return ch
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// moves lists a step's transitions as "from->to" with "#attempt" when the
// event has one; the run's own for id "".
func (r *recorder) moves(id StepID) []string {
	var out []string
	for _, e := range r.all() {
		if e.StepID == id {
			out = append(out, moveText(e))
		}
	}
	return out
}

func moveText(e Event) string {
	s := fmt.Sprintf("%s->%s", e.From, e.To)
	if e.Attempt > 0 {
		s += fmt.Sprintf("#%d", e.Attempt)
	}
	return s
}

func (r *recorder) dump() string {
	var b strings.Builder
	for _, e := range r.all() {
		fmt.Fprintf(&b, "%d %s %s %s err=%q reason=%q\n", e.Seq, e.StepID, e.Kind, moveText(e), e.Error, e.Reason)
	}
	return b.String()
}

// task is a step of testKind.
func task(id StepID, deps ...StepID) Step {
	return Step{ID: id, Kind: testKind, Deps: deps}
}

// runners makes a registry where testKind runs fn.
func runners(fn RunFunc) *Registry {
	reg := NewRegistry()
	reg.Register(testKind, fn)
	return reg
}

// byID dispatches on the step's id; ids not in the map succeed with the
// id as output.
func byID(fns map[StepID]RunFunc) RunFunc {
	return func(ctx context.Context, sc *StepContext) (any, error) {
		if fn, ok := fns[sc.Step.ID]; ok {
			return fn(ctx, sc)
		}
		return string(sc.Step.ID), nil
	}
}

// startRun starts a run with a recorder as its sink.
func startRun(t *testing.T, steps []Step, opts Options) (*Run, *recorder) {
	t.Helper()
	rec := &recorder{}
	opts.Sinks = append(opts.Sinks, rec)
	r, err := Start(context.Background(), t.Name(), steps, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(r.Cancel)
	return r, rec
}

// waitRun waits for the run's end, failing the test after testDeadline.
func waitRun(t *testing.T, r *Run, rec *recorder) *Result {
	t.Helper()
	select {
	case <-r.Done():
		return r.Wait()
	case <-time.After(testDeadline):
		r.Cancel()
		t.Fatalf("run %s did not end within %v; events:\n%s", r.ID(), testDeadline, rec.dump())
		return nil
	}
}

// await waits for ch, failing the test after testDeadline.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testDeadline):
		t.Fatalf("waited %v for %s", testDeadline, what)
	}
}

// isMove matches an event of step id to status to.
func isMove(id StepID, to Status) func(Event) bool {
	return func(e Event) bool { return e.StepID == id && e.To == to }
}

// blockUntilCancelled is a runner that tells started it runs, then waits
// for its context.
func blockUntilCancelled(started chan<- StepID) RunFunc {
	return func(ctx context.Context, sc *StepContext) (any, error) {
		started <- sc.Step.ID
		<-ctx.Done()
		return nil, ctx.Err()
	}
}

// checkSeq fails unless the events are numbered 0, 1, 2, ... in order.
func checkSeq(t *testing.T, events []Event) {
	t.Helper()
	for i, e := range events {
		if e.Seq != uint64(i) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

// awaitStart waits for a runner to say it started, failing the test after
// testDeadline.
func awaitStart(t *testing.T, started <-chan StepID) StepID {
	t.Helper()
	select {
	case id := <-started:
		return id
	case <-time.After(testDeadline):
		t.Fatalf("waited %v for a step to start", testDeadline)
		return ""
	}
}
