package workflow

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestRetryDelayDoublesUpToItsCapWithJitterOnTop(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	cases := []struct {
		name    string
		policy  RetryPolicy
		attempt int
		rnd     float64
		want    time.Duration
	}{
		{"the first retry waits Backoff", RetryPolicy{Backoff: 10 * ms}, 1, 0, 10 * ms},
		{"each later retry waits twice as long", RetryPolicy{Backoff: 10 * ms}, 3, 0, 40 * ms},
		{"MaxBackoff caps the wait", RetryPolicy{Backoff: 10 * ms, MaxBackoff: 25 * ms}, 3, 0, 25 * ms},
		{"jitter adds up to its fraction", RetryPolicy{Backoff: 10 * ms, Jitter: 0.5}, 1, 0.999999, 10*ms + 5*ms - 5},
		{"jitter above 1 counts as 1", RetryPolicy{Backoff: 10 * ms, Jitter: 7}, 1, 0.5, 15 * ms},
		{"negative jitter counts as none", RetryPolicy{Backoff: 10 * ms, Jitter: -1}, 1, 0.5, 10 * ms},
		{"no backoff retries at once", RetryPolicy{Jitter: 1}, 4, 0.5, 0},
		{"a huge attempt number does not overflow", RetryPolicy{Backoff: time.Second}, 500, 0, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.policy.delay(tc.attempt, func() float64 { return tc.rnd })
			if tc.want < 0 { // only no overflow
				if got < time.Duration(1)<<62 {
					t.Fatalf("delay %v, want at least 2^62 ns", got)
				}
				return
			}
			if d := got - tc.want; d < -5 || d > 5 {
				t.Fatalf("delay %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAStepCancelledWhileItWaitsToRetryEndsCancelled(t *testing.T) {
	t.Parallel()
	seen := &recorder{}
	steps := []Step{{ID: "flaky", Kind: testKind, Retry: RetryPolicy{Attempts: 5, Backoff: time.Hour}}}
	r, rec := startRun(t, steps, Options{Sinks: []Sink{seen}, Registry: runners(fail)})
	await(t, seen.when(func(e Event) bool { return e.StepID == "flaky" && e.Attempt == 2 }), "the first retry")
	if err := r.CancelStep("flaky"); err != nil {
		t.Fatal(err)
	}
	res := waitRun(t, r, rec)
	if got := res.Steps["flaky"]; got.Status != StatusCancelled || got.Attempts != 2 || !errors.Is(got.Err, errBoom) {
		t.Fatalf("flaky %+v, want cancelled in attempt 2 with the last error", got)
	}
	if got := rec.moves("flaky"); !slices.Equal(got, []string{"pending->running#1", "running->running#2", "running->cancelled#2"}) {
		t.Fatalf("flaky moved %v", got)
	}
}

func TestPermanentMarksAnErrorAndKeepsIt(t *testing.T) {
	t.Parallel()
	if Permanent(nil) != nil {
		t.Fatal("Permanent(nil) is not nil")
	}
	err := Permanent(errBoom)
	if !IsPermanent(err) || !errors.Is(err, errBoom) || err.Error() != errBoom.Error() {
		t.Fatalf("Permanent(errBoom) = %v", err)
	}
	if IsPermanent(errBoom) {
		t.Fatal("a plain error is permanent")
	}
}

func TestRunOnceReportsATimeoutOnlyWhenTheAttemptsDeadlinePassed(t *testing.T) {
	t.Parallel()
	sc := &StepContext{Step: &Step{ID: "x"}}
	parent, cancel := context.WithCancel(context.Background())
	cancel()
	// The step's own context ended, not its timeout: no timeout error.
	_, err := runOnce(parent, sc, func(ctx context.Context, _ *StepContext) (any, error) {
		return nil, ctx.Err()
	}, time.Hour)
	if errors.Is(err, ErrTimeout) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled without ErrTimeout", err)
	}
}
