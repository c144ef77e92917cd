package workflow

import (
	"context"
	"errors"
	"testing"
)

func TestCancellingTheRunCancelsRunningStepsAndSkipsPendingOnes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		cancel func(r *Run, parent context.CancelFunc)
	}{
		{"by Cancel", func(r *Run, _ context.CancelFunc) { r.Cancel() }},
		{"by the context Start was given", func(_ *Run, parent context.CancelFunc) { parent() }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			started := make(chan StepID, 2)
			rec := &recorder{}
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			// Two slots: r1 and r2 run, p2 waits for a slot, p1 for r1.
			r, err := Start(parent, "c", []Step{task("r1"), task("r2"), task("p1", "r1"), task("p2")}, Options{
				MaxParallel: 2, Sinks: []Sink{rec}, Registry: runners(blockUntilCancelled(started)),
			})
			if err != nil {
				t.Fatal(err)
			}
			awaitStart(t, started)
			awaitStart(t, started)
			tc.cancel(r, cancel)
			res := waitRun(t, r, rec)
			want := map[StepID]Status{"r1": StatusCancelled, "r2": StatusCancelled, "p1": StatusSkipped, "p2": StatusSkipped}
			for id, w := range want {
				if got := res.Steps[id]; got.Status != w {
					t.Errorf("%s %+v, want %s", id, got, w)
				}
			}
			if got := res.Steps["p1"].Reason; got != "run cancelled" {
				t.Errorf("p1's reason %q", got)
			}
			if !errors.Is(res.Steps["r1"].Err, context.Canceled) {
				t.Errorf("r1's error %v, want context.Canceled", res.Steps["r1"].Err)
			}
			events := rec.all()
			if last := events[len(events)-1]; res.Status != StatusCancelled || last.Kind != RunKind || last.To != StatusCancelled {
				t.Errorf("run %s, last event %s", res.Status, moveText(last))
			}
		})
	}
}

func TestCancellingOneBranchLetsTheOtherFinish(t *testing.T) {
	t.Parallel()
	started := make(chan StepID, 1)
	seen := &recorder{}
	r, rec := startRun(t, []Step{task("a1"), task("a2", "a1"), task("a3", "a2"), task("b1"), task("b2", "b1")}, Options{
		MaxParallel: 2,
		Sinks:       []Sink{seen},
		Registry: runners(byID(map[StepID]RunFunc{
			"a1": blockUntilCancelled(started),
			// b1 runs alongside a1 until a1 is cancelled.
			"b1": func(context.Context, *StepContext) (any, error) {
				<-seen.when(isMove("a1", StatusCancelled))
				return "b1", nil
			},
		})),
	})
	await(t, seen.when(isMove("b1", StatusRunning)), "b1 to start")
	awaitStart(t, started)
	if err := r.CancelStep("a1"); err != nil {
		t.Fatal(err)
	}
	res := waitRun(t, r, rec)
	want := map[StepID]StepResult{
		"a1": {Status: StatusCancelled, Err: context.Canceled, Attempts: 1},
		"a2": {Status: StatusSkipped, Reason: `dependency "a1" cancelled`},
		"a3": {Status: StatusSkipped, Reason: `dependency "a1" cancelled`},
		"b1": {Status: StatusSucceeded, Output: "b1", Attempts: 1},
		"b2": {Status: StatusSucceeded, Output: "b2", Attempts: 1},
	}
	for id, w := range want {
		if got := res.Steps[id]; got != w {
			t.Errorf("%s: %+v, want %+v", id, got, w)
		}
	}
	if res.Status != StatusCancelled {
		t.Errorf("run %s, want cancelled (a step was, none failed)", res.Status)
	}
}

func TestCancelStepOfAPendingStepSkipsItAndItsDependents(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	r, rec := startRun(t, []Step{task("gate"), task("p", "gate"), task("q", "p")}, Options{
		Registry: runners(byID(map[StepID]RunFunc{
			"gate": func(context.Context, *StepContext) (any, error) {
				<-release
				return "gate", nil
			},
		})),
	})
	if err := r.CancelStep("p"); err != nil {
		t.Fatal(err)
	}
	close(release)
	res := waitRun(t, r, rec)
	want := map[StepID]StepResult{
		"gate": {Status: StatusSucceeded, Output: "gate", Attempts: 1},
		"p":    {Status: StatusSkipped, Reason: "cancelled before it started"},
		"q":    {Status: StatusSkipped, Reason: `dependency "p" cancelled`},
	}
	for id, w := range want {
		if got := res.Steps[id]; got != w {
			t.Errorf("%s: %+v, want %+v", id, got, w)
		}
	}
}

func TestAStepCancelledWhileRunningEndsCancelledWhateverItReturns(t *testing.T) {
	t.Parallel()
	started := make(chan StepID, 1)
	r, rec := startRun(t, []Step{task("stubborn"), task("after", "stubborn")}, Options{
		Registry: runners(byID(map[StepID]RunFunc{
			"stubborn": func(ctx context.Context, sc *StepContext) (any, error) {
				started <- sc.Step.ID
				<-ctx.Done()
				return "done anyway", nil
			},
		})),
	})
	awaitStart(t, started)
	if err := r.CancelStep("stubborn"); err != nil {
		t.Fatal(err)
	}
	res := waitRun(t, r, rec)
	if got := res.Steps["stubborn"]; got.Status != StatusCancelled || got.Output != nil {
		t.Fatalf("stubborn %+v, want cancelled without output", got)
	}
	if got := res.Steps["after"]; got.Status != StatusSkipped {
		t.Fatalf("after %+v, want skipped", got)
	}
}

func TestCancelStepNamesAnUnknownStepAndLeavesAnEndedOneAlone(t *testing.T) {
	t.Parallel()
	r, rec := startRun(t, []Step{task("a")}, Options{Registry: runners(byID(nil))})
	if err := r.CancelStep("nope"); !errors.Is(err, ErrUnknownStep) {
		t.Fatalf("CancelStep(nope): %v, want ErrUnknownStep", err)
	}
	res := waitRun(t, r, rec)
	if err := r.CancelStep("a"); err != nil {
		t.Fatalf("CancelStep after the end: %v", err)
	}
	if res.Steps["a"].Status != StatusSucceeded || res.Status != StatusSucceeded {
		t.Fatalf("a %s, run %s", res.Steps["a"].Status, res.Status)
	}
}

func TestStepsAddedAfterTheRunWasCancelledAreSkipped(t *testing.T) {
	t.Parallel()
	started := make(chan StepID, 1)
	expanded := make(chan error, 1)
	r, rec := startRun(t, []Step{task("a")}, Options{Registry: runners(byID(map[StepID]RunFunc{
		"a": func(ctx context.Context, sc *StepContext) (any, error) {
			started <- sc.Step.ID
			<-ctx.Done()
			expanded <- sc.Expand(task("b", "a"), task("c"))
			return nil, ctx.Err()
		},
	}))})
	awaitStart(t, started)
	r.Cancel()
	res := waitRun(t, r, rec)
	if err := <-expanded; err != nil {
		t.Fatalf("Expand: %v", err)
	}
	for _, id := range []StepID{"b", "c"} {
		if got := res.Steps[id]; got.Status != StatusSkipped || got.Reason != "run cancelled" {
			t.Errorf("%s %+v, want skipped: run cancelled", id, got)
		}
	}
}
