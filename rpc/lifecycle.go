package rpc

import (
	"fmt"
	"sync"

	"github.com/creachadair/jrpc2"
)

// Phase is the session's lifecycle state (runtime-protocol.md, Lifecycle).
type Phase uint8

const (
	// PhaseNew waits for initialize; other requests fail with -32003.
	PhaseNew Phase = iota
	// PhaseInitializing has received initialize and not answered it yet;
	// requests that arrive meanwhile wait for the answer.
	PhaseInitializing
	// PhaseReady serves every method.
	PhaseReady
	// PhaseShuttingDown has received shutdown: in-flight work is cancelled
	// and new requests fail with -32600.
	PhaseShuttingDown
	// PhaseExited has received exit (or end of input, or SIGTERM).
	PhaseExited
)

var phaseNames = [...]string{"new", "initializing", "ready", "shuttingDown", "exited"}

func (p Phase) String() string { return phaseNames[p] }

// lifecycleEvent moves the session from one phase to another.
type lifecycleEvent uint8

const (
	evInitialize  lifecycleEvent = iota // initialize received
	evInitialized                       // initialize answered with a result
	evInitFailed                        // initialize answered with an error
	evShutdown                          // shutdown received
	evExit                              // exit, end of input or SIGTERM
)

var eventNames = [...]string{"initialize", "initialized", "initFailed", "shutdown", "exit"}

func (e lifecycleEvent) String() string { return eventNames[e] }

// lifecycleTable holds every allowed transition; anything else is refused.
var lifecycleTable = map[Phase]map[lifecycleEvent]Phase{
	PhaseNew:          {evInitialize: PhaseInitializing, evExit: PhaseExited},
	PhaseInitializing: {evInitialized: PhaseReady, evInitFailed: PhaseNew, evExit: PhaseExited},
	PhaseReady:        {evShutdown: PhaseShuttingDown, evExit: PhaseExited},
	PhaseShuttingDown: {evExit: PhaseExited},
	PhaseExited:       {},
}

// lifecycle owns the phase. Admission decisions are taken in the order
// messages arrive (jrpc2 assigns handlers in receipt order), so a request
// sent after shutdown is refused even if an earlier one still runs.
type lifecycle struct {
	mu      sync.Mutex
	phase   Phase
	attempt *initAttempt // the initialize being answered, if any
}

// initAttempt is one initialize request; requests that arrive while it runs
// wait for its outcome and then run (or fail with -32003), even if an exit
// arrived after them.
type initAttempt struct {
	done     chan struct{}
	ok       bool
	arrivals int // requests that arrived during the attempt, in order
	shutdown int // the arrival number of a shutdown among them, or 0
}

func newLifecycle() *lifecycle { return &lifecycle{} }

func (l *lifecycle) current() Phase {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.phase
}

// fire applies ev, or fails when the table has no such transition.
func (l *lifecycle) fire(ev lifecycleEvent) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fireLocked(ev)
}

func (l *lifecycle) fireLocked(ev lifecycleEvent) error {
	next, ok := lifecycleTable[l.phase][ev]
	if !ok {
		return fmt.Errorf("lifecycle: %s is not allowed in phase %s", ev, l.phase)
	}
	if ev == evInitialize {
		l.attempt = &initAttempt{done: make(chan struct{})}
	}
	l.phase = next
	return nil
}

// settleInitialize records initialize's outcome, releases the requests that
// waited for it, and moves the phase on unless exit came first.
func (l *lifecycle) settleInitialize(ok bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.attempt
	if a != nil {
		a.ok = ok
		close(a.done)
		l.attempt = nil
	}
	if !ok {
		return l.fireLocked(evInitFailed)
	}
	if err := l.fireLocked(evInitialized); err != nil {
		return err
	}
	if a != nil && a.shutdown != 0 {
		return l.fireLocked(evShutdown) // a shutdown arrived while initializing
	}
	return nil
}

// afterInitialize is the verdict on a request that waited for initialize:
// arrival is its place among the requests that waited.
func (l *lifecycle) afterInitialize(a *initAttempt, arrival int) *jrpc2.Error {
	switch {
	case !a.ok:
		return errNotInitialized
	case a.shutdown != 0 && arrival > a.shutdown:
		return errShutdownReject
	}
	return nil
}

// admission is the lifecycle's verdict on one inbound message.
type admission struct {
	run     bool         // run the handler now
	wait    *initAttempt // run once this initialize succeeds
	arrival int          // the request's place among those that wait
	err     *jrpc2.Error // refuse with this error (requests only)
}

var (
	errNotInitialized = jrpc2.Errorf(CodeNotInitialized, "not initialized: send initialize first")
	errShutdownReject = jrpc2.Errorf(CodeInvalidRequest, "invalid request: the runtime is shutting down")
)

// admit decides what happens to a message and applies the transition its
// arrival causes (initialize, shutdown, exit).
func (l *lifecycle) admit(method string, notification bool) admission {
	l.mu.Lock()
	defer l.mu.Unlock()
	if notification {
		switch {
		case method == methodExit:
			_ = l.fireLocked(evExit) // exit is allowed in every phase but exited
			return admission{run: true}
		case method == methodCancelRequest, l.phase == PhaseReady:
			return admission{run: true}
		}
		return admission{} // dropped: nothing to answer
	}
	switch l.phase {
	case PhaseNew:
		if method == methodInitialize {
			_ = l.fireLocked(evInitialize)
			return admission{run: true}
		}
		return admission{err: errNotInitialized}
	case PhaseInitializing:
		if method == methodInitialize {
			return admission{err: jrpc2.Errorf(CodeInvalidRequest, "invalid request: initialize is already in progress")}
		}
		a := l.attempt
		a.arrivals++
		if method == methodShutdown && a.shutdown == 0 {
			a.shutdown = a.arrivals
		}
		return admission{wait: a, arrival: a.arrivals}
	case PhaseReady:
		switch method {
		case methodInitialize:
			return admission{err: jrpc2.Errorf(CodeInvalidRequest, "invalid request: already initialized")}
		case methodShutdown:
			_ = l.fireLocked(evShutdown)
		}
		return admission{run: true}
	}
	return admission{err: errShutdownReject}
}
