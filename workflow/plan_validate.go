package workflow

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Check returns every violation of the schema in the plan, in document
// order, each with the step it concerns and its JSON path; nil when the
// plan is valid. Cycles are reported once, at the dependsOn entry that
// closes the first one found.
func (p *Plan) Check() []*InvalidInputError {
	var errs []*InvalidInputError
	switch n := len(p.Steps); {
	case n == 0:
		return append(errs, invalid("", "steps", "a plan needs 1 to %d steps, got none", MaxPlanSteps))
	case n > MaxPlanSteps:
		errs = append(errs, invalid("", "steps", "%d steps, at most %d", n, MaxPlanSteps))
	}

	first := make(map[string]int, len(p.Steps)) // id -> index of its first step
	for i, s := range p.Steps {
		if _, dup := first[s.ID]; !dup {
			first[s.ID] = i
		}
	}
	for i, s := range p.Steps {
		errs = append(errs, checkStep(p, i, s, first)...)
	}
	if len(errs) == 0 {
		if err := findCycle(p, first); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// checkStep checks one step's fields; first maps each id to the index of
// the first step that has it.
func checkStep(p *Plan, i int, s PlanStep, first map[string]int) []*InvalidInputError {
	var errs []*InvalidInputError
	at := fmt.Sprintf("steps[%d]", i)
	name := stepName(i, s.ID)
	stepID := s.ID
	if strings.TrimSpace(stepID) == "" {
		stepID = ""
	}
	add := func(field, format string, args ...any) {
		errs = append(errs, invalid(stepID, at+field, name+": "+format, args...))
	}

	switch {
	case strings.TrimSpace(s.ID) == "":
		add(".id", "id is required (letters, digits, '_', '.', '-'; at most %d characters)", MaxStepIDLength)
	case utf8.RuneCountInString(s.ID) > MaxStepIDLength:
		add(".id", "id has %d characters, at most %d", utf8.RuneCountInString(s.ID), MaxStepIDLength)
	case !validID(s.ID):
		add(".id", "id may hold only letters, digits, '_', '.' and '-'")
	case first[s.ID] != i:
		add(".id", "id is already used by steps[%d]", first[s.ID])
	}

	if strings.TrimSpace(string(s.Role)) == "" {
		add(".role", "role is required: one of %s", rolesText)
	} else if _, ok := ParseRole(string(s.Role)); !ok {
		add(".role", "role %q is not one of %s", s.Role, rolesText)
	}

	if strings.TrimSpace(s.Objective) == "" {
		add(".objective", "objective is required: what this step must achieve")
	}

	seen := make(map[string]bool, len(s.DependsOn))
	for j, d := range s.DependsOn {
		field := fmt.Sprintf(".dependsOn[%d]", j)
		_, exists := first[d]
		switch {
		case strings.TrimSpace(d) == "":
			add(field, "a dependsOn entry is empty; name the id of another step")
		case d == s.ID:
			add(field, "a step cannot depend on itself")
		case seen[d]:
			add(field, "dependsOn lists %q twice", d)
		case !exists:
			add(field, "dependsOn names %q, which is not a step of the plan (its steps are %s)", d, stepIDsText(p))
		}
		seen[d] = true
	}
	return errs
}

// stepName names a step in a message: by its id, or by its place when it
// has none.
func stepName(i int, id string) string {
	if strings.TrimSpace(id) == "" {
		return fmt.Sprintf("step %d (no id)", i+1)
	}
	return fmt.Sprintf("step %q", id)
}

// validID reports whether id holds only [A-Za-z0-9_.-].
func validID(id string) bool {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// stepIDsText lists the plan's ids for a message.
func stepIDsText(p *Plan) string {
	ids := make([]string, 0, len(p.Steps))
	for _, s := range p.Steps {
		if s.ID != "" {
			ids = append(ids, s.ID)
		}
	}
	if len(ids) == 0 {
		return "none with an id"
	}
	return strings.Join(ids, ", ")
}

// findCycle walks dependsOn depth first, in plan order, and reports the
// first cycle it meets at the dependsOn entry that closes it, naming every
// step on it. A static plan of at most 12 steps needs nothing faster; the
// scheduler checks its own DAG.
func findCycle(p *Plan, first map[string]int) *InvalidInputError {
	const (
		unvisited = iota
		onPath
		done
	)
	state := make([]int, len(p.Steps))
	var path []int // the steps being visited; each depends on the next
	var visit func(i int) *InvalidInputError
	visit = func(i int) *InvalidInputError {
		state[i] = onPath
		path = append(path, i)
		for k, d := range p.Steps[i].DependsOn {
			j, ok := first[d]
			if !ok || j == i {
				continue
			}
			switch state[j] {
			case onPath:
				return cycleError(p, i, k, path, j)
			case unvisited:
				if err := visit(j); err != nil {
					return err
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = done
		return nil
	}
	for i := range p.Steps {
		if state[i] == unvisited {
			if err := visit(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// cycleError reports that steps[i].dependsOn[k], naming steps[j], closes a
// cycle; path ends with i and holds j.
func cycleError(p *Plan, i, k int, path []int, j int) *InvalidInputError {
	start := 0
	for path[start] != j {
		start++
	}
	// path[start:] is j, ..., i, each depending on the next, and i depends
	// on j: tell it from i.
	loop := append([]int{i}, path[start:]...)
	var b strings.Builder
	for n, idx := range loop {
		switch n {
		case 0:
			fmt.Fprintf(&b, "%s", p.Steps[idx].ID)
		case 1:
			fmt.Fprintf(&b, " depends on %s", p.Steps[idx].ID)
		default:
			fmt.Fprintf(&b, ", which depends on %s", p.Steps[idx].ID)
		}
	}
	id := p.Steps[i].ID
	return invalid(id, fmt.Sprintf("steps[%d].dependsOn[%d]", i, k),
		"step %q: dependsOn makes a cycle: %s; a plan must have no cycles", id, b.String())
}
