package rpc

import (
	"context"
	"sync"
)

// call is one request between its arrival and its reply.
type call struct {
	method string

	mu     sync.Mutex
	cancel context.CancelCauseFunc // nil until the handler starts
	cause  error                   // a cancellation that came before the handler started
}

// bind attaches the handler's context; a cancellation that arrived earlier
// takes effect at once.
func (c *call) bind(cancel context.CancelCauseFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancel = cancel
	if c.cause != nil {
		cancel(c.cause)
	}
}

func (c *call) cancelWith(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		c.cancel(cause)
	} else if c.cause == nil {
		c.cause = cause
	}
}

// inflight tracks requests by id value. It is filled in receipt order (from
// jrpc2's Assign), so a $/cancelRequest always finds a request sent before
// it, and a second request with the id of one still running is refused even
// after the first was cancelled.
type inflight struct {
	mu    sync.Mutex
	calls map[idKey]*call
}

func newInflight() *inflight { return &inflight{calls: make(map[idKey]*call)} }

// add registers a request; false means the id is already in flight.
func (f *inflight) add(key idKey, method string) (*call, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, dup := f.calls[key]; dup {
		return nil, false
	}
	c := &call{method: method}
	f.calls[key] = c
	return c, true
}

func (f *inflight) remove(key idKey, c *call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls[key] == c {
		delete(f.calls, key)
	}
}

func (f *inflight) get(key idKey) *call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[key]
}

// cancelAll cancels every request except keep (the shutdown request itself).
func (f *inflight) cancelAll(cause error, keep *call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if c != keep {
			c.cancelWith(cause)
		}
	}
}

func (f *inflight) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}
