package workflow

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestMaxParallelIsReachedAndNeverExceeded(t *testing.T) {
	t.Parallel()
	cases := []struct {
		maxParallel, want int
	}{
		{1, 1}, {3, 3}, {8, 8},
		{0, DefaultMaxParallel}, {20, MaxMaxParallel}, {-4, 1},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("maxParallel %d runs %d steps at once", tc.maxParallel, tc.want), func(t *testing.T) {
			t.Parallel()
			var active, most atomic.Int64
			reached := make(chan struct{})
			var once sync.Once
			deadline, cancel := context.WithTimeout(context.Background(), testDeadline)
			defer cancel()
			// Every step waits until want of them run at once, so the run
			// ends only if the scheduler reaches the limit.
			run := func(ctx context.Context, sc *StepContext) (any, error) {
				n := active.Add(1)
				defer active.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				if n == int64(tc.want) {
					once.Do(func() { close(reached) })
				}
				select {
				case <-reached:
				case <-deadline.Done():
					return nil, fmt.Errorf("never %d steps at once", tc.want)
				}
				runtime.Gosched() // let others overlap
				return nil, nil
			}
			// 300 steps: 200 independent ones, then 100 in ten chains.
			steps := make([]Step, 0, 300)
			for i := range 200 {
				steps = append(steps, task(StepID(fmt.Sprintf("s%d", i))))
			}
			for i := range 100 {
				steps = append(steps, task(StepID(fmt.Sprintf("c%d", i)), StepID(fmt.Sprintf("s%d", i%10)), StepID(fmt.Sprintf("s%d", 100+i))))
			}
			r, rec := startRun(t, steps, Options{MaxParallel: tc.maxParallel, Registry: runners(run)})
			res := waitRun(t, r, rec)
			if res.Status != StatusSucceeded {
				t.Fatalf("run %s:\n%s", res.Status, rec.dump())
			}
			if got := most.Load(); got != int64(tc.want) {
				t.Fatalf("at most %d steps ran at once, want %d", got, tc.want)
			}
		})
	}
}

func TestSinksAreCalledFromOneGoroutineAtATime(t *testing.T) {
	t.Parallel()
	var inside atomic.Int32
	var overlaps atomic.Int32
	sink := SinkFunc(func(Event) {
		if inside.Add(1) != 1 {
			overlaps.Add(1)
		}
		runtime.Gosched()
		inside.Add(-1)
	})
	r, rec := startRun(t, randomDAG(300, 7), Options{MaxParallel: 8, Sinks: []Sink{sink}, Registry: runners(byID(nil))})
	waitRun(t, r, rec)
	if overlaps.Load() != 0 {
		t.Fatalf("%d events were emitted while another was", overlaps.Load())
	}
}

// Not parallel: it counts the process's goroutines, so nothing else may
// start or end them meanwhile (parallel tests wait until sequential ones
// have finished).
func TestRunsLeaveNoGoroutineBehind(t *testing.T) {
	before := runtime.NumGoroutine()
	reg := runners(byID(map[StepID]RunFunc{
		"fails":  fail,
		"panics": func(context.Context, *StepContext) (any, error) { panic("no") },
		"grows": func(_ context.Context, sc *StepContext) (any, error) {
			return nil, sc.Expand(task(sc.Step.ID+"-child", sc.Step.ID), task(sc.Step.ID+"-other", "fails"))
		},
		"waits": func(ctx context.Context, sc *StepContext) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}))
	for i := range 100 {
		steps := []Step{
			task("fails"), task("panics"), task("grows"), task("after", "fails"),
			{ID: "waits", Kind: testKind, Timeout: time.Millisecond},
		}
		steps = append(steps, randomDAG(20, uint64(i))...)
		r, err := Start(context.Background(), fmt.Sprint(i), steps, Options{MaxParallel: 1 + i%8, Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			r.Cancel()
		}
		select {
		case <-r.Done():
		case <-time.After(testDeadline):
			t.Fatalf("run %d did not end", i)
		}
	}
	// A run's goroutines are gone once Done is closed, but the runtime may
	// take a moment to count them out.
	deadline := time.Now().Add(testDeadline)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before 100 runs, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}
