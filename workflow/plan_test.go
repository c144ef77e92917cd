package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// step builds one plan step as JSON; extra holds more members, raw.
func step(id, role, objective string, extra ...string) string {
	members := []string{
		fmt.Sprintf(`"id":%q`, id),
		fmt.Sprintf(`"role":%q`, role),
		fmt.Sprintf(`"objective":%q`, objective),
	}
	return "{" + strings.Join(append(members, extra...), ",") + "}"
}

// plan builds a plan from steps given as JSON.
func plan(steps ...string) string {
	return `{"steps":[` + strings.Join(steps, ",") + `]}`
}

// allRoles must appear in every message about a role.
var allRoles = []string{"research", "implementation", "testing", "review", "documentation"}

func TestPlanValidationRules(t *testing.T) {
	t.Parallel()
	thirteen := make([]string, 13)
	for i := range thirteen {
		thirteen[i] = step(fmt.Sprintf("s%d", i), "research", "look")
	}
	cases := []struct {
		name  string
		input string
		step  string
		path  string
		says  []string
	}{
		{"a plan with no steps is refused", `{"steps":[]}`, "", "steps", []string{"1 to 12 steps", "got none"}},
		{"a plan without steps is refused", `{}`, "", "steps", []string{"1 to 12 steps"}},
		{"a plan of 13 steps is refused", plan(thirteen...), "", "steps", []string{"13 steps, at most 12"}},
		{"a step needs an id", plan(step("", "research", "look")), "", "steps[0].id", []string{"step 1 (no id)", "id is required"}},
		{"a blank id counts as none", plan(step("a", "research", "look"), step("  ", "research", "look")), "", "steps[1].id", []string{"step 2 (no id)", "id is required"}},
		{"an id of 65 characters is refused", plan(step(strings.Repeat("x", 65), "research", "look")), strings.Repeat("x", 65), "steps[0].id", []string{"65 characters, at most 64"}},
		{"an id with a space is refused", plan(step("a b", "research", "look")), "a b", "steps[0].id", []string{`step "a b"`, "only letters, digits, '_', '.' and '-'"}},
		{"an id with a slash is refused", plan(step("a/b", "research", "look")), "a/b", "steps[0].id", []string{"only letters, digits"}},
		{"an id with a non-ASCII letter is refused", plan(step("café", "research", "look")), "café", "steps[0].id", []string{"only letters, digits"}},
		{"an id used twice is refused at the second step", plan(step("a", "research", "look"), step("a", "review", "check")), "a", "steps[1].id", []string{`step "a"`, "already used by steps[0]"}},
		{"a step needs a role", plan(step("a", "", "look")), "a", "steps[0].role", append([]string{`step "a"`, "role is required"}, allRoles...)},
		{"an unknown role is refused naming the five roles", plan(step("a", "wizard", "look")), "a", "steps[0].role", append([]string{`step "a"`, `role "wizard" is not one of`}, allRoles...)},
		{"a step needs an objective", plan(step("a", "research", "")), "a", "steps[0].objective", []string{`step "a"`, "objective is required"}},
		{"a blank objective counts as none", plan(step("a", "research", " \n\t ")), "a", "steps[0].objective", []string{"objective is required"}},
		{"dependsOn must name a step of the plan", plan(step("a", "research", "look"), step("b", "code", "do", `"dependsOn":["a","zz"]`)), "b", "steps[1].dependsOn[1]", []string{`step "b"`, `"zz"`, "not a step of the plan", "its steps are a, b"}},
		{"a step cannot depend on itself", plan(step("a", "research", "look", `"dependsOn":["a"]`)), "a", "steps[0].dependsOn[0]", []string{`step "a"`, "cannot depend on itself"}},
		{"dependsOn cannot list a step twice", plan(step("a", "research", "look"), step("b", "code", "do", `"dependsOn":["a","a"]`)), "b", "steps[1].dependsOn[1]", []string{`step "b"`, `lists "a" twice`}},
		{"a dependsOn entry cannot be empty", plan(step("a", "research", "look"), step("b", "code", "do", `"dependsOn":[""]`)), "b", "steps[1].dependsOn[0]", []string{"entry is empty"}},
		{"a cycle of two steps is refused naming it", plan(step("a", "research", "look", `"dependsOn":["b"]`), step("b", "code", "do", `"dependsOn":["a"]`)), "b", "steps[1].dependsOn[0]", []string{`step "b"`, "cycle: b depends on a, which depends on b"}},
		{"a cycle of three steps is refused naming it", plan(step("a", "research", "look", `"dependsOn":["c"]`), step("b", "code", "do", `"dependsOn":["a"]`), step("c", "qa", "test", `"dependsOn":["b"]`)), "b", "steps[1].dependsOn[0]", []string{"cycle: b depends on a, which depends on c, which depends on b"}},
		{"a cycle below a valid root is found", plan(step("root", "research", "look"), step("x", "code", "do", `"dependsOn":["root","y"]`), step("y", "qa", "test", `"dependsOn":["x"]`)), "y", "steps[2].dependsOn[0]", []string{"cycle: y depends on x, which depends on y"}},
		{"an unknown field of a step is refused", plan(step("a", "research", "look", `"depends_on":["b"]`)), "a", "steps[0].depends_on", []string{`step "a"`, `unknown field "depends_on"`, "id, role, objective, context, dependsOn"}},
		{"an unknown field of the plan is refused", `{"steps":[` + step("a", "research", "look") + `],"parallel":2}`, "", "parallel", []string{`unknown field "parallel"`, "steps, merge"}},
		{"field names match case exactly", `{"Steps":[]}`, "", "Steps", []string{`unknown field "Steps"`}},
		{"a role must be a string", plan(`{"id":"a","role":3,"objective":"look"}`), "a", "steps[0].role", []string{`step "a"`, "role must be a string, got a number"}},
		{"dependsOn must be an array", plan(step("a", "research", "look", `"dependsOn":"b"`)), "a", "steps[0].dependsOn", []string{"dependsOn must be an array, got a string"}},
		{"a dependsOn entry must be a string", plan(step("a", "research", "look", `"dependsOn":[1]`)), "a", "steps[0].dependsOn[0]", []string{"dependsOn[0] must be a string, got a number"}},
		{"merge must be a boolean", `{"steps":[` + step("a", "research", "look") + `],"merge":"yes"}`, "", "merge", []string{"must be a boolean, got a string"}},
		{"a step must be an object", `{"steps":["a"]}`, "", "steps[0]", []string{"step 1 (no id)", "must be an object, got a string"}},
		{"a field given twice is refused", plan(`{"id":"a","role":"research","role":"review","objective":"look"}`), "a", "steps[0].role", []string{`field "role" appears twice`}},
		{"the plan must be an object", `[]`, "", "", []string{"the plan must be an object, got an array"}},
		{"the plan must be JSON", "{\n  \"steps\": [,]\n}", "", "", []string{"not valid JSON: line 2, column 13"}},
		{"an empty file is refused", " \n", "", "", []string{"the plan is empty"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParsePlan([]byte(c.input))
			var ie *InvalidInputError
			if !errors.As(err, &ie) {
				t.Fatalf("ParsePlan: %v (%T), want an *InvalidInputError", err, err)
			}
			if ie.Kind != "invalidInput" || ie.Step != c.step || ie.Path != c.path {
				t.Errorf("got kind %q step %q path %q, want invalidInput %q %q", ie.Kind, ie.Step, ie.Path, c.step, c.path)
			}
			for _, s := range c.says {
				if !strings.Contains(ie.Message, s) {
					t.Errorf("message %q does not say %q", ie.Message, s)
				}
			}
			if c.path != "" && !strings.HasPrefix(ie.Error(), c.path+": ") {
				t.Errorf("Error() %q does not start with the path", ie.Error())
			}
		})
	}
}

func TestCheckReportsEveryViolationInDocumentOrder(t *testing.T) {
	t.Parallel()
	p, err := DecodePlan([]byte(plan(
		step("a", "wizard", ""),
		step("a", "research", "look", `"dependsOn":["nope"]`),
	)))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range p.Check() {
		paths = append(paths, e.Path)
	}
	want := []string{"steps[0].role", "steps[0].objective", "steps[1].id", "steps[1].dependsOn[0]"}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("paths %q, want %q", paths, want)
	}
}

func TestCheckReportsNoCycleWhileOtherRulesFail(t *testing.T) {
	t.Parallel()
	// A cycle through an unknown role is still a cycle, but the plan is
	// told about the role first; one fix at a time keeps messages short.
	p, err := DecodePlan([]byte(plan(
		step("a", "wizard", "look", `"dependsOn":["b"]`),
		step("b", "code", "do", `"dependsOn":["a"]`),
	)))
	if err != nil {
		t.Fatal(err)
	}
	errs := p.Check()
	if len(errs) != 1 || errs[0].Path != "steps[0].role" {
		t.Fatalf("got %v, want only the role error", errs)
	}
}

func TestValidPlansPass(t *testing.T) {
	t.Parallel()
	for name, input := range map[string]string{
		"one step": plan(step("a", "research", "look")),
		"twelve steps": plan(func() []string {
			s := make([]string, 12)
			for i := range s {
				s[i] = step(fmt.Sprintf("s%d", i), "research", "look")
			}
			return s
		}()...),
		"a diamond":           plan(step("a", "research", "look"), step("b", "code", "do", `"dependsOn":["a"]`), step("c", "docs", "write", `"dependsOn":["a"]`), step("d", "review", "check", `"dependsOn":["c","b"]`)),
		"an id of 64":         plan(step(strings.Repeat("x", 64), "research", "look")),
		"ids with . _ -":      plan(step("a.b_c-D9", "research", "look")),
		"context and merge":   `{"steps":[` + step("a", "research", "look", `"context":"see x.go"`) + `],"merge":false}`,
		"null optional parts": `{"steps":[` + step("a", "research", "look", `"context":null,"dependsOn":null`) + `],"merge":null}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := ParsePlan([]byte(input)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRoleAliases(t *testing.T) {
	t.Parallel()
	cases := map[Role][]string{
		RoleResearch:       {"research", "Research", "RESEARCH", " research ", "researcher", "investigate", "explore", "explorer", "analyst"},
		RoleImplementation: {"implementation", "Implementation", "implement", "code", "Code", "coding", "coder", "developer", "dev", "engineer", "build"},
		RoleTesting:        {"testing", "test", "tests", "Tests", "tester", "qa", "QA"},
		RoleReview:         {"review", "reviewer", "Reviewer", "code-review", "code review", "Code_Review", "critic"},
		RoleDocumentation:  {"documentation", "docs", "Docs", "doc", "documenter", "writer", "technical writer"},
	}
	for want, aliases := range cases {
		for _, a := range aliases {
			t.Run(fmt.Sprintf("%q means %s", a, want), func(t *testing.T) {
				t.Parallel()
				if got, ok := ParseRole(a); !ok || got != want {
					t.Fatalf("ParseRole(%q) = %q, %v", a, got, ok)
				}
			})
		}
	}
	for _, bad := range []string{"", "wizard", "lead", "research team", "codes"} {
		t.Run(fmt.Sprintf("%q is no role", bad), func(t *testing.T) {
			t.Parallel()
			if got, ok := ParseRole(bad); ok {
				t.Fatalf("ParseRole(%q) = %q", bad, got)
			}
		})
	}
}

func TestParsePlanGivesRolesInCanonicalForm(t *testing.T) {
	t.Parallel()
	p, err := ParsePlan([]byte(plan(step("a", "Researcher", "look"), step("b", "QA", "test", `"dependsOn":["a"]`))))
	if err != nil {
		t.Fatal(err)
	}
	if p.Steps[0].Role != RoleResearch || p.Steps[1].Role != RoleTesting {
		t.Fatalf("roles %q, %q", p.Steps[0].Role, p.Steps[1].Role)
	}
}

func TestMergeDefaultsToTrue(t *testing.T) {
	t.Parallel()
	for input, want := range map[string]bool{
		plan(step("a", "research", "look")):                               true,
		`{"steps":[` + step("a", "research", "look") + `],"merge":true}`:  true,
		`{"steps":[` + step("a", "research", "look") + `],"merge":false}`: false,
	} {
		p, err := ParsePlan([]byte(input))
		if err != nil {
			t.Fatal(err)
		}
		if p.WantsMerge() != want {
			t.Errorf("%s: WantsMerge() = %v", input, !want)
		}
	}
}

func TestWritingRoles(t *testing.T) {
	t.Parallel()
	for _, r := range Roles {
		want := r == RoleImplementation || r == RoleTesting || r == RoleDocumentation
		if r.Writes() != want {
			t.Errorf("%s.Writes() = %v", r, !want)
		}
	}
}

func TestCompileMakesOneSubagentStepPerPlanStep(t *testing.T) {
	t.Parallel()
	p, err := DecodePlan([]byte(plan(
		step("look", "Research", "look around", `"context":"see x.go"`),
		step("do", "code", "do it", `"dependsOn":["look"]`),
		step("check", "reviewer", "check it", `"dependsOn":["do","look"]`),
	)))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{
		{ID: "look", Kind: KindSubagent, Input: PlanStep{ID: "look", Role: RoleResearch, Objective: "look around", Context: "see x.go"}},
		{ID: "do", Kind: KindSubagent, Deps: []StepID{"look"}, Input: PlanStep{ID: "do", Role: RoleImplementation, Objective: "do it", DependsOn: []string{"look"}}},
		{ID: "check", Kind: KindSubagent, Deps: []StepID{"do", "look"}, Input: PlanStep{ID: "check", Role: RoleReview, Objective: "check it", DependsOn: []string{"do", "look"}}},
	}
	if !reflect.DeepEqual(steps, want) {
		t.Fatalf("Compile:\n got %+v\nwant %+v", steps, want)
	}
	if p.Steps[1].Role != "code" {
		t.Errorf("Compile changed the plan it was given: role %q", p.Steps[1].Role)
	}
	if KindSubagent != "subagent" {
		t.Errorf("KindSubagent is %q", KindSubagent)
	}
}

func TestCompileRefusesAnInvalidPlan(t *testing.T) {
	t.Parallel()
	p := &Plan{Steps: []PlanStep{{ID: "a", Role: "wizard", Objective: "x"}}}
	_, err := Compile(p)
	var ie *InvalidInputError
	if !errors.As(err, &ie) || ie.Path != "steps[0].role" {
		t.Fatalf("Compile: %v", err)
	}
}

func TestInvalidInputErrorOnTheWire(t *testing.T) {
	t.Parallel()
	_, err := ParsePlan([]byte(plan(step("a", "wizard", "look"))))
	b, jerr := json.Marshal(err)
	if jerr != nil {
		t.Fatal(jerr)
	}
	var got map[string]string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["kind"] != "invalidInput" || got["step"] != "a" || got["path"] != "steps[0].role" || !strings.Contains(got["message"], "wizard") {
		t.Fatalf("encoded as %s", b)
	}
}
