package workflow

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// StepID names a step, unique within a run.
type StepID string

// Kind names a step kind ("model", "tool", "subagent", "merge",
// "validation", ...). The engine knows none of them: the packages that own
// a kind register its runner.
type Kind string

// Step is one node of a run's DAG.
type Step struct {
	ID   StepID
	Kind Kind
	// Deps are the steps whose outputs this one takes; it runs when all of
	// them succeeded, and is skipped when one of them did not.
	Deps []StepID
	// Input is the step's own input (a plan step, a tool call), given to
	// its runner as is.
	Input any
	// Timeout bounds one attempt; zero means none.
	Timeout time.Duration
	// Retry says how often a failed attempt is tried again.
	Retry RetryPolicy
}

// RetryPolicy retries a failed attempt: up to Attempts attempts in all (0
// and 1 mean no retry), waiting Backoff, doubled each time up to
// MaxBackoff, with up to Jitter of it added at random. A cancelled step is
// never retried.
type RetryPolicy struct {
	Attempts   int
	Backoff    time.Duration
	MaxBackoff time.Duration
	Jitter     float64 // 0..1, a fraction of the backoff
}

// StepContext is what a runner gets besides its context.
type StepContext struct {
	RunID   string
	Step    *Step
	Attempt int // 1 for the first attempt
	// Inputs are the outputs of the step's dependencies, by id. A
	// dependency whose output is nil has no entry.
	Inputs map[StepID]any

	// box takes the step's expansions; a direct call, not a func value,
	// so escape analysis sees that Expand's variadic slice stays on the
	// caller's stack (add copies the steps).
	box   *inbox
	owner *running // the scheduler's record of the step while it runs
}

// Expand adds steps to the running DAG (a model turn adds its tool calls
// and the next turn). They may depend on any step of the run, this one
// included; the scheduler picks them up without a restart. A new step that
// depends on a step that already failed, was cancelled or skipped is
// skipped. An expansion that names an unknown step, repeats an id, or
// would close a cycle is refused whole.
func (sc *StepContext) Expand(steps ...Step) error {
	if sc.box == nil {
		return fmt.Errorf("step %s: this run does not take new steps", sc.Step.ID)
	}
	return sc.box.add(sc.owner, steps)
}

// RunFunc runs one attempt of a step and returns its output. A panic in it
// is that step's failure, never the process's.
type RunFunc func(ctx context.Context, sc *StepContext) (any, error)

// Registry maps kinds to their runners.
type Registry struct {
	mu    sync.RWMutex
	kinds map[Kind]RunFunc
	// gen counts Register calls, so a scheduler may keep the runner it
	// looked up last until the registry changes.
	gen atomic.Uint64
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{kinds: map[Kind]RunFunc{}} }

// Register sets the runner of a kind, replacing any earlier one.
func (r *Registry) Register(kind Kind, run RunFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kinds[kind] = run
	r.gen.Add(1)
}

// Lookup returns the runner of a kind.
func (r *Registry) Lookup(kind Kind) (RunFunc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	run, ok := r.kinds[kind]
	return run, ok
}
