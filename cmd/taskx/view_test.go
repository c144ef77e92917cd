package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/task-x/runtime/workflow"
)

// testView is a view of three plan steps at a fixed clock, without colour.
func testView(out *bytes.Buffer, now *time.Time) *termView {
	steps := []workflow.Step{
		{ID: "look", Kind: workflow.KindSubagent, Input: workflow.PlanStep{Role: workflow.RoleResearch}},
		{ID: "build", Kind: workflow.KindSubagent, Deps: []workflow.StepID{"look"}, Input: workflow.PlanStep{Role: workflow.RoleImplementation}},
		{ID: "check", Kind: workflow.KindSubagent, Deps: []workflow.StepID{"build"}, Input: workflow.PlanStep{Role: workflow.RoleReview}},
	}
	v := newTermView(out, "run-1", steps)
	v.color = false
	v.now = func() time.Time { return *now }
	v.width = func() int { return 200 }
	return v
}

func TestTheViewShowsEachStepWithItsStatusAndElapsedTime(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0
	v := testView(&out, &now)
	v.started = t0
	emit := func(step workflow.StepID, from, to workflow.Status, at time.Duration, errText, reason string) {
		v.Emit(workflow.Event{RunID: "run-1", StepID: step, Kind: workflow.KindSubagent, From: from, To: to, Attempt: 1, Error: errText, Reason: reason, TS: t0.Add(at)})
	}
	v.Emit(workflow.Event{RunID: "run-1", Kind: workflow.RunKind, From: workflow.StatusPending, To: workflow.StatusRunning, TS: t0})
	emit("look", workflow.StatusPending, workflow.StatusRunning, 0, "", "")
	now = t0.Add(1500 * time.Millisecond)

	lines := v.render(now)
	want := []string{
		"taskx plan run run-1  running  1.5s",
		"⠋ look   research        running      1.5s",
		"· build  implementation  pending",
		"· check  review          pending",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("while running:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}

	emit("look", workflow.StatusRunning, workflow.StatusFailed, 2*time.Second, `step kind "subagent" is not available`, "")
	emit("build", workflow.StatusPending, workflow.StatusSkipped, 2*time.Second, "", "dependency look failed")
	now = t0.Add(5 * time.Second)
	lines = v.render(now)
	if got := lines[1]; got != `✗ look   research        failed       2.0s  step kind "subagent" is not available` {
		t.Errorf("a failed step shows %q", got)
	}
	if got := lines[2]; got != "↷ build  implementation  skipped            dependency look failed" {
		t.Errorf("a skipped step shows %q", got)
	}
}

func TestTheViewRedrawsInPlace(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	now := time.Now()
	v := testView(&out, &now)
	v.redraw()
	if strings.Contains(out.String(), "\x1b[4A") {
		t.Fatalf("the first frame moved the cursor up: %q", out.String())
	}
	out.Reset()
	v.Emit(workflow.Event{StepID: "look", From: workflow.StatusPending, To: workflow.StatusRunning, TS: now})
	frame := out.String()
	if !strings.HasPrefix(frame, "\x1b[4A") || strings.Count(frame, "\r\x1b[2K") != 4 {
		t.Fatalf("a redraw should go up the 4 lines drawn and rewrite each: %q", frame)
	}
}

func TestTheViewCutsLinesToTheTerminalWidth(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	now := time.Now()
	v := testView(&out, &now)
	v.width = func() int { return 20 }
	v.Emit(workflow.Event{StepID: "look", From: workflow.StatusRunning, To: workflow.StatusFailed, Error: strings.Repeat("long error ", 10), TS: now})
	for _, line := range strings.Split(out.String(), "\n") {
		line = strings.TrimPrefix(line, "\r\x1b[2K")
		if n := len([]rune(line)); n > 20 && !strings.HasPrefix(line, "\x1b[") {
			t.Errorf("line of %d columns on a terminal of 20: %q", n, line)
		}
	}
}

func TestTheViewStopsItsSpinnerAndShowsTheCursor(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	now := time.Now()
	v := testView(&out, &now)
	v.Start()
	v.Stop()
	s := out.String()
	if !strings.HasPrefix(s, "\x1b[?25l") || !strings.HasSuffix(s, "\x1b[?25h") {
		t.Fatalf("the view should hide the cursor and show it again: %q", s)
	}
}
