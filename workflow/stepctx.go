package workflow

import (
	"context"
	"slices"
	"sync"
	"time"
)

// stepCtx is the context a step's runner gets. It carries the run's
// values and deadline, and the scheduler cancels it: when CancelStep
// names the step, when the run is cancelled (as soon as the coordinator
// handles that), and when the step ends (as a deferred cancel would). It
// lives in the step's running state (worker.go), so starting a step
// allocates no context of its own, unlike context.WithCancel, which also
// registers every child with the run's context under that context's lock.
//
// It implements the AfterFunc method the context package looks for, so
// contexts a runner derives from it (WithCancel, WithTimeout,
// context.AfterFunc) hook into it instead of each starting a goroutine to
// watch it.
type stepCtx struct {
	run context.Context

	mu    sync.Mutex
	done  chan struct{} // made on first use
	err   error
	hooks *[]*stepCtxHook // made on first use; few runners derive contexts
}

type stepCtxHook struct{ f func() }

// closedChan is the Done of a context cancelled before anyone asked.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (c *stepCtx) Deadline() (time.Time, bool) { return c.run.Deadline() }

func (c *stepCtx) Value(key any) any { return c.run.Value(key) }

func (c *stepCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		if c.err != nil {
			c.done = closedChan
		} else {
			c.done = make(chan struct{})
		}
	}
	return c.done
}

func (c *stepCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *stepCtx) String() string { return "workflow.stepContext" }

// cancel ends the context with err (context.Canceled, or the run's error)
// and runs the hooks; later calls do nothing.
func (c *stepCtx) cancel(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	if c.done == nil {
		c.done = closedChan
	} else {
		close(c.done)
	}
	var hooks []*stepCtxHook
	if c.hooks != nil {
		hooks, *c.hooks = *c.hooks, nil
	}
	c.mu.Unlock()
	for _, h := range hooks {
		h.f()
	}
}

// AfterFunc arranges for f to run once c is done, and returns a function
// that unregisters it (true if f had not started). The context package
// calls it with a child's cancel, holding the child's lock, so f never
// runs on the caller's goroutine here.
func (c *stepCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	h := &stepCtxHook{f: f}
	if c.hooks == nil {
		c.hooks = new([]*stepCtxHook)
	}
	*c.hooks = append(*c.hooks, h)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		i := slices.Index(*c.hooks, h)
		if i < 0 {
			return false
		}
		*c.hooks = slices.Delete(*c.hooks, i, i+1)
		return true
	}
}
