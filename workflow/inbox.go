package workflow

import (
	"fmt"
	"sync"
)

// inbox is the part of a run that goroutines other than the coordinator
// touch: the table of step ids, so that Expand and CancelStep can check
// their arguments and answer without a round trip to the coordinator, and
// what waits for the coordinator (messages, and the steps and resolved
// dependencies of expansions, in buffers it swaps for empty ones, so an
// expansion allocates nothing of its own). One small mutex guards it all;
// the coordinator owns everything else (dag.go, scheduler.go).
//
// Because every id is registered here before its step exists, and a new
// step may only depend on ids already registered or in its own set,
// existing steps never gain an edge into a new one: a cycle can only lie
// inside one set, and add checks just that set.
type inbox struct {
	runID string
	mu    sync.Mutex
	ids   map[StepID]int32
	msgs  []message
	steps []Step  // the steps of the msgExpand messages in msgs
	deps  []int32 // their dependencies, by index, flattened
	// closed: the run has ended and takes no more messages.
	closed bool
	// wake holds a token when msgs may be non-empty; the coordinator
	// sleeps on it.
	wake chan struct{}
}

type msgKind uint8

const (
	msgDone     msgKind = iota // a step's runner returned
	msgRetry                   // a step's attempt failed and the next one starts
	msgExpand                  // new steps
	msgCancel                  // CancelStep
	msgRunEnded                // the run's context ended
)

// message is one thing for the coordinator to do. Messages are handled in
// the order they were posted, so a step's expansion is in the DAG before
// its end is handled.
type message struct {
	kind      msgKind
	cancelled bool  // msgDone: the step's context was cancelled
	idx       int32 // the step; msgExpand: the index of the first new step
	attempt   int32
	// msgExpand: the new steps are steps[at:at+count] of the taken
	// buffers, their dependencies deps[depAt:...].
	at, count, depAt int32
	out              any
	err              error
	reply            chan struct{} // msgCancel: closed once handled
}

// taken is what the coordinator takes from the inbox at once.
type taken struct {
	msgs  []message
	steps []Step
	deps  []int32
}

// idsAtLeast is the id table's least initial size. Most runs grow by
// expansion (a turn adds its tool calls and the next turn), and growing a
// map rehashes it: room for 1 024 ids (about 30 KB) spares a run of that
// size every rehash.
const idsAtLeast = 1024

func newInbox(runID string, steps int) *inbox {
	return &inbox{
		runID: runID,
		ids:   make(map[StepID]int32, max(steps, idsAtLeast)),
		wake:  make(chan struct{}, 1),
	}
}

// post hands the coordinator a message. It never blocks, so a runner can
// always finish, even while the coordinator waits for a worker.
func (b *inbox) post(m message) {
	b.mu.Lock()
	b.msgs = append(b.msgs, m)
	b.mu.Unlock()
	b.signal()
}

// postDone posts the end of the step r; from then on, expansions that r's
// StepContext makes wake the coordinator (see add).
func (b *inbox) postDone(r *running, m message) {
	b.mu.Lock()
	r.ended = true
	b.msgs = append(b.msgs, m)
	b.mu.Unlock()
	b.signal()
}

func (b *inbox) signal() {
	select {
	case b.wake <- struct{}{}:
	default: // a token is already there
	}
}

// take swaps what waits for the empty buffers of spare. When nothing
// waits and the coordinator says every step has ended, the inbox closes:
// ended is true and later calls of add refuse.
func (b *inbox) take(spare taken, finished bool) (t taken, ended bool) {
	b.mu.Lock()
	t = taken{msgs: b.msgs, steps: b.steps, deps: b.deps}
	b.msgs, b.steps, b.deps = spare.msgs[:0], spare.steps[:0], spare.deps[:0]
	if len(t.msgs) == 0 && finished {
		b.closed = true
		ended = true
	}
	b.mu.Unlock()
	return t, ended
}

// shut refuses further messages and returns those that wait.
func (b *inbox) shut() []message {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	msgs := b.msgs
	b.msgs = nil
	return msgs
}

// add checks steps against the run's ids and among themselves (ids
// non-empty and unique, dependencies known, no cycle), registers them and
// posts a copy to the coordinator. A refused set leaves the run unchanged.
//
// from is the step that adds them while it runs, or nil. When every new
// step waits for from, nothing can start before from ends, so add does
// not wake the coordinator: from's end will, and the coordinator handles
// messages in order. This saves a wake-up per expansion in the common
// case (a model turn adds its tool calls and the next turn).
func (b *inbox) add(from *running, steps []Step) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return fmt.Errorf("run %s: %w: it takes no new steps", b.runID, ErrRunEnded)
	}
	caller := int32(-1)
	if from != nil && !from.ended {
		caller = from.n.idx
	}
	first, depAt := int32(len(b.ids)), int32(len(b.deps))
	deps, blocked, err := b.register(steps, caller, b.deps)
	b.deps = deps
	if err != nil {
		return err
	}
	b.msgs = append(b.msgs, message{
		kind: msgExpand, idx: first,
		at: int32(len(b.steps)), count: int32(len(steps)), depAt: depAt,
	})
	b.steps = append(b.steps, steps...) // a copy: the caller may reuse its slice
	if !blocked {
		b.signal()
	}
	return nil
}

// register does add's checks and registers the ids, the first of them at
// index len(b.ids). It appends the indices of the steps' dependencies to
// deps, flattened in step order; on error it returns deps as it was.
// blocked says whether every new step waits for the running step with
// index caller (never, when caller is -1).
func (b *inbox) register(steps []Step, caller int32, deps []int32) (_ []int32, blocked bool, err error) {
	first := int32(len(b.ids))
	for i := range steps {
		id := steps[i].ID
		if id == "" {
			b.unregister(steps[:i])
			return deps, false, &StepError{Index: i, Err: errEmptyID()}
		}
		if _, dup := b.ids[id]; dup {
			b.unregister(steps[:i])
			return deps, false, &StepError{Index: i, Step: id, Err: errDuplicateID()}
		}
		b.ids[id] = first + int32(i)
	}
	start := len(deps)
	forward := false
	blocked = caller >= 0
	for i := range steps {
		self := first + int32(i)
		waits := false
		for _, dep := range steps[i].Deps {
			at, ok := b.ids[dep]
			if !ok {
				b.unregister(steps)
				return deps[:start], false, &StepError{Index: i, Step: steps[i].ID, Err: errUnknownDependency(dep)}
			}
			// Only an edge to a step at or after this one, which must be
			// in this set, can close a cycle.
			forward = forward || at >= self
			// Waiting for the caller, or for a new step before this one
			// (which, if we got here, waits for it), is waiting for it.
			waits = waits || at == caller || (at >= first && at < self)
			deps = append(deps, at)
		}
		blocked = blocked && waits
	}
	if forward && batchCyclic(first, steps, deps[start:]) {
		b.unregister(steps)
		return deps[:start], false, batchCycle(steps)
	}
	return deps, blocked, nil
}

func (b *inbox) unregister(steps []Step) {
	for i := range steps {
		delete(b.ids, steps[i].ID)
	}
}

// cancel looks id up and posts its cancellation; the returned channel is
// closed once the coordinator has handled it. After the run has ended
// there is nothing to cancel: both results are nil.
func (b *inbox) cancel(id StepID) (chan struct{}, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	idx, ok := b.ids[id]
	if !ok {
		return nil, fmt.Errorf("run %s: %w %q", b.runID, ErrUnknownStep, id)
	}
	if b.closed {
		return nil, nil
	}
	reply := make(chan struct{})
	b.msgs = append(b.msgs, message{kind: msgCancel, idx: idx, reply: reply})
	b.signal()
	return reply, nil
}

// batchCyclic reports whether the steps of a set registered from index
// first, with their dependencies' indices flattened in deps, depend on
// each other in a cycle: a depth-first search over the edges inside the
// set, without recursion.
func batchCyclic(first int32, steps []Step, deps []int32) bool {
	const (
		white = iota // not visited
		grey         // on the current path
		black        // done: no cycle through it
	)
	off := make([]int, len(steps)+1)
	for i := range steps {
		off[i+1] = off[i] + len(steps[i].Deps)
	}
	color := make([]uint8, len(steps))
	type frame struct{ at, next int }
	var stack []frame
	for root := range steps {
		if color[root] != white {
			continue
		}
		color[root] = grey
		stack = append(stack[:0], frame{at: root, next: off[root]})
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == off[top.at+1] {
				color[top.at] = black
				stack = stack[:len(stack)-1]
				continue
			}
			dep := int(deps[top.next] - first)
			top.next++
			if dep < 0 {
				continue // an existing step: it cannot lead back into the set
			}
			switch color[dep] {
			case grey:
				return true
			case white:
				color[dep] = grey
				stack = append(stack, frame{at: dep, next: off[dep]})
			}
		}
	}
	return false
}
