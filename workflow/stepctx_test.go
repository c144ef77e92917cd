package workflow

import (
	"context"
	"errors"
	"testing"
	"time"
)

type ctxKey struct{}

func TestStepContextCarriesTheRunsValuesAndDeadlineAndEndsWhenCancelled(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(time.Hour)
	run, cancel := context.WithDeadline(context.WithValue(context.Background(), ctxKey{}, "v"), deadline)
	defer cancel()
	c := &stepCtx{run: run}
	if c.Value(ctxKey{}) != "v" {
		t.Fatal("the run's value is not seen")
	}
	if d, ok := c.Deadline(); !ok || !d.Equal(deadline) {
		t.Fatalf("deadline %v %v, want the run's", d, ok)
	}
	if c.Err() != nil {
		t.Fatalf("Err %v before cancel", c.Err())
	}
	done := c.Done()
	select {
	case <-done:
		t.Fatal("done before cancel")
	default:
	}
	c.cancel(context.Canceled)
	c.cancel(context.DeadlineExceeded) // a second cancel changes nothing
	<-done
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("Err %v, want Canceled", c.Err())
	}
	if c.Done() != done {
		t.Fatal("Done changed after cancel")
	}
	late := &stepCtx{run: run}
	late.cancel(context.Canceled)
	<-late.Done() // made after the cancel, already closed
}

func TestContextsDerivedFromAStepContextEndWithIt(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		derive func(parent context.Context) (context.Context, func())
	}{
		{"WithCancel", func(p context.Context) (context.Context, func()) {
			return context.WithCancel(p)
		}},
		{"WithTimeout", func(p context.Context) (context.Context, func()) {
			return context.WithTimeout(p, time.Hour)
		}},
		{"AfterFunc", func(p context.Context) (context.Context, func()) {
			ctx, cancel := context.WithCancel(context.Background())
			stop := context.AfterFunc(p, cancel)
			return ctx, func() { stop(); cancel() }
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &stepCtx{run: context.Background()}
			child, release := tc.derive(c)
			defer release()
			c.cancel(context.Canceled)
			await(t, child.Done(), "the derived context to end")
			// A context derived after the cancel ends at once.
			late, lateRelease := tc.derive(c)
			defer lateRelease()
			await(t, late.Done(), "a context derived after the cancel to end")
		})
	}
}

func TestAStoppedAfterFuncDoesNotRun(t *testing.T) {
	t.Parallel()
	c := &stepCtx{run: context.Background()}
	ran := false
	stop := c.AfterFunc(func() { ran = true })
	if !stop() {
		t.Fatal("stop reported the function as started")
	}
	if stop() {
		t.Fatal("a second stop reported success")
	}
	c.cancel(context.Canceled)
	if ran {
		t.Fatal("a stopped function ran")
	}
	// A child that stopped listening (its cancel was called) is forgotten.
	child, cancel := context.WithCancel(c)
	cancel()
	if len(*c.hooks) != 0 {
		t.Fatalf("%d hooks left after the child ended", len(*c.hooks))
	}
	_ = child
}
