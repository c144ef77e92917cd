package workflow

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/charmbracelet/log"
	"github.com/sourcegraph/conc/pool"
)

// scheduler is one run's coordinator. Its goroutine owns the DAG and every
// field below: it takes messages from the inbox (steps that ended or
// retry, expansions, cancellations), moves steps through the lifecycle
// (transitions.go), emits each transition to the sinks, and submits ready
// steps to a conc pool of at most max workers. Workers never submit work
// and never wait for the coordinator (inbox.post does not block), so
// pool.Go, which blocks while every worker is busy, always returns: the
// coordinator calls it only when fewer than max steps run.
type scheduler struct {
	runID string
	ctx   context.Context // the run's; every step's context derives from it
	reg   *Registry
	sinks []Sink
	max   int
	pool  *pool.Pool
	box   *inbox

	dag       dag
	ready     []int32 // FIFO of steps whose dependencies all succeeded
	readyHead int
	inflight  int   // steps submitted to the pool and not yet ended
	terminal  int32 // steps in a terminal state

	runCancelled bool // the run's context ended
	anyFailed    bool
	anyCancelled bool

	tickets []*ticket // free pool tasks (at most max exist)
	// The runner looked up last, valid while the registry's gen is.
	lastKind Kind
	lastRun  RunFunc
	lastGen  uint64

	seq   uint64
	t0    time.Time // the run's start; events are stamped t0 + monotonic time since
	now   time.Time // the ts of the events of the messages being handled
	spare taken     // emptied buffers for the inbox
	cur   []message // the messages being handled
	stack []int32
}

// Reasons a step is skipped with, besides a dependency that did not
// succeed.
const (
	reasonRunCancelled  = "run cancelled"
	reasonStepCancelled = "cancelled before it started"
)

func newScheduler(ctx context.Context, runID string, steps int, opts Options) *scheduler {
	s := &scheduler{
		runID: runID,
		ctx:   ctx,
		reg:   opts.Registry,
		sinks: opts.Sinks,
		max:   opts.MaxParallel,
		pool:  pool.New().WithMaxGoroutines(opts.MaxParallel),
		box:   newInbox(runID, steps),
	}
	return s
}

// run drives the run to its end and returns its result. It is the
// coordinator goroutine's whole life.
func (s *scheduler) run() (res *Result) {
	defer func() {
		if v := recover(); v != nil {
			res = s.crashed(v)
		}
	}()
	s.t0 = time.Now()
	s.now = s.t0
	s.emit("", RunKind, statePending, stateRunning, 0, nil, "")
	// The end of the run's context is a message like the others, so the
	// coordinator sleeps on one channel.
	stop := context.AfterFunc(s.ctx, func() { s.box.post(message{kind: msgRunEnded}) })
	defer stop()
	s.dispatch() // Start's steps
	for {
		t, ended := s.box.take(s.spare, s.terminal == s.dag.n)
		if ended {
			break
		}
		if len(t.msgs) == 0 {
			s.spare = t
			<-s.box.wake
			continue
		}
		s.now = s.t0.Add(time.Since(s.t0)) // one clock read, not time.Now's two
		s.cur = t.msgs
		for i := range t.msgs {
			s.handle(&t.msgs[i], &t)
		}
		clear(t.msgs) // drop references to outputs, errors and steps
		clear(t.steps)
		s.spare = t
		s.dispatch()
	}
	to := s.outcome()
	s.emit("", RunKind, stateRunning, to, 0, nil, "")
	s.pool.Wait() // every worker is idle: this only ends them
	return s.result(to)
}

func (s *scheduler) handle(m *message, t *taken) {
	switch m.kind {
	case msgDone:
		s.finish(m)
	case msgRetry:
		s.move(s.dag.at(m.idx), stateRunning, m.attempt, m.err, "")
	case msgExpand:
		s.commit(m.idx, t.steps[m.at:m.at+m.count], t.deps[m.depAt:])
	case msgCancel:
		s.cancelStep(s.dag.at(m.idx))
		close(m.reply)
		m.reply = nil
	case msgRunEnded:
		s.cancelRun()
	}
}

// commit adds a checked set of steps (inbox.register), the first of which
// has index first, to the DAG; deps begins with their dependencies. A step
// that depends on one that already failed, was cancelled or skipped is
// skipped at once, as are its dependents in the set; the others wait for
// their dependencies, or are ready.
func (s *scheduler) commit(first int32, steps []Step, deps []int32) {
	total := 0
	for i := range steps {
		total += len(steps[i].Deps)
	}
	s.dag.deps = slices.Grow(s.dag.deps, total)
	s.dag.edges = slices.Grow(s.dag.edges, total)
	off := 0
	for i := range steps {
		k := len(steps[i].Deps)
		s.dag.push(&steps[i], deps[off:off+k])
		off += k
	}
	end := first + int32(len(steps))
	for i := first; i < end; i++ {
		n := s.dag.at(i)
		for _, d := range s.dag.depsOf(n) {
			dep := s.dag.at(d)
			switch dep.state {
			case stateSucceeded:
			case statePending, stateRunning:
				n.waiting++
				s.dag.link(dep, i)
			default:
				if n.reason == "" {
					n.reason = blame(dep)
				}
			}
		}
	}
	for i := first; i < end; i++ {
		n := s.dag.at(i)
		switch {
		case n.state != statePending:
		case s.runCancelled:
			s.skip(n, reasonRunCancelled)
		case n.reason != "":
			s.skip(n, n.reason)
			s.skipDependents(n)
		case n.waiting == 0:
			s.ready = append(s.ready, i)
		}
	}
}

// dispatch starts ready steps while fewer than max run.
func (s *scheduler) dispatch() {
	for s.inflight < s.max && s.readyHead < len(s.ready) {
		n := s.dag.at(s.ready[s.readyHead])
		s.readyHead++
		if n.state == statePending {
			s.start(n)
		}
	}
	switch {
	case s.readyHead == len(s.ready):
		s.ready, s.readyHead = s.ready[:0], 0
	case s.readyHead > 4096 && s.readyHead > len(s.ready)/2:
		s.ready = s.ready[:copy(s.ready, s.ready[s.readyHead:])]
		s.readyHead = 0
	}
}

// start moves n to running and submits its first attempt. A step whose
// kind has no runner fails here, without taking a worker.
func (s *scheduler) start(n *node) {
	run := s.runner(n.step.Kind)
	n.attempts = 1
	s.move(n, stateRunning, 1, nil, "")
	if run == nil {
		s.end(n, stateFailed, kindNotAvailable(n.step.Kind))
		return
	}
	t := s.ticket()
	t.n, t.run, t.inputs = n, run, s.inputs(n)
	n.ticket = t
	s.inflight++
	s.pool.Go(t.fn)
}

// runner returns the runner of kind, or nil.
func (s *scheduler) runner(kind Kind) RunFunc {
	if s.reg == nil {
		return nil
	}
	gen := s.reg.gen.Load()
	if kind != s.lastKind || gen != s.lastGen || s.lastRun == nil {
		s.lastRun, _ = s.reg.Lookup(kind)
		s.lastKind, s.lastGen = kind, gen
	}
	return s.lastRun
}

// ticket returns a free pool task; there are never more than max.
func (s *scheduler) ticket() *ticket {
	if k := len(s.tickets); k > 0 {
		t := s.tickets[k-1]
		s.tickets = s.tickets[:k-1]
		return t
	}
	return s.newTicket()
}

// inputs maps n's dependencies to their outputs. A dependency whose output
// is nil has no entry, so a step whose dependencies return nothing costs
// no map.
func (s *scheduler) inputs(n *node) map[StepID]any {
	var in map[StepID]any
	for _, d := range s.dag.depsOf(n) {
		dep := s.dag.at(d)
		if dep.output == nil {
			continue
		}
		if in == nil {
			in = make(map[StepID]any, n.depLen)
		}
		in[dep.step.ID] = dep.output
	}
	return in
}

// finish handles the end of a step that ran: succeeded, failed, or
// cancelled when its context was (by Cancel or CancelStep) before it
// returned, whatever it returned.
func (s *scheduler) finish(m *message) {
	n := s.dag.at(m.idx)
	n.ticket.reset()
	s.tickets = append(s.tickets, n.ticket)
	n.ticket = nil
	s.inflight--
	n.attempts = m.attempt
	switch {
	case m.cancelled || n.cancelled:
		err := m.err
		if err == nil {
			err = context.Canceled
		}
		s.end(n, stateCancelled, err)
	case m.err != nil:
		s.end(n, stateFailed, m.err)
	default:
		n.output = m.out
		s.move(n, stateSucceeded, n.attempts, nil, "")
		for e := n.firstOut; e != noEdge; e = s.dag.edges[e].next {
			d := s.dag.at(s.dag.edges[e].to)
			if d.state != statePending {
				continue
			}
			if d.waiting--; d.waiting == 0 {
				s.ready = append(s.ready, d.idx)
			}
		}
	}
}

// end moves a running step to failed or cancelled and skips what depends
// on it.
func (s *scheduler) end(n *node, to stepState, err error) {
	n.err = err
	s.move(n, to, n.attempts, err, "")
	if to == stateFailed {
		s.anyFailed = true
	} else {
		s.anyCancelled = true
	}
	s.skipDependents(n)
}

// blame is the reason the dependents of n, which did not succeed, are
// skipped with. It names the step that failed or was cancelled, however
// many levels up.
func blame(n *node) string {
	switch {
	case n.state == stateSkipped && !n.cancelled:
		return n.reason // it names the step at the root
	case n.state == stateFailed:
		return fmt.Sprintf("dependency %q failed", n.step.ID)
	}
	return fmt.Sprintf("dependency %q cancelled", n.step.ID)
}

// skip moves a pending step to skipped.
func (s *scheduler) skip(n *node, reason string) {
	n.reason = reason
	s.move(n, stateSkipped, 0, nil, reason)
}

// skipDependents skips every pending step that depends on n, directly or
// not, with blame(n) as the reason.
func (s *scheduler) skipDependents(n *node) {
	if n.firstOut == noEdge {
		return
	}
	reason := blame(n)
	stack := append(s.stack[:0], n.idx)
	for len(stack) > 0 {
		at := s.dag.at(stack[len(stack)-1])
		stack = stack[:len(stack)-1]
		for e := at.firstOut; e != noEdge; e = s.dag.edges[e].next {
			if d := s.dag.at(s.dag.edges[e].to); d.state == statePending {
				s.skip(d, reason)
				stack = append(stack, d.idx)
			}
		}
	}
	s.stack = stack
}

// cancelRun handles the end of the run's context: running steps have
// their contexts cancelled (they end cancelled); pending ones are skipped.
func (s *scheduler) cancelRun() {
	if s.runCancelled {
		return
	}
	s.runCancelled = true
	err := s.ctx.Err()
	for i := range s.dag.n {
		switch n := s.dag.at(i); n.state {
		case stateRunning:
			if n.ticket != nil {
				n.ticket.cancel(err)
			}
		case statePending:
			s.skip(n, reasonRunCancelled)
		}
	}
	s.ready, s.readyHead = s.ready[:0], 0
}

// cancelStep handles CancelStep: a pending step is skipped with its
// dependents; a running one has its context cancelled and ends cancelled.
func (s *scheduler) cancelStep(n *node) {
	switch n.state {
	case statePending:
		n.cancelled = true
		s.anyCancelled = true
		s.skip(n, reasonStepCancelled)
		s.skipDependents(n)
	case stateRunning:
		n.cancelled = true
		if n.ticket != nil {
			n.ticket.cancel(context.Canceled)
		}
	}
}

// move makes one transition of n and emits it. The table forbids the rest:
// trying one is a bug in the scheduler, logged loudly and ignored.
func (s *scheduler) move(n *node, to stepState, attempt int32, err error, reason string) {
	from := n.state
	if !canMove(from, to) {
		log.Error("workflow: illegal step transition ignored (a scheduler bug)",
			"run", s.runID, "step", n.step.ID, "from", from.Status(), "to", to.Status())
		return
	}
	n.state = to
	if to.terminal() {
		s.terminal++
	}
	s.emit(n.step.ID, n.step.Kind, from, to, attempt, err, reason)
}

// emit sends one event to every sink, numbering it.
func (s *scheduler) emit(id StepID, kind Kind, from, to stepState, attempt int32, err error, reason string) {
	ev := Event{
		RunID:   s.runID,
		StepID:  id,
		Kind:    kind,
		From:    stateStatus[from],
		To:      stateStatus[to],
		Attempt: int(attempt),
		Reason:  reason,
		Seq:     s.seq,
		TS:      s.now,
	}
	if err != nil {
		ev.Error = err.Error()
	}
	s.seq++
	for _, sink := range s.sinks {
		sink.Emit(ev)
	}
}

// outcome is the run's final state: cancelled when the run was; else
// failed when a step failed (its dependents are skipped because of it);
// else cancelled when a step was (CancelStep); else succeeded.
func (s *scheduler) outcome() stepState {
	switch {
	case s.runCancelled:
		return stateCancelled
	case s.anyFailed:
		return stateFailed
	case s.anyCancelled:
		return stateCancelled
	}
	return stateSucceeded
}

func (s *scheduler) result(to stepState) *Result {
	res := &Result{RunID: s.runID, Status: to.Status(), Steps: make(map[StepID]StepResult, s.dag.n)}
	for i := range s.dag.n {
		n := s.dag.at(i)
		res.Steps[n.step.ID] = StepResult{
			Status:   n.state.Status(),
			Output:   n.output,
			Err:      n.err,
			Attempts: int(n.attempts),
			Reason:   n.reason,
		}
	}
	return res
}

// crashed ends a run whose coordinator panicked (a broken invariant, or a
// sink that panicked): it logs loudly, cancels the steps, waits for them,
// and reports the run failed with the panic as its Err. The process lives
// on.
func (s *scheduler) crashed(v any) *Result {
	stack := debug.Stack()
	log.Error("workflow: the run's coordinator panicked; the run fails", "run", s.runID, "panic", v, "stack", string(stack))
	// Answer the CancelStep calls that wait, handled or not.
	for _, m := range append(s.cur, s.box.shut()...) {
		if m.kind == msgCancel && m.reply != nil {
			close(m.reply)
		}
	}
	for i := range s.dag.n {
		if n := s.dag.at(i); n.ticket != nil {
			n.ticket.cancel(context.Canceled)
		}
	}
	s.pool.Wait()
	res := s.result(stateFailed)
	res.Err = &PanicError{Value: v, Stack: stack}
	func() {
		defer func() { _ = recover() }() // a sink that panicked may do so again
		s.now = time.Now()
		s.emit("", RunKind, stateRunning, stateFailed, 0, nil, "")
	}()
	return res
}
