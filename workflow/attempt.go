package workflow

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"time"
)

// The worker side of a step: what runs on a pool goroutine. Each layer
// wraps the runner rather than branching inside it: runOnce bounds one
// attempt by the step's Timeout and turns a panic into the attempt's
// error; runAttempts tries again per the RetryPolicy. A retry keeps its
// pool slot through the backoff, so a step that waits to retry (a rate
// limit, say) does not let another start in its place.

// errRunnerExited is the failure of a step whose runner ended its
// goroutine (runtime.Goexit, as t.FailNow does) instead of returning.
var errRunnerExited = errors.New("the step's runner exited its goroutine without returning")

// runAttempts runs attempts of a step until one succeeds, the step is
// cancelled, the error is Permanent, or the policy has no attempts left.
// sc.Attempt counts them. onRetry is told before each retry's backoff.
func runAttempts(ctx context.Context, sc *StepContext, run RunFunc, timeout time.Duration,
	policy RetryPolicy, onRetry func(next int, err error)) (any, error) {
	for {
		out, err := runOnce(ctx, sc, run, timeout)
		if err == nil || ctx.Err() != nil || sc.Attempt >= policy.Attempts || IsPermanent(err) {
			return out, err
		}
		onRetry(sc.Attempt+1, err)
		// The backoff belongs to the next attempt: a cancellation during
		// it ends the step at that attempt.
		wait := policy.delay(sc.Attempt, rand.Float64)
		sc.Attempt++
		if !sleepCtx(ctx, wait) {
			return nil, err
		}
	}
}

// runOnce runs one attempt, bounded by timeout when it is positive. A
// panic in run is returned as a *PanicError.
func runOnce(ctx context.Context, sc *StepContext, run RunFunc, timeout time.Duration) (out any, err error) {
	actx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	out, err = run(actx, sc)
	if err != nil && timeout > 0 && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w after %v: %w", ErrTimeout, timeout, err)
	}
	return out, err
}

// delay is the wait after failed attempt number attempt (1 for the
// first): Backoff doubled for each earlier retry, at most MaxBackoff when
// that is set, plus up to Jitter of it (rnd gives a number in [0, 1)).
func (p RetryPolicy) delay(attempt int, rnd func() float64) time.Duration {
	d := p.Backoff
	for i := 1; i < attempt && d > 0 && d < time.Duration(1)<<62; i++ {
		d *= 2
	}
	if p.MaxBackoff > 0 && d > p.MaxBackoff {
		d = p.MaxBackoff
	}
	if j := min(max(p.Jitter, 0), 1); j > 0 && d > 0 {
		d += time.Duration(float64(d) * j * rnd())
	}
	return d
}

// sleepCtx waits d, or less if ctx ends first; it reports whether ctx is
// still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
