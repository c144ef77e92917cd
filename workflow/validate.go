package workflow

import (
	"errors"
	"fmt"
	"slices"

	"github.com/dominikbraun/graph"
)

// Validate checks a static set of steps, such as a compiled plan, once:
// every id is non-empty and unique, every dependency names a step of the
// set, and no steps depend on each other in a cycle. The first fault is a
// *StepError (wrapping ErrEmptyID, ErrDuplicateID or ErrUnknownDependency)
// or a *CycleError that names the cycle.
//
// It builds the set as a github.com/dominikbraun/graph graph, which is
// fine for a plan; Start and Expand make the same checks without it, in
// time linear in the steps they add.
func Validate(steps []Step) error {
	g := graph.New(func(id StepID) StepID { return id }, graph.Directed())
	for i, s := range steps {
		if s.ID == "" {
			return &StepError{Index: i, Err: errEmptyID()}
		}
		if err := g.AddVertex(s.ID); errors.Is(err, graph.ErrVertexAlreadyExists) {
			return &StepError{Index: i, Step: s.ID, Err: errDuplicateID()}
		} else if err != nil {
			return fmt.Errorf("workflow: step %q: %w", s.ID, err)
		}
	}
	for i, s := range steps {
		for _, dep := range s.Deps {
			err := g.AddEdge(dep, s.ID)
			switch {
			case err == nil, errors.Is(err, graph.ErrEdgeAlreadyExists):
			case errors.Is(err, graph.ErrVertexNotFound):
				return &StepError{Index: i, Step: s.ID, Err: errUnknownDependency(dep)}
			default:
				return fmt.Errorf("workflow: step %q: %w", s.ID, err)
			}
		}
	}
	if cycle := graphCycle(g, steps); cycle != nil {
		return cycle
	}
	return nil
}

func errEmptyID() error { return fmt.Errorf("%w: every step needs an id", ErrEmptyID) }

func errDuplicateID() error {
	return fmt.Errorf("%w: ids must be unique within a run", ErrDuplicateID)
}

func errUnknownDependency(dep StepID) error {
	return fmt.Errorf("%w %q: no step of the run has that id", ErrUnknownDependency, dep)
}

// graphCycle returns a cycle of g, or nil when it has none. Of the
// strongly connected components that hold a cycle, it names the one with
// the step that comes first in steps, starting from that step, along the
// shortest way back to it (ties broken by the order of steps), so the
// same steps always give the same error.
func graphCycle(g graph.Graph[StepID, StepID], steps []Step) *CycleError {
	adj, err := g.AdjacencyMap()
	if err != nil {
		return nil
	}
	sccs, err := graph.StronglyConnectedComponents(g)
	if err != nil {
		return nil
	}
	pos := make(map[StepID]int, len(steps))
	for i, s := range steps {
		if _, ok := pos[s.ID]; !ok {
			pos[s.ID] = i
		}
	}
	start, comp := StepID(""), map[StepID]bool(nil)
	for _, c := range sccs {
		if len(c) == 1 {
			if _, self := adj[c[0]][c[0]]; !self {
				continue
			}
		}
		first := slices.MinFunc(c, func(a, b StepID) int { return pos[a] - pos[b] })
		if comp == nil || pos[first] < pos[start] {
			start, comp = first, make(map[StepID]bool, len(c))
			for _, id := range c {
				comp[id] = true
			}
		}
	}
	if comp == nil {
		return nil
	}
	// Breadth first from start, inside the component, until an edge
	// leads back to start.
	prev := map[StepID]StepID{}
	queue := []StepID{start}
	for len(queue) > 0 {
		at := queue[0]
		queue = queue[1:]
		next := make([]StepID, 0, len(adj[at]))
		for id := range adj[at] {
			if comp[id] {
				next = append(next, id)
			}
		}
		slices.SortFunc(next, func(a, b StepID) int { return pos[a] - pos[b] })
		for _, id := range next {
			if id == start {
				cycle := []StepID{start}
				for x := at; x != start; x = prev[x] {
					cycle = append(cycle, x)
				}
				slices.Reverse(cycle[1:])
				return &CycleError{Cycle: append(cycle, start)}
			}
			if _, seen := prev[id]; !seen {
				prev[id] = at
				queue = append(queue, id)
			}
		}
	}
	return nil // unreachable: a strongly connected component with an edge has a cycle
}

// batchCycle names a cycle among steps, counting only the edges between
// them; the run's existing steps cannot be part of one (see addSteps).
func batchCycle(steps []Step) *CycleError {
	g := graph.New(func(id StepID) StepID { return id }, graph.Directed())
	for _, s := range steps {
		_ = g.AddVertex(s.ID)
	}
	for _, s := range steps {
		for _, dep := range s.Deps {
			_ = g.AddEdge(dep, s.ID) // an existing step is no vertex here: skipped
		}
	}
	return graphCycle(g, steps)
}
