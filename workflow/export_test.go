package workflow

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update rewrites golden files: go test ./workflow/ -run Golden -update.
// It is the package's one such flag; other golden tests share it.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the output (run with -update to accept it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// fixtureSteps compiles testdata/plan.json, whose roles are aliases and
// whose ids include "end" (a Mermaid keyword), dots and underscores.
func fixtureSteps(t *testing.T) []Step {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePlan(data)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	return steps
}

func TestGoldenGraphOfTheFixturePlan(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file  string
		write func(io.Writer, []Step) error
	}{
		{"plan.dot", WriteDOT},
		{"plan.mmd", WriteMermaid},
	} {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := c.write(&b, fixtureSteps(t)); err != nil {
				t.Fatal(err)
			}
			golden(t, c.file, b.Bytes())
		})
	}
}

func TestGraphOutputDoesNotDependOnStepOrder(t *testing.T) {
	t.Parallel()
	steps := fixtureSteps(t)
	reversed := make([]Step, len(steps))
	for i, s := range steps {
		reversed[len(steps)-1-i] = s
	}
	for name, write := range map[string]func(io.Writer, []Step) error{"dot": WriteDOT, "mermaid": WriteMermaid} {
		var a, b bytes.Buffer
		if err := write(&a, steps); err != nil {
			t.Fatal(err)
		}
		if err := write(&b, reversed); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("%s output changes with the order of the steps:\n%s\n---\n%s", name, a.String(), b.String())
		}
	}
}

func TestGraphLabelsShowTheKindOfStepsThatAreNotPlanSteps(t *testing.T) {
	t.Parallel()
	steps := []Step{{ID: "turn-1", Kind: "model"}, {ID: "call-1", Kind: "tool", Deps: []StepID{"turn-1"}}}
	var b bytes.Buffer
	if err := WriteDOT(&b, steps); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"turn-1" [label="turn-1\nmodel"];`, `"call-1" [label="call-1\ntool"];`, `"turn-1" -> "call-1";`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("DOT lacks %s:\n%s", want, b.String())
		}
	}
}

func TestGraphEscapesQuotesAndMarkup(t *testing.T) {
	t.Parallel()
	steps := []Step{{ID: `say "hi" \ <b>#1</b>`, Kind: "tool"}}
	var dot, mmd bytes.Buffer
	if err := WriteDOT(&dot, steps); err != nil {
		t.Fatal(err)
	}
	if err := WriteMermaid(&mmd, steps); err != nil {
		t.Fatal(err)
	}
	if want := `"say \"hi\" \\ <b>#1</b>" [label="say \"hi\" \\ <b>#1</b>\ntool"];`; !strings.Contains(dot.String(), want) {
		t.Errorf("DOT lacks %s:\n%s", want, dot.String())
	}
	if want := `s0["say #quot;hi#quot; \ #lt;b#gt;#35;1#lt;/b#gt;<br/>tool"]`; !strings.Contains(mmd.String(), want) {
		t.Errorf("Mermaid lacks %s:\n%s", want, mmd.String())
	}
}

func TestGraphRefusesAnUnknownDependency(t *testing.T) {
	t.Parallel()
	steps := []Step{{ID: "a", Kind: "tool", Deps: []StepID{"ghost"}}}
	if err := WriteDOT(io.Discard, steps); err == nil || !strings.Contains(err.Error(), `"ghost"`) {
		t.Fatalf("WriteDOT: %v", err)
	}
	if err := WriteMermaid(io.Discard, steps); err == nil || !strings.Contains(err.Error(), `"ghost"`) {
		t.Fatalf("WriteMermaid: %v", err)
	}
}
