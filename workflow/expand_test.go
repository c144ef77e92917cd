package workflow

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestStepsAddStepsWhileTheRunGoesThreeLevelsDeep(t *testing.T) {
	t.Parallel()
	// a adds b1 (after a) and b2 (after a and the static x); b1 adds c1
	// (after b1 and a, which has succeeded by then); c1 adds d1 (after c1
	// and b2).
	adds := map[StepID][]Step{
		"a":  {task("b1", "a"), task("b2", "a", "x")},
		"b1": {task("c1", "b1", "a")},
		"c1": {task("d1", "c1", "b2")},
	}
	var mu sync.Mutex
	inputs := map[StepID]string{}
	r, rec := startRun(t, []Step{task("a"), task("x")}, Options{MaxParallel: 3, Registry: runners(
		func(_ context.Context, sc *StepContext) (any, error) {
			mu.Lock()
			inputs[sc.Step.ID] = fmt.Sprint(sc.Inputs)
			mu.Unlock()
			if more, ok := adds[sc.Step.ID]; ok {
				if err := sc.Expand(more...); err != nil {
					return nil, err
				}
			}
			return "out of " + string(sc.Step.ID), nil
		})})
	res := waitRun(t, r, rec)
	if res.Status != StatusSucceeded || len(res.Steps) != 6 {
		t.Fatalf("run %s with %d steps, want succeeded with 6:\n%s", res.Status, len(res.Steps), rec.dump())
	}
	// Every step started after each of its dependencies succeeded.
	events := rec.all()
	deps := map[StepID][]StepID{"a": nil, "x": nil}
	for _, more := range adds {
		for _, s := range more {
			deps[s.ID] = s.Deps
		}
	}
	for id, ds := range deps {
		started := slices.IndexFunc(events, isMove(id, StatusRunning))
		for _, d := range ds {
			if done := slices.IndexFunc(events, isMove(d, StatusSucceeded)); done < 0 || done > started {
				t.Errorf("%s started (event %d) before %s succeeded (event %d)", id, started, d, done)
			}
		}
	}
	if want := "map[b2:out of b2 c1:out of c1]"; inputs["d1"] != want {
		t.Errorf("d1's inputs %s, want %s", inputs["d1"], want)
	}
}

func TestANewStepThatDependsOnAFailedStepIsSkipped(t *testing.T) {
	t.Parallel()
	// bad fails and mid (after bad) is skipped; then late adds steps after
	// bad, after mid, after one of its own new steps, and after itself.
	seen := &recorder{}
	r, rec := startRun(t, []Step{task("bad"), task("mid", "bad"), task("late")}, Options{
		MaxParallel: 2,
		Sinks:       []Sink{seen},
		Registry: runners(byID(map[StepID]RunFunc{
			"bad": fail,
			"late": func(ctx context.Context, sc *StepContext) (any, error) {
				<-seen.when(isMove("mid", StatusSkipped))
				return "late", sc.Expand(task("e1", "bad"), task("e2", "mid"), task("e3", "late", "e1"), task("e4", "late"))
			},
		})),
	})
	res := waitRun(t, r, rec)
	want := map[StepID]StepResult{
		"e1": {Status: StatusSkipped, Reason: `dependency "bad" failed`},
		"e2": {Status: StatusSkipped, Reason: `dependency "bad" failed`},
		"e3": {Status: StatusSkipped, Reason: `dependency "bad" failed`},
		"e4": {Status: StatusSucceeded, Output: "e4", Attempts: 1},
	}
	for id, w := range want {
		if got := res.Steps[id]; got != w {
			t.Errorf("%s: %+v, want %+v", id, got, w)
		}
	}
	if res.Status != StatusFailed {
		t.Errorf("run %s, want failed", res.Status)
	}
}

func TestExpansionsStartWhenTheyCanWhoeverAddsThem(t *testing.T) {
	t.Parallel()
	// An expansion that does not wait for the step adding it starts while
	// that step still runs; one made through a StepContext kept after its
	// step ended is picked up too.
	seen := &recorder{}
	kept := make(chan *StepContext, 1)
	r, rec := startRun(t, []Step{task("adder"), task("keeper"), task("hold")}, Options{
		MaxParallel: 3,
		Sinks:       []Sink{seen},
		Registry: runners(byID(map[StepID]RunFunc{
			"adder": func(ctx context.Context, sc *StepContext) (any, error) {
				if err := sc.Expand(task("free"), task("after-free", "free", "adder")); err != nil {
					return nil, err
				}
				<-seen.when(isMove("free", StatusSucceeded))
				return "adder", nil
			},
			"keeper": func(ctx context.Context, sc *StepContext) (any, error) {
				kept <- sc
				return "keeper", nil
			},
			"hold": func(ctx context.Context, sc *StepContext) (any, error) {
				<-seen.when(isMove("late", StatusSucceeded))
				return "hold", nil
			},
		})),
	})
	var sc *StepContext
	select {
	case sc = <-kept:
	case <-time.After(testDeadline):
		t.Fatal("keeper did not run")
	}
	await(t, seen.when(isMove("keeper", StatusSucceeded)), "keeper to end")
	if err := sc.Expand(task("late", "keeper")); err != nil {
		t.Fatal(err)
	}
	res := waitRun(t, r, rec)
	if res.Status != StatusSucceeded || len(res.Steps) != 6 {
		t.Fatalf("run %s with %d steps:\n%s", res.Status, len(res.Steps), rec.dump())
	}
}
