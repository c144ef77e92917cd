package workflow

import (
	"context"
	"sync"
)

// The bridge between the coordinator and a pool worker. The coordinator
// fills a ticket (the step, its runner, its inputs) and submits it; the
// worker makes the step's running state (its context and StepContext),
// runs its attempts (attempt.go) and posts how it ended. Making that state
// on the worker keeps the allocation off the coordinator, which every step
// goes through.

// ticket is a pool task. The coordinator reuses it once the end of its
// step has reached it, so submitting a step allocates no closure.
type ticket struct {
	s  *scheduler
	fn func() // t.exec, bound once

	// Set by the coordinator before it submits the ticket.
	n      *node
	run    RunFunc
	inputs map[StepID]any

	mu sync.Mutex
	r  *running // the step's running state while the worker holds it
	// cancelled is a cancellation that came before r was made, or after
	// it was dropped (the step is then ending anyway).
	cancelled error
}

// running is what a step needs while it runs. It is made at the step's
// start and never reused, so a runner may keep its context or StepContext
// after it returns.
type running struct {
	ctx stepCtx
	sc  StepContext
	n   *node
	// ended: the step's end has been posted (guarded by the inbox's
	// lock; see inbox.add).
	ended bool
}

func (s *scheduler) newTicket() *ticket {
	t := &ticket{s: s}
	t.fn = t.exec
	return t
}

// exec runs on a pool worker.
func (t *ticket) exec() {
	s, n := t.s, t.n
	r := &running{n: n}
	r.ctx.run = s.ctx
	r.sc = StepContext{RunID: s.runID, Step: &n.step, Attempt: 1, Inputs: t.inputs, box: s.box, owner: r}
	t.mu.Lock()
	t.r = r
	cancelled := t.cancelled
	t.mu.Unlock()
	if cancelled != nil {
		r.ctx.cancel(cancelled)
	}
	s.execute(t, r, t.run)
}

// cancel cancels the ticket's step with err (the coordinator calls it).
func (t *ticket) cancel(err error) {
	t.mu.Lock()
	r := t.r
	if r == nil && t.cancelled == nil {
		t.cancelled = err
	}
	t.mu.Unlock()
	if r != nil {
		r.ctx.cancel(err)
	}
}

// reset readies a ticket whose step has ended for the next one.
func (t *ticket) reset() {
	t.n, t.run, t.inputs, t.cancelled = nil, nil, nil, nil
}

// execute runs the step's attempts, then posts one message with how it
// ended. It reads the step's node only for its Step and index, which
// nobody writes after the node is made.
func (s *scheduler) execute(t *ticket, r *running, run RunFunc) {
	var out any
	err := errRunnerExited // kept if the runner ends the goroutine
	defer func() {
		m := message{
			kind:      msgDone,
			idx:       r.n.idx,
			attempt:   int32(r.sc.Attempt),
			out:       out,
			err:       err,
			cancelled: r.ctx.Err() != nil,
		}
		r.ctx.cancel(context.Canceled) // as a deferred cancel would: derived contexts end
		t.mu.Lock()
		t.r = nil
		t.mu.Unlock()
		s.box.postDone(r, m) // the last touch of t: the coordinator may reuse it now
	}()
	step := &r.n.step
	out, err = runAttempts(&r.ctx, &r.sc, run, step.Timeout, step.Retry, func(next int, err error) {
		s.box.post(message{kind: msgRetry, idx: r.n.idx, attempt: int32(next), err: err})
	})
}
