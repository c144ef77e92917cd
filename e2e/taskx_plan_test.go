package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// examplePlan is the plan shipped in examples/: two research roots, an
// implementation step on both, tests and docs on it, a review on those.
const examplePlan = "../examples/plan.json"

var (
	exampleRoots      = []string{"explore-client", "survey-limits"}
	exampleDependents = []string{"rate-limiter", "limiter-tests", "limiter-docs", "final-review"}
)

// taskxResult is what one taskx process did.
type taskxResult struct {
	stdout, stderr string
	code           int
}

// runTaskx runs the taskx binary to its end with the given environment
// added, bounded by waitLimit.
func runTaskx(t *testing.T, env []string, args ...string) taskxResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.taskx, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := taskxResult{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("taskx %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("taskx %s did not end within %s", strings.Join(args, " "), waitLimit)
	}
	return res
}

// writePlan writes a plan file in a test's temp dir.
func writePlan(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTaskxPlanValidateAcceptsTheExamplePlan(t *testing.T) {
	t.Parallel()
	r := runTaskx(t, nil, "plan", "validate", examplePlan)
	if r.code != 0 || !strings.Contains(r.stdout, "ok:") || !strings.Contains(r.stdout, "6 steps") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

func TestTaskxPlanValidateReportsEachFaultWithItsJSONPath(t *testing.T) {
	t.Parallel()
	path := writePlan(t, `{"steps": [
		{"id": "look", "role": "Research", "objective": "look around"},
		{"id": "build", "role": "wizard", "objective": "build it", "dependsOn": ["look"]},
		{"id": "check", "role": "qa", "objective": "", "dependsOn": ["ghost"]}
	]}`)
	r := runTaskx(t, nil, "plan", "validate", path)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		path + `: steps[1].role: step "build": role "wizard" is not one of research, implementation, testing, review, documentation`,
		path + `: steps[2].objective: step "check"`,
		path + `: steps[2].dependsOn[0]: step "check": dependsOn names "ghost"`,
		"3 faults",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the output lacks %q:\n%s", want, r.stderr)
		}
	}
}

func TestTaskxPlanValidateNamesTheUnknownFieldsPath(t *testing.T) {
	t.Parallel()
	path := writePlan(t, `{"steps": [{"id": "a", "role": "code", "objective": "x", "depends_on": []}]}`)
	r := runTaskx(t, nil, "plan", "validate", path)
	if r.code != 1 || !strings.Contains(r.stderr, `steps[0].depends_on: step "a": unknown field "depends_on"`) {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
}

func TestTaskxPlanValidateReadsStandardInput(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(bins.taskx, "plan", "validate", "-")
	cmd.Stdin = strings.NewReader(`{"steps":[{"id":"a","role":"docs","objective":"write"}]}`)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok:") {
		t.Fatalf("err=%v\n%s", err, out)
	}
}

func TestTaskxPlanGraphDrawsDOTByDefault(t *testing.T) {
	t.Parallel()
	r := runTaskx(t, nil, "plan", "graph", examplePlan)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"digraph workflow {",
		`"explore-client" [label="explore-client\nresearch"];`,
		`"explore-client" -> "rate-limiter";`,
		`"limiter-docs" -> "final-review";`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("DOT lacks %s:\n%s", want, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, " -> "); n != 6 {
		t.Errorf("%d edges, want 6:\n%s", n, r.stdout)
	}
	if dot, err := exec.LookPath("dot"); err == nil { // Graphviz, when installed, must accept it
		cmd := exec.Command(dot, "-Tsvg")
		cmd.Stdin = strings.NewReader(r.stdout)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("Graphviz refused the output: %v\n%s", err, out)
		}
	}
}

func TestTaskxPlanGraphDrawsMermaid(t *testing.T) {
	t.Parallel()
	r := runTaskx(t, nil, "plan", "graph", examplePlan, "--format", "mermaid")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "flowchart LR\n") || !strings.Contains(r.stdout, `["explore-client<br/>research"]`) {
		t.Errorf("not a Mermaid flowchart of the plan:\n%s", r.stdout)
	}
	if n := strings.Count(r.stdout, " --> "); n != 6 {
		t.Errorf("%d edges, want 6:\n%s", n, r.stdout)
	}
}

func TestTaskxPlanGraphRefusesAnUnknownFormat(t *testing.T) {
	t.Parallel()
	r := runTaskx(t, nil, "plan", "graph", "--format", "png", examplePlan)
	if r.code != 2 || !strings.Contains(r.stderr, "dot or mermaid") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}

// event is a transition as taskx prints it, one JSON object a line.
type event struct {
	RunID   string    `json:"runId"`
	StepID  string    `json:"stepId"`
	Kind    string    `json:"kind"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Attempt int       `json:"attempt"`
	Error   string    `json:"error"`
	Reason  string    `json:"reason"`
	Seq     uint64    `json:"seq"`
	TS      time.Time `json:"ts"`
}

// parseEvents decodes JSON lines; every line must be an event.
func parseEvents(t *testing.T, text string) []event {
	t.Helper()
	var events []event
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		var e event
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("line %q is not an event: %v", sc.Text(), err)
		}
		events = append(events, e)
	}
	return events
}

// checkPlanRunEvents checks the events of a run of the example plan with
// no subagent runner: the roots fail for want of the subagent kind, the
// rest are skipped, the run fails, and seq counts from 0 without gaps.
func checkPlanRunEvents(t *testing.T, events []event) {
	t.Helper()
	if len(events) == 0 {
		t.Fatal("no events")
	}
	runID := events[0].RunID
	final := map[string]event{}
	var runEnd *event
	for i, e := range events {
		if e.Seq != uint64(i) {
			t.Fatalf("event %d has seq %d: seq must count from 0 without gaps", i, e.Seq)
		}
		if e.RunID != runID || runID == "" {
			t.Fatalf("event %d has runId %q, the first had %q", i, e.RunID, runID)
		}
		if e.StepID == "" {
			if e.Kind != "run" {
				t.Errorf("a run event has kind %q", e.Kind)
			}
			if e.To == "failed" {
				runEnd = &events[i]
			}
			continue
		}
		final[e.StepID] = e
	}
	for _, id := range exampleRoots {
		e := final[id]
		if e.To != "failed" || !strings.Contains(e.Error, "not available") || !strings.Contains(e.Error, "subagent") {
			t.Errorf("root step %s ended %+v, want failed saying the subagent kind is not available", id, e)
		}
	}
	for _, id := range exampleDependents {
		if e := final[id]; e.To != "skipped" || e.Reason == "" {
			t.Errorf("dependent step %s ended %+v, want skipped with a reason", id, e)
		}
	}
	if runEnd == nil {
		t.Errorf("no run event to failed among %d events", len(events))
	}
}

func TestTaskxPlanRunWithJSONPrintsEventsAndFails(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	r := runTaskx(t, nil, "plan", "run", examplePlan, "--json", "--data-dir", dataDir, "--max-parallel", "2")
	if r.code == 0 {
		t.Fatalf("a run whose steps failed exited 0\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
	events := parseEvents(t, r.stdout)
	checkPlanRunEvents(t, events)
	if !strings.Contains(r.stderr, "failed") || !strings.Contains(r.stderr, "events.jsonl") {
		t.Errorf("stderr lacks the summary:\n%s", r.stderr)
	}

	logPath := filepath.Join(dataDir, "runs", events[0].RunID, "events.jsonl")
	logged, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatalf("the run log: %v", err)
	}
	fromLog := parseEvents(t, string(logged))
	if len(fromLog) != len(events) {
		t.Fatalf("the log has %d events, stdout %d", len(fromLog), len(events))
	}
	for i := range events {
		if !fromLog[i].TS.Equal(events[i].TS) {
			t.Fatalf("event %d: logged ts %v, printed %v", i, fromLog[i].TS, events[i].TS)
		}
		fromLog[i].TS, events[i].TS = time.Time{}, time.Time{}
		if fromLog[i] != events[i] {
			t.Fatalf("event %d: logged %+v, printed %+v", i, fromLog[i], events[i])
		}
	}
}

func TestTaskxPlanRunPrintsJSONLinesWhenStdoutIsNotATerminal(t *testing.T) {
	t.Parallel()
	stateHome := t.TempDir()
	r := runTaskx(t, []string{"XDG_STATE_HOME=" + stateHome}, "plan", "run", examplePlan)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\nstderr: %s", r.code, r.stderr)
	}
	events := parseEvents(t, r.stdout)
	checkPlanRunEvents(t, events)
	logPath := filepath.Join(stateHome, "task-x", "runs", events[0].RunID, "events.jsonl")
	if _, err := os.Stat(logPath); err != nil {
		t.Fatalf("no run log in the default data dir: %v", err)
	}
}

func TestTaskxPlanRunMarksARunLeftRunningAsInterrupted(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	oldDir := filepath.Join(dataDir, "runs", "killed-run")
	if err := os.MkdirAll(oldDir, 0o700); err != nil {
		t.Fatal(err)
	}
	started := `{"runId":"killed-run","kind":"run","from":"pending","to":"running","seq":0,"ts":"2025-01-02T03:04:05Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(oldDir, "events.jsonl"), []byte(started), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runTaskx(t, nil, "plan", "run", examplePlan, "--json", "--data-dir", dataDir)
	if r.code != 1 || !strings.Contains(r.stderr, "killed-run") {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
	logged, err := os.ReadFile(filepath.Join(oldDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	events := parseEvents(t, string(logged))
	if last := events[len(events)-1]; len(events) != 2 || last.To != "failed" || last.Reason != "interrupted" || last.Seq != 1 {
		t.Fatalf("the killed run's log: %+v", events)
	}
}

func TestTaskxPlanRunRefusesAnInvalidPlanBeforeRunning(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	path := writePlan(t, `{"steps": []}`)
	r := runTaskx(t, nil, "plan", "run", path, "--data-dir", dataDir)
	if r.code != 1 || !strings.Contains(r.stderr, "steps: a plan needs 1 to 12 steps") || r.stdout != "" {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "runs")); err == nil {
		t.Errorf("an invalid plan left a run log")
	}
}

func TestTaskxPlanRunRefusesMaxParallelAboveEight(t *testing.T) {
	t.Parallel()
	r := runTaskx(t, nil, "plan", "run", examplePlan, "--max-parallel", "9", "--data-dir", t.TempDir())
	if r.code != 2 || !strings.Contains(r.stderr, "1 to 8") {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
}
