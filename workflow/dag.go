package workflow

// The DAG the coordinator owns: nodes in fixed-size chunks, so a node's
// address never moves while a runner holds its Step, the dependencies of
// every node as ranges of one shared slice, and the dependents of every
// node as linked lists in one shared edge pool, so adding a step allocates
// nothing per step beyond amortised growth. Only the coordinator touches
// it; a runner reads its own node's Step, which nobody writes after the
// node is made.

const (
	chunkBits = 10
	chunkSize = 1 << chunkBits
	noEdge    = -1
)

// node is one step of the run and its scheduling state. It is kept small
// (most nodes of a big run are waiting or done): what a step needs only
// while it runs is in its ticket and running state (worker.go).
type node struct {
	step Step

	idx   int32
	state stepState
	// cancelled: CancelStep reached the step. A running step then ends
	// cancelled whatever its runner returns; a pending one was skipped.
	cancelled bool
	// waiting counts the dependencies that have not succeeded yet; the
	// step is ready at zero.
	waiting  int32
	attempts int32
	// deps are dag.deps[depOff:depOff+depLen], by index.
	depOff, depLen int32
	// firstOut and lastOut delimit the list of dependents in dag.edges,
	// kept in the order the edges were added.
	firstOut, lastOut int32

	output any
	err    error
	reason string // why the step was skipped

	ticket *ticket // while the step runs
}

// edge is one entry of a dependents list: to depends on the list's owner.
type edge struct {
	to, next int32
}

type dag struct {
	chunks []*[chunkSize]node
	n      int32
	deps   []int32
	edges  []edge
}

// at returns the node with index i.
func (d *dag) at(i int32) *node { return &d.chunks[i>>chunkBits][i&(chunkSize-1)] }

// depsOf returns the indices of n's dependencies.
func (d *dag) depsOf(n *node) []int32 { return d.deps[n.depOff : n.depOff+n.depLen] }

// push appends a pending node for s, whose dependencies are deps.
func (d *dag) push(s *Step, deps []int32) {
	if int(d.n)>>chunkBits == len(d.chunks) {
		d.chunks = append(d.chunks, new([chunkSize]node))
	}
	n := d.at(d.n)
	n.step = *s
	n.idx = d.n
	n.depOff, n.depLen = int32(len(d.deps)), int32(len(deps))
	n.firstOut, n.lastOut = noEdge, noEdge
	d.deps = append(d.deps, deps...)
	d.n++
}

// link records that node to depends on node from.
func (d *dag) link(from *node, to int32) {
	e := int32(len(d.edges))
	d.edges = append(d.edges, edge{to: to, next: noEdge})
	if from.lastOut == noEdge {
		from.firstOut = e
	} else {
		d.edges[from.lastOut].next = e
	}
	from.lastOut = e
}
