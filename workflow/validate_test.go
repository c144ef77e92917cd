package workflow

import (
	"context"
	"errors"
	"testing"
)

func TestValidateAndStartRefuseTheSameSets(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		steps []Step
		is    error  // nil: the set is valid
		msg   string // the error's text
	}{
		{
			name:  "a cycle of three is named in the order its steps would run",
			steps: []Step{task("a", "c"), task("b", "a"), task("c", "b")},
			is:    ErrCycle,
			msg:   "dependency cycle: a -> b -> c -> a (a step cannot wait for itself)",
		},
		{
			name:  "a step that depends on itself is a cycle",
			steps: []Step{task("a"), task("b", "a", "b")},
			is:    ErrCycle,
			msg:   "dependency cycle: b -> b (a step cannot wait for itself)",
		},
		{
			name:  "a cycle behind valid steps is named from its first step",
			steps: []Step{task("root"), task("x", "root", "z"), task("y", "x"), task("z", "y")},
			is:    ErrCycle,
			msg:   "dependency cycle: x -> y -> z -> x (a step cannot wait for itself)",
		},
		{
			name:  "of two cycles the one with the earlier step is named",
			steps: []Step{task("p", "q"), task("q", "p"), task("a", "b"), task("b", "a")},
			is:    ErrCycle,
			msg:   "dependency cycle: p -> q -> p (a step cannot wait for itself)",
		},
		{
			name:  "the shortest way round a cycle is named",
			steps: []Step{task("a", "c"), task("b", "a"), task("c", "b", "a")},
			is:    ErrCycle,
			msg:   "dependency cycle: a -> c -> a (a step cannot wait for itself)",
		},
		{
			name:  "an unknown dependency names the step and the dependency",
			steps: []Step{task("a"), task("b", "a", "x")},
			is:    ErrUnknownDependency,
			msg:   `step "b": unknown dependency "x": no step of the run has that id`,
		},
		{
			name:  "a repeated id names the id",
			steps: []Step{task("a"), task("b"), task("a")},
			is:    ErrDuplicateID,
			msg:   `step "a": duplicate step id: ids must be unique within a run`,
		},
		{
			name:  "an empty id names the step's position",
			steps: []Step{task("a"), task("")},
			is:    ErrEmptyID,
			msg:   "step 1: empty step id: every step needs an id",
		},
		{
			name:  "ids are checked before dependencies",
			steps: []Step{task("a", "x"), task("a")},
			is:    ErrDuplicateID,
			msg:   `step "a": duplicate step id: ids must be unique within a run`,
		},
		{
			name:  "dependencies are checked before cycles",
			steps: []Step{task("a", "b"), task("b", "a", "x")},
			is:    ErrUnknownDependency,
			msg:   `step "b": unknown dependency "x": no step of the run has that id`,
		},
		{name: "a chain is valid", steps: []Step{task("a"), task("b", "a"), task("c", "b")}},
		{name: "a diamond is valid", steps: []Step{task("a"), task("b", "a"), task("c", "a"), task("d", "b", "c")}},
		{name: "steps may come before their dependencies", steps: []Step{task("b", "a"), task("a")}},
		{name: "a dependency named twice is one dependency", steps: []Step{task("a"), task("b", "a", "a")}},
		{name: "no steps is a valid run", steps: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			check := func(how string, err error) {
				t.Helper()
				if tc.is == nil {
					if err != nil {
						t.Fatalf("%s: %v, want no error", how, err)
					}
					return
				}
				if !errors.Is(err, tc.is) {
					t.Fatalf("%s: %v, want %v", how, err, tc.is)
				}
				if err.Error() != tc.msg {
					t.Fatalf("%s:\n got %s\nwant %s", how, err, tc.msg)
				}
			}
			check("Validate", Validate(tc.steps))
			rec := &recorder{}
			r, err := Start(context.Background(), "v", tc.steps, Options{Registry: runners(byID(nil)), Sinks: []Sink{rec}})
			check("Start", err)
			if r != nil {
				if res := waitRun(t, r, rec); res.Status != StatusSucceeded || len(res.Steps) != len(tc.steps) {
					t.Fatalf("run %s, want succeeded", res.Status)
				}
			}
		})
	}
}

func TestStepErrorAndCycleErrorCarryTheirSubjects(t *testing.T) {
	t.Parallel()
	var se *StepError
	if err := Validate([]Step{task("a"), task("b", "zz")}); !errors.As(err, &se) || se.Step != "b" || se.Index != 1 {
		t.Fatalf("Validate: %#v, want a *StepError for b at 1", err)
	}
	var ce *CycleError
	if err := Validate([]Step{task("a", "b"), task("b", "a")}); !errors.As(err, &ce) || len(ce.Cycle) != 3 {
		t.Fatalf("Validate: %#v, want a *CycleError a -> b -> a", err)
	}
}

func TestExpandChecksOnlyTheNewStepsAndRefusesAFaultySetWhole(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{})
	r, rec := startRun(t, []Step{task("root")}, Options{Registry: runners(byID(map[StepID]RunFunc{
		"root": func(ctx context.Context, sc *StepContext) (any, error) {
			close(started)
			<-release
			return "root", nil
		},
	}))})
	await(t, started, "root to start")
	refused := []struct {
		name  string
		steps []Step
		is    error
	}{
		{"an id the run has is refused", []Step{task("n1", "root"), task("root")}, ErrDuplicateID},
		{"an id repeated in the set is refused", []Step{task("n1"), task("n1")}, ErrDuplicateID},
		{"an unknown dependency is refused", []Step{task("n1", "root"), task("n2", "nope")}, ErrUnknownDependency},
		{"a cycle among the new steps is refused", []Step{task("n1", "root", "n2"), task("n2", "n1")}, ErrCycle},
		{"an empty id is refused", []Step{task("n1"), task("")}, ErrEmptyID},
	}
	for _, tc := range refused {
		if err := r.Expand(tc.steps...); !errors.Is(err, tc.is) {
			t.Errorf("%s: Expand returned %v, want %v", tc.name, err, tc.is)
		}
	}
	// A refused set left nothing behind: its ids are free.
	if err := r.Expand(task("n1", "root"), task("n2", "n1")); err != nil {
		t.Fatalf("Expand after refusals: %v", err)
	}
	close(release)
	res := waitRun(t, r, rec)
	if res.Status != StatusSucceeded || len(res.Steps) != 3 {
		t.Fatalf("run %s with %d steps, want succeeded with 3:\n%s", res.Status, len(res.Steps), rec.dump())
	}
	if err := r.Expand(task("late")); !errors.Is(err, ErrRunEnded) {
		t.Fatalf("Expand after the end: %v, want ErrRunEnded", err)
	}
}
