package workflow

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The graph export: a set of steps drawn as Graphviz DOT or as a Mermaid
// flowchart, for a person to paste into a renderer. Nodes are the steps,
// labelled with their id and role (a plan step) or kind (any other step);
// edges run from a dependency to the step that needs it. Both outputs are
// deterministic: nodes sorted by id, edges by their ends.
//
// dominikbraun/graph's draw.DOT is not used: it walks Go maps, so its
// output changes from run to run, and it does not escape quotes in ids.

// exportGraph is the sorted form both writers print.
type exportGraph struct {
	nodes []exportNode
	edges [][2]int // indices into nodes: dependency, dependent
}

type exportNode struct {
	id    string
	label string // the role or the kind
}

// newExportGraph sorts the steps and resolves their dependencies. An id
// given twice, or a dependency that is not among the steps, is refused.
func newExportGraph(steps []Step) (*exportGraph, error) {
	g := &exportGraph{nodes: make([]exportNode, len(steps))}
	for i, s := range steps {
		g.nodes[i] = exportNode{id: string(s.ID), label: StepLabel(s)}
	}
	slices.SortFunc(g.nodes, func(a, b exportNode) int { return strings.Compare(a.id, b.id) })
	index := make(map[string]int, len(g.nodes))
	for i, n := range g.nodes {
		if _, dup := index[n.id]; dup {
			return nil, fmt.Errorf("graph export: step %q appears twice", n.id)
		}
		index[n.id] = i
	}
	for _, s := range steps {
		to := index[string(s.ID)]
		for _, d := range s.Deps {
			from, ok := index[string(d)]
			if !ok {
				return nil, fmt.Errorf("graph export: step %q depends on %q, which is not among the steps", s.ID, d)
			}
			g.edges = append(g.edges, [2]int{from, to})
		}
	}
	slices.SortFunc(g.edges, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	g.edges = slices.Compact(g.edges)
	return g, nil
}

// StepLabel is what a picture of a step shows beside its id: a plan step's
// role, or the step's kind.
func StepLabel(s Step) string {
	switch in := s.Input.(type) {
	case PlanStep:
		if in.Role != "" {
			return string(in.Role)
		}
	case *PlanStep:
		if in != nil && in.Role != "" {
			return string(in.Role)
		}
	}
	return string(s.Kind)
}

// WriteDOT writes the steps as a Graphviz digraph: `dot -Tsvg` draws it.
func WriteDOT(w io.Writer, steps []Step) error {
	g, err := newExportGraph(steps)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("digraph workflow {\n")
	bw.WriteString("\trankdir=LR;\n")
	bw.WriteString("\tnode [shape=box, style=rounded, fontname=\"Helvetica\"];\n")
	if len(g.nodes) > 0 {
		bw.WriteString("\n")
	}
	for _, n := range g.nodes {
		fmt.Fprintf(bw, "\t%s [label=%s];\n", dotQuote(n.id), dotQuote(n.id+"\n"+n.label))
	}
	if len(g.edges) > 0 {
		bw.WriteString("\n")
	}
	for _, e := range g.edges {
		fmt.Fprintf(bw, "\t%s -> %s;\n", dotQuote(g.nodes[e[0]].id), dotQuote(g.nodes[e[1]].id))
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

// dotQuote makes a DOT quoted string. Inside one, \" is a quote, \\ a
// backslash and \n a centred line break.
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", "", "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// WriteMermaid writes the steps as a Mermaid flowchart, for mermaid.live or
// a fenced mermaid block in Markdown. Node names are generated (s0, s1, ...
// in id order) because Mermaid reserves words such as "end" and some
// punctuation; the ids are in the labels.
func WriteMermaid(w io.Writer, steps []Step) error {
	g, err := newExportGraph(steps)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("flowchart LR\n")
	for i, n := range g.nodes {
		fmt.Fprintf(bw, "    s%d[\"%s<br/>%s\"]\n", i, mermaidEscape(n.id), mermaidEscape(n.label))
	}
	for _, e := range g.edges {
		fmt.Fprintf(bw, "    s%d --> s%d\n", e[0], e[1])
	}
	return bw.Flush()
}

// mermaidEscape writes the characters that would end or bend a quoted
// Mermaid label as its entity codes.
func mermaidEscape(s string) string {
	r := strings.NewReplacer("#", "#35;", `"`, "#quot;", "<", "#lt;", ">", "#gt;", "&", "#amp;", "\r", "", "\n", "<br/>")
	return r.Replace(s)
}
