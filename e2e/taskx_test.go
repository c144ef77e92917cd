package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

func TestTaskxDoctorShowsAnInitializeRoundTrip(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(bins.taskx, "doctor").CombinedOutput()
	if err != nil {
		t.Fatalf("taskx doctor: %v\n%s", err, out)
	}
	for _, want := range []string{`"method":"initialize"`, `"name": "task-x-runtime"`, `"kind": "ollama"`, "exited with code 0"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("taskx doctor output lacks %q:\n%s", want, out)
		}
	}
}

func TestTaskxDoctorFailsClearlyWithoutARuntime(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(bins.taskx, "doctor", "--runtime", "/nonexistent/task-x-runtime").CombinedOutput()
	if err == nil {
		t.Fatalf("taskx doctor succeeded without a runtime:\n%s", out)
	}
	if !strings.Contains(string(out), "/nonexistent/task-x-runtime") {
		t.Fatalf("the error does not name the missing runtime:\n%s", out)
	}
}
