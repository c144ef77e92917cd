package workflow

import (
	"context"
)

// Parallelism bounds of a run.
const (
	DefaultMaxParallel = 3
	MaxMaxParallel     = 8
)

// Options configure a run.
type Options struct {
	// MaxParallel is how many steps may run at once: 0 means
	// DefaultMaxParallel; other values are clamped to 1..MaxMaxParallel.
	MaxParallel int
	// Registry gives the runner of each kind. A step whose kind has none
	// (or a nil Registry) fails when it would run, with an error wrapping
	// ErrKindNotAvailable.
	Registry *Registry
	// Sinks get every event of the run, in seq order, from the run's
	// coordinator goroutine: an Emit that blocks holds up the run.
	Sinks []Sink
}

func (o Options) normalised() Options {
	switch {
	case o.MaxParallel == 0:
		o.MaxParallel = DefaultMaxParallel
	case o.MaxParallel < 1:
		o.MaxParallel = 1
	case o.MaxParallel > MaxMaxParallel:
		o.MaxParallel = MaxMaxParallel
	}
	return o
}

// Run is a started run. Its methods are safe for concurrent use.
type Run struct {
	id     string
	s      *scheduler
	cancel context.CancelFunc
	done   chan struct{}
	result *Result
}

// Result is how a run ended.
type Result struct {
	RunID string
	// Status is succeeded when every step succeeded; cancelled when the
	// run was cancelled (Cancel, or Start's context); else failed when a
	// step failed (and its dependents were skipped because of it); else
	// cancelled when a step was cancelled with CancelStep.
	Status Status
	Steps  map[StepID]StepResult
	// Err is set only when the engine itself broke (a Sink panicked, or
	// an invariant of the scheduler did); the run is then failed.
	Err error
}

// StepResult is how one step ended.
type StepResult struct {
	Status   Status
	Output   any   // the runner's output, when the step succeeded
	Err      error // the last attempt's error, when it failed or was cancelled
	Attempts int   // attempts started; 0 for a skipped step
	Reason   string
}

// Start checks steps as Validate does (in linear time, without building a
// graph), then starts running them, and returns at once. ctx bounds the
// whole run: when it ends, the run is cancelled. runID names the run in
// its events.
//
// The run's coordinator goroutine belongs to the Run and ends with it;
// Wait or Done tell when.
func Start(ctx context.Context, runID string, steps []Step, opts Options) (*Run, error) {
	opts = opts.normalised()
	ctx, cancel := context.WithCancel(ctx)
	s := newScheduler(ctx, runID, len(steps), opts)
	// No other goroutine sees the run yet: its first steps go straight
	// into the DAG, uncopied (a node copies its Step).
	s.box.mu.Lock()
	deps, _, err := s.box.register(steps, -1, nil)
	s.box.mu.Unlock()
	if err != nil {
		cancel()
		return nil, err
	}
	s.commit(0, steps, deps)
	r := &Run{id: runID, s: s, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		defer cancel()
		r.result = s.run()
	}()
	return r, nil
}

// ID returns the run's id.
func (r *Run) ID() string { return r.id }

// Wait blocks until the run has ended, every step terminal and every
// worker gone, and returns its result. By then every Sink has had the
// run's last event (the run's own move to its final status).
func (r *Run) Wait() *Result {
	<-r.done
	return r.result
}

// Done is closed when the run has ended.
func (r *Run) Done() <-chan struct{} { return r.done }

// Cancel cancels the run: running steps have their contexts cancelled
// and end cancelled; pending ones are skipped. It does not wait; it is a
// no-op once the run has ended.
func (r *Run) Cancel() { r.cancel() }

// CancelStep cancels one step: if it runs, its context is cancelled and
// it ends cancelled; if it has not started, it is skipped. Either way its
// dependents are skipped with a reason naming it, and independent steps go
// on. CancelStep returns once the scheduler has done this; a step that has
// already ended is left as it is. The error says the run has no such step
// (ErrUnknownStep).
func (r *Run) CancelStep(id StepID) error {
	reply, err := r.s.box.cancel(id)
	if reply != nil {
		<-reply
	}
	return err
}

// Expand adds steps to the running DAG, as StepContext.Expand does for a
// runner: they may depend on any step of the run and on each other. The
// set is checked and refused whole (a *StepError or *CycleError) before
// Expand returns; once accepted, the scheduler picks the steps up without
// waiting for Expand's caller. After the run has ended, Expand returns an
// error wrapping ErrRunEnded.
func (r *Run) Expand(steps ...Step) error { return r.s.box.add(nil, steps) }
