package workflow

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var errBoom = errors.New("boom")

func fail(context.Context, *StepContext) (any, error) { return nil, errBoom }

func TestSkipsPropagateThroughEveryLevelNamingTheStepThatDidNotSucceed(t *testing.T) {
	t.Parallel()
	// build fails; compile, link, package depend on it level by level;
	// docs is independent; publish needs both package and docs.
	steps := []Step{
		task("build"), task("compile", "build"), task("link", "compile"),
		task("package", "link"), task("docs"), task("publish", "package", "docs"),
	}
	cases := []struct {
		name       string
		run        RunFunc
		runStatus  Status
		rootStatus Status
		reason     string
	}{
		{"a failed step skips its dependents", fail, StatusFailed, StatusFailed, `dependency "build" failed`},
		{"a panicking step skips its dependents", func(context.Context, *StepContext) (any, error) { panic("kaboom") },
			StatusFailed, StatusFailed, `dependency "build" failed`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, rec := startRun(t, steps, Options{Registry: runners(byID(map[StepID]RunFunc{"build": tc.run}))})
			res := waitRun(t, r, rec)
			if res.Status != tc.runStatus {
				t.Fatalf("run %s, want %s", res.Status, tc.runStatus)
			}
			want := map[StepID]StepResult{
				"build":   {Status: tc.rootStatus, Attempts: 1},
				"compile": {Status: StatusSkipped, Reason: tc.reason},
				"link":    {Status: StatusSkipped, Reason: tc.reason},
				"package": {Status: StatusSkipped, Reason: tc.reason},
				"docs":    {Status: StatusSucceeded, Output: "docs", Attempts: 1},
				"publish": {Status: StatusSkipped, Reason: tc.reason},
			}
			for id, w := range want {
				got := res.Steps[id]
				got.Err = nil
				if got != w {
					t.Errorf("%s: %+v, want %+v", id, got, w)
				}
			}
			for _, id := range []StepID{"compile", "link", "package", "publish"} {
				if got := rec.moves(id); !slices.Equal(got, []string{"pending->skipped"}) {
					t.Errorf("%s moved %v, want only pending->skipped", id, got)
				}
			}
		})
	}
}

func TestAPanicIsItsStepsFailureAndTheProcessGoesOn(t *testing.T) {
	t.Parallel()
	r, rec := startRun(t, []Step{task("boom"), task("after", "boom"), task("other")}, Options{
		Registry: runners(byID(map[StepID]RunFunc{
			"boom": func(context.Context, *StepContext) (any, error) { panic("kaboom") },
		})),
	})
	res := waitRun(t, r, rec)
	var pe *PanicError
	if !errors.As(res.Steps["boom"].Err, &pe) || pe.Value != "kaboom" || len(pe.Stack) == 0 {
		t.Fatalf("boom's error %v, want a *PanicError with the value and a stack", res.Steps["boom"].Err)
	}
	if got := rec.moves("boom"); !slices.Equal(got, []string{"pending->running#1", "running->failed#1"}) {
		t.Fatalf("boom moved %v", got)
	}
	events := rec.all()
	i := slices.IndexFunc(events, isMove("boom", StatusFailed))
	if events[i].Error != "panic: kaboom" {
		t.Fatalf("failed event error %q, want %q", events[i].Error, "panic: kaboom")
	}
	if res.Steps["after"].Status != StatusSkipped || res.Steps["other"].Status != StatusSucceeded {
		t.Fatalf("after %s, other %s; want skipped, succeeded", res.Steps["after"].Status, res.Steps["other"].Status)
	}
}

func TestIndependentBranchesGoOnAfterAFailure(t *testing.T) {
	t.Parallel()
	// a1 fails only once b1 runs, so the b branch is mid-way when it does;
	// b2 starts only after a1 has failed.
	bRuns := make(chan struct{})
	failed := &recorder{}
	r, rec := startRun(t, []Step{task("a1"), task("a2", "a1"), task("b1"), task("b2", "b1"), task("b3", "b2")},
		Options{MaxParallel: 2, Sinks: []Sink{failed}, Registry: runners(byID(map[StepID]RunFunc{
			"a1": func(context.Context, *StepContext) (any, error) {
				<-bRuns
				return nil, errBoom
			},
			"b1": func(context.Context, *StepContext) (any, error) {
				close(bRuns)
				<-failed.when(isMove("a1", StatusFailed))
				return "b1", nil
			},
		}))})
	res := waitRun(t, r, rec)
	for id, want := range map[StepID]Status{"a1": StatusFailed, "a2": StatusSkipped, "b1": StatusSucceeded, "b2": StatusSucceeded, "b3": StatusSucceeded} {
		if got := res.Steps[id].Status; got != want {
			t.Errorf("%s %s, want %s", id, got, want)
		}
	}
	if res.Status != StatusFailed {
		t.Errorf("run %s, want failed", res.Status)
	}
}

func TestAStepWhoseKindHasNoRunnerFailsSayingTheKindIsNotAvailable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		reg  *Registry
	}{
		{"a registry without the kind", runners(byID(nil))},
		{"no registry", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			steps := []Step{{ID: "team", Kind: "subagent"}, task("merge", "team")}
			r, rec := startRun(t, steps, Options{Registry: tc.reg})
			res := waitRun(t, r, rec)
			err := res.Steps["team"].Err
			if !errors.Is(err, ErrKindNotAvailable) || !strings.Contains(err.Error(), `step kind "subagent" is not available`) {
				t.Fatalf("team's error %v, want one saying the kind is not available", err)
			}
			if got := rec.moves("team"); !slices.Equal(got, []string{"pending->running#1", "running->failed#1"}) {
				t.Fatalf("team moved %v", got)
			}
			if res.Steps["merge"].Reason != `dependency "team" failed` || res.Status != StatusFailed {
				t.Fatalf("merge %+v, run %s", res.Steps["merge"], res.Status)
			}
		})
	}
}

func TestATimedOutAttemptFailsItsStep(t *testing.T) {
	t.Parallel()
	steps := []Step{{ID: "slow", Kind: testKind, Timeout: 20 * time.Millisecond}}
	r, rec := startRun(t, steps, Options{Registry: runners(func(ctx context.Context, sc *StepContext) (any, error) {
		<-ctx.Done() // only the timeout ends it
		return nil, ctx.Err()
	})})
	res := waitRun(t, r, rec)
	got := res.Steps["slow"]
	if got.Status != StatusFailed || !errors.Is(got.Err, ErrTimeout) || !errors.Is(got.Err, context.DeadlineExceeded) {
		t.Fatalf("slow %+v, want failed with ErrTimeout", got)
	}
	if want := "timed out after 20ms: context deadline exceeded"; got.Err.Error() != want {
		t.Fatalf("error %q, want %q", got.Err, want)
	}
}

func TestRetriesAreRecordedInTheTransitions(t *testing.T) {
	t.Parallel()
	policy := RetryPolicy{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, Jitter: 0.5}
	cases := []struct {
		name     string
		failures int   // attempts that fail before one succeeds
		err      error // what a failing attempt returns
		timeout  time.Duration
		status   Status
		moves    []string
	}{
		{
			name: "a step that fails twice then succeeds runs three attempts", failures: 2, err: errBoom,
			status: StatusSucceeded,
			moves:  []string{"pending->running#1", "running->running#2", "running->running#3", "running->succeeded#3"},
		},
		{
			name: "a step that always fails stops after its attempts", failures: 9, err: errBoom,
			status: StatusFailed,
			moves:  []string{"pending->running#1", "running->running#2", "running->running#3", "running->failed#3"},
		},
		{
			name: "a permanent error is not retried", failures: 9, err: Permanent(errBoom),
			status: StatusFailed,
			moves:  []string{"pending->running#1", "running->failed#1"},
		},
		{
			name: "a timed out attempt is retried", failures: 1, timeout: 10 * time.Millisecond,
			status: StatusSucceeded,
			moves:  []string{"pending->running#1", "running->running#2", "running->succeeded#2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			steps := []Step{{ID: "flaky", Kind: testKind, Retry: policy, Timeout: tc.timeout}, task("next", "flaky")}
			r, rec := startRun(t, steps, Options{Registry: runners(byID(map[StepID]RunFunc{
				"flaky": func(ctx context.Context, sc *StepContext) (any, error) {
					if sc.Attempt > tc.failures {
						return fmt.Sprintf("ok on %d", sc.Attempt), nil
					}
					if tc.timeout > 0 {
						<-ctx.Done()
						return nil, ctx.Err()
					}
					return nil, fmt.Errorf("attempt %d: %w", sc.Attempt, tc.err)
				},
			}))})
			res := waitRun(t, r, rec)
			if got := rec.moves("flaky"); !slices.Equal(got, tc.moves) {
				t.Fatalf("flaky moved %v, want %v", got, tc.moves)
			}
			got := res.Steps["flaky"]
			if got.Status != tc.status || got.Attempts != len(tc.moves)-1 {
				t.Fatalf("flaky %+v, want %s after %d attempts", got, tc.status, len(tc.moves)-1)
			}
			// Each retry records the error of the attempt before it.
			for _, e := range rec.all() {
				if e.From == StatusRunning && e.To == StatusRunning && e.Error == "" {
					t.Fatalf("retry event without the error: %+v", e)
				}
				if e.From == StatusRunning && e.To == StatusRunning && tc.err != nil &&
					e.Error != fmt.Sprintf("attempt %d: boom", e.Attempt-1) {
					t.Fatalf("retry to attempt %d records %q", e.Attempt, e.Error)
				}
			}
		})
	}
}

func TestOutputsReachDependentsAsInputs(t *testing.T) {
	t.Parallel()
	var got atomic.Value
	r, rec := startRun(t, []Step{task("a"), task("b"), task("quiet"), task("c", "a", "b", "quiet")}, Options{
		Registry: runners(byID(map[StepID]RunFunc{
			"quiet": func(context.Context, *StepContext) (any, error) { return nil, nil },
			"c": func(_ context.Context, sc *StepContext) (any, error) {
				got.Store(fmt.Sprint(sc.Inputs))
				return nil, nil
			},
		})),
	})
	waitRun(t, r, rec)
	if want := "map[a:a b:b]"; got.Load() != want {
		t.Fatalf("c's inputs %v, want %s (a nil output has no entry)", got.Load(), want)
	}
}

// randomDAG makes n steps, each depending on up to three earlier ones.
func randomDAG(n int, seed uint64) []Step {
	rnd := rand.New(rand.NewPCG(seed, 0))
	steps := make([]Step, n)
	for i := range steps {
		steps[i] = task(StepID(fmt.Sprintf("s%d", i)))
		for k := rnd.IntN(4); k > 0 && i > 0; k-- {
			steps[i].Deps = append(steps[i].Deps, steps[rnd.IntN(i)].ID)
		}
	}
	return steps
}

func TestEventsAreNumberedWithoutGapsAndEveryMoveIsInTheTable(t *testing.T) {
	t.Parallel()
	for _, maxParallel := range []int{1, 3, 8} {
		t.Run(fmt.Sprintf("at maxParallel %d", maxParallel), func(t *testing.T) {
			t.Parallel()
			steps := randomDAG(500, uint64(maxParallel))
			r, rec := startRun(t, steps, Options{MaxParallel: maxParallel, Registry: runners(
				func(_ context.Context, sc *StepContext) (any, error) {
					if sc.Step.ID[len(sc.Step.ID)-1] == '7' { // some fail, so some are skipped
						return nil, errBoom
					}
					return sc.Step.ID, nil
				})})
			waitRun(t, r, rec)
			events := rec.all()
			checkSeq(t, events)
			status := map[StepID]Status{}
			for _, e := range events {
				if e.RunID != t.Name() {
					t.Fatalf("event of run %q", e.RunID)
				}
				if e.Kind == RunKind {
					continue
				}
				from := status[e.StepID]
				if from == "" {
					from = StatusPending
				}
				if e.From != from || !canMove(stateFor(t, e.From), stateFor(t, e.To)) {
					t.Fatalf("event %d moves %s from %s, which is at %s", e.Seq, e.StepID, e.From, from)
				}
				status[e.StepID] = e.To
			}
			if len(status) != len(steps) {
				t.Fatalf("%d steps had events, want %d", len(status), len(steps))
			}
			first, last := events[0], events[len(events)-1]
			if first.Kind != RunKind || first.To != StatusRunning || last.Kind != RunKind || last.To != StatusFailed {
				t.Fatalf("run events %s and %s, want pending->running first and running->failed last", moveText(first), moveText(last))
			}
		})
	}
}

func stateFor(t *testing.T, s Status) stepState {
	t.Helper()
	i := slices.Index(stateStatus[:], s)
	if i < 0 {
		t.Fatalf("unknown status %q", s)
	}
	return stepState(i)
}

func TestARunnerThatEndsItsGoroutineFailsItsStep(t *testing.T) {
	t.Parallel()
	r, rec := startRun(t, []Step{task("exits"), task("after", "exits")}, Options{Registry: runners(byID(map[StepID]RunFunc{
		"exits": func(context.Context, *StepContext) (any, error) {
			runtime.Goexit()
			return nil, nil
		},
	}))})
	res := waitRun(t, r, rec)
	if got := res.Steps["exits"]; got.Status != StatusFailed || !errors.Is(got.Err, errRunnerExited) {
		t.Fatalf("exits %+v, want failed: the runner exited", got)
	}
	if res.Steps["after"].Status != StatusSkipped {
		t.Fatalf("after %+v, want skipped", res.Steps["after"])
	}
}

func TestASinkThatPanicsFailsTheRunAndTheProcessGoesOn(t *testing.T) {
	t.Parallel()
	started := make(chan StepID, 1)
	var calls atomic.Int32
	sink := SinkFunc(func(e Event) {
		calls.Add(1)
		if e.StepID == "b" && e.To == StatusRunning {
			panic("sink broke")
		}
	})
	// One at a time: a runs and ends, then b's start makes the sink panic.
	r, err := Start(context.Background(), "crash", []Step{task("a"), task("b")}, Options{
		MaxParallel: 1, Sinks: []Sink{sink},
		Registry: runners(byID(map[StepID]RunFunc{"a": func(ctx context.Context, sc *StepContext) (any, error) {
			started <- sc.Step.ID
			return "a", nil
		}})),
	})
	if err != nil {
		t.Fatal(err)
	}
	awaitStart(t, started)
	var res *Result
	select {
	case <-r.Done():
		res = r.Wait()
	case <-time.After(testDeadline):
		t.Fatal("the run did not end")
	}
	var pe *PanicError
	if res.Status != StatusFailed || !errors.As(res.Err, &pe) || pe.Value != "sink broke" {
		t.Fatalf("run %s, err %v; want failed with the sink's panic", res.Status, res.Err)
	}
	if err := r.Expand(task("c")); !errors.Is(err, ErrRunEnded) {
		t.Fatalf("Expand after the crash: %v", err)
	}
}

func TestCancelStepReturnsEvenWhenHandlingItBreaksTheRun(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	sink := SinkFunc(func(e Event) {
		if e.StepID == "p" && e.To == StatusSkipped {
			panic("sink broke")
		}
	})
	r, err := Start(context.Background(), "crash", []Step{task("gate"), task("p", "gate")}, Options{
		Sinks: []Sink{sink},
		Registry: runners(byID(map[StepID]RunFunc{"gate": func(ctx context.Context, sc *StepContext) (any, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil, ctx.Err()
		}})),
	})
	if err != nil {
		t.Fatal(err)
	}
	returned := make(chan error, 1)
	go func() { returned <- r.CancelStep("p") }()
	select {
	case <-returned:
	case <-time.After(testDeadline):
		t.Fatal("CancelStep did not return")
	}
	close(release)
	select {
	case <-r.Done():
	case <-time.After(testDeadline):
		t.Fatal("the run did not end")
	}
	if res := r.Wait(); res.Status != StatusFailed || res.Err == nil {
		t.Fatalf("run %s, err %v; want failed with the sink's panic", res.Status, res.Err)
	}
}
