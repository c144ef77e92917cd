package workflow

import (
	"fmt"
	"strings"
)

// KindSubagent is the kind of the steps a plan compiles to. Its runner is
// registered by the package that runs subagents; until then a plan's steps
// fail when they would run.
const KindSubagent Kind = "subagent"

// MaxPlanSteps bounds the number of steps of a plan.
const MaxPlanSteps = 12

// MaxStepIDLength bounds the length of a plan step's id.
const MaxStepIDLength = 64

// Plan is the input of run_plan (runtime-protocol.md, Team mode), and of
// `taskx plan`: a team of subagents, one per step, ordered by dependsOn.
type Plan struct {
	Steps []PlanStep `json:"steps"`
	// Merge says whether the patches of the writing steps (those whose role
	// Writes) are merged into the working tree, in dependency order, when
	// all steps have ended. Absent means true; false leaves each writing
	// step's changes in its worktree.
	Merge *bool `json:"merge,omitzero"`
}

// PlanStep is one step of a plan. A compiled Step carries it as its Input,
// with its role in canonical form.
type PlanStep struct {
	ID        string `json:"id"`
	Role      Role   `json:"role"`
	Objective string `json:"objective"`
	// Context is extra text for the subagent: files to look at,
	// constraints, what the lead already knows.
	Context   string   `json:"context,omitzero"`
	DependsOn []string `json:"dependsOn,omitzero"`
}

// WantsMerge reports whether the writing steps are merged at the end: the
// plan's merge field, true when absent.
func (p *Plan) WantsMerge() bool { return p.Merge == nil || *p.Merge }

// Role is what a plan step's subagent does.
type Role string

// The five roles.
const (
	RoleResearch       Role = "research"
	RoleImplementation Role = "implementation"
	RoleTesting        Role = "testing"
	RoleReview         Role = "review"
	RoleDocumentation  Role = "documentation"
)

// Roles lists the roles in the order the spec names them.
var Roles = []Role{RoleResearch, RoleImplementation, RoleTesting, RoleReview, RoleDocumentation}

// rolesText is the list an error gives when a role is wrong.
var rolesText = func() string {
	names := make([]string, len(Roles))
	for i, r := range Roles {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}()

// roleAliases maps what a model writes, lowercased with spaces and
// underscores as hyphens, to the role it means.
var roleAliases = map[string]Role{
	"research": RoleResearch, "researcher": RoleResearch, "investigate": RoleResearch,
	"investigation": RoleResearch, "investigator": RoleResearch, "explore": RoleResearch,
	"explorer": RoleResearch, "exploration": RoleResearch, "analysis": RoleResearch,
	"analyst": RoleResearch,

	"implementation": RoleImplementation, "implement": RoleImplementation,
	"implementer": RoleImplementation, "implementor": RoleImplementation, "code": RoleImplementation,
	"coding": RoleImplementation, "coder": RoleImplementation, "developer": RoleImplementation,
	"dev": RoleImplementation, "development": RoleImplementation, "engineer": RoleImplementation,
	"engineering": RoleImplementation, "build": RoleImplementation, "builder": RoleImplementation,

	"testing": RoleTesting, "test": RoleTesting, "tests": RoleTesting, "tester": RoleTesting,
	"qa": RoleTesting,

	"review": RoleReview, "reviewer": RoleReview, "code-review": RoleReview,
	"code-reviewer": RoleReview, "critic": RoleReview, "critique": RoleReview,

	"documentation": RoleDocumentation, "docs": RoleDocumentation, "doc": RoleDocumentation,
	"document": RoleDocumentation, "documenter": RoleDocumentation, "writer": RoleDocumentation,
	"technical-writer": RoleDocumentation, "tech-writer": RoleDocumentation,
}

// ParseRole maps a role as a model writes it ("Research", "code", "docs",
// "qa", "reviewer", ...) to its canonical form. Case, surrounding space,
// and the separator of two-word aliases ("code review", "code_review")
// do not matter.
func ParseRole(s string) (Role, bool) {
	key := strings.ToLower(strings.TrimSpace(s))
	key = strings.NewReplacer(" ", "-", "_", "-").Replace(key)
	r, ok := roleAliases[key]
	return r, ok
}

// Writes reports whether a step of this role changes files, and so runs in
// its own worktree and is merged at the end.
func (r Role) Writes() bool {
	switch r {
	case RoleImplementation, RoleTesting, RoleDocumentation:
		return true
	}
	return false
}

// InvalidInputError is a plan that breaks the schema. It is bad input from
// a model or a person, not a failure of the machinery: run_plan returns it
// to the model as a tool result it can act on, with the kind the spec
// names.
type InvalidInputError struct {
	Kind string `json:"kind"` // always "invalidInput"
	// Step is the id of the step at fault, empty when the fault is not in
	// one step (or the step has no usable id).
	Step string `json:"step,omitzero"`
	// Path is the JSON path of the fault, like steps[2].role; empty when
	// the input is not JSON at all.
	Path string `json:"path,omitzero"`
	// Message says what is wrong and what is allowed; it names the step.
	Message string `json:"message"`
}

// InvalidInputKind is the Kind of every InvalidInputError.
const InvalidInputKind = "invalidInput"

func (e *InvalidInputError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// invalid builds an InvalidInputError.
func invalid(step, path, format string, args ...any) *InvalidInputError {
	return &InvalidInputError{Kind: InvalidInputKind, Step: step, Path: path, Message: fmt.Sprintf(format, args...)}
}

// ParsePlan decodes a plan strictly (unknown fields, wrong types and
// duplicate fields are refused), checks it, and returns it with its roles
// in canonical form. Its error is the first *InvalidInputError; use
// DecodePlan and Check for all of them.
func ParsePlan(data []byte) (*Plan, error) {
	p, err := DecodePlan(data)
	if err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	for i := range p.Steps {
		p.Steps[i].Role, _ = ParseRole(string(p.Steps[i].Role))
	}
	return p, nil
}

// Validate returns the plan's first violation as an *InvalidInputError, or
// nil.
func (p *Plan) Validate() error {
	if errs := p.Check(); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// Compile turns a valid plan into a run's steps, in plan order: one step of
// kind "subagent" per plan step, its Deps from dependsOn, its Input the
// PlanStep with the role in canonical form. An invalid plan is refused
// with its first *InvalidInputError.
func Compile(p *Plan) ([]Step, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	steps := make([]Step, len(p.Steps))
	for i, ps := range p.Steps {
		ps.Role, _ = ParseRole(string(ps.Role))
		ps.DependsOn = append([]string(nil), ps.DependsOn...)
		var deps []StepID
		for _, d := range ps.DependsOn {
			deps = append(deps, StepID(d))
		}
		steps[i] = Step{ID: StepID(ps.ID), Kind: KindSubagent, Deps: deps, Input: ps}
	}
	return steps, nil
}
