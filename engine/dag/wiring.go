package dag

import (
	"strconv"
	"strings"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// compileEdges validates each edge in document order and attaches it to its
// target's inbound list; a select compiles as soon as its edge is valid.
func (d *DAG) compileEdges(raw any) error {
	edges, ok := raw.([]any)
	if !ok {
		return fault.New(fault.JF0012, "the \"edges\" member must be an array of edge entries", "/edges")
	}
	for i, rawEdge := range edges {
		idx := strconv.Itoa(i)
		base := "/edges/" + idx
		e, ok := rawEdge.(map[string]any)
		if !ok {
			return fault.New(fault.JF0012, "edge "+idx+" must be an object", base)
		}
		from, ok := e["from"].(string)
		if !ok {
			return fault.New(fault.JF0012, "edge "+idx+" must carry a string \"from\"", base+"/from")
		}
		to, ok := e["to"].(string)
		if !ok {
			return fault.New(fault.JF0012, "edge "+idx+" must carry a string \"to\"", base+"/to")
		}
		rawPort, ported := e["port"]
		port, _ := rawPort.(string)
		if ported && port == "" {
			return fault.New(fault.JF0012, "edge "+idx+" has a \"port\" that is not a non-empty string", base+"/port")
		}
		src, ok := d.index[from]
		if !ok {
			return fault.New(fault.JF0013, "edge "+idx+" leaves the undeclared node '"+from+"'", base+"/from")
		}
		dst, ok := d.index[to]
		if !ok {
			return fault.New(fault.JF0013, "edge "+idx+" enters the undeclared node '"+to+"'", base+"/to")
		}
		if k := d.nodes[dst].Kind; k == KindInput || k == KindConst {
			return fault.New(fault.JF0015,
				"edge "+idx+" enters '"+to+"', but "+string(k)+" nodes accept no inbound edge", base+"/to")
		}
		if d.nodes[src].Kind == KindOutput {
			return fault.New(fault.JF0015, "edge "+idx+" leaves the output node '"+from+"'", base+"/from")
		}
		in := inEdge{from: src, port: port, ported: ported, index: i}
		if sel, has := e["select"]; has {
			var err error
			if in.sel, err = compileEmbedded(sel, base+"/select"); err != nil {
				return err
			}
		}
		d.nodes[dst].inbound = append(d.nodes[dst].inbound, in)
		d.edges++
	}
	return nil
}

// checkWiring enforces the inbound rules of §6.1, node by node in document
// order: consumers need an inbound edge, and fan-in must be fully and
// uniquely ported.
func (d *DAG) checkWiring() error {
	for _, n := range d.nodes {
		if len(n.inbound) == 0 && (n.Kind == KindQuery || n.Kind == KindJSLT || n.Kind == KindTask || n.Kind == KindOutput) {
			return fault.New(fault.JF0015, string(n.Kind)+" node '"+n.ID+"' has no inbound edge", n.Path)
		}
		anyPort := false
		for _, e := range n.inbound {
			anyPort = anyPort || e.ported
		}
		if len(n.inbound) <= 1 && !anyPort {
			continue
		}
		seen := map[string]bool{}
		for _, e := range n.inbound {
			idx := strconv.Itoa(e.index)
			if !e.ported {
				return fault.New(fault.JF0015,
					"edge "+idx+" into '"+n.ID+"' needs a \"port\": ported fan-in must be all-ported", "/edges/"+idx)
			}
			if seen[e.port] {
				return fault.New(fault.JF0015,
					"edge "+idx+" duplicates port '"+e.port+"' into '"+n.ID+"'", "/edges/"+idx+"/port")
			}
			seen[e.port] = true
		}
		n.ported = true
		names := make([]string, len(n.inbound))
		for i, e := range n.inbound {
			names[i] = e.port
		}
		n.portsSorted = value.InKeysOrder(names)
	}
	for i, n := range d.nodes {
		seen := map[int]bool{}
		for _, e := range n.inbound {
			if !seen[e.from] {
				seen[e.from] = true
				d.nodes[e.from].consumers = append(d.nodes[e.from].consumers, i)
			}
		}
	}
	return nil
}

// checkAcyclic proves the graph acyclic. On a cycle it names exactly the
// cyclic core, as the reference does: the nodes left over by Kahn's
// algorithm run forward (cycles plus what they feed) and backward (cycles
// plus what feeds them), intersected, listed in document order; the path
// is the first edge joining two of them.
func (d *DAG) checkAcyclic(edges []any) error {
	n := len(d.nodes)
	forward := make([][]int, n)  // producer -> consumers, with multiplicity
	backward := make([][]int, n) // consumer -> producers, with multiplicity
	inDeg := make([]int, n)
	outDeg := make([]int, n)
	for i, nd := range d.nodes {
		for _, e := range nd.inbound {
			forward[e.from] = append(forward[e.from], i)
			backward[i] = append(backward[i], e.from)
			inDeg[i]++
			outDeg[e.from]++
		}
	}
	fwd := kahnLeftover(inDeg, forward)
	if len(fwd) == 0 {
		return nil
	}
	bwd := kahnLeftover(outDeg, backward)
	cyclic := map[string]bool{}
	var names []string
	for i := range d.nodes {
		if fwd[i] && bwd[i] {
			cyclic[d.nodes[i].ID] = true
			names = append(names, d.nodes[i].ID)
		}
	}
	offender := -1
	for i, raw := range edges {
		e := raw.(map[string]any) // every edge was validated
		if cyclic[e["from"].(string)] && cyclic[e["to"].(string)] {
			offender = i
			break
		}
	}
	return fault.New(fault.JF0016, "the graph has a cycle among: "+strings.Join(names, ", "),
		"/edges/"+strconv.Itoa(offender))
}

// kahnLeftover removes every node whose degree drops to zero and returns the
// ones that remain; degree is consumed.
func kahnLeftover(degree []int, next [][]int) map[int]bool {
	var ready []int
	for i, deg := range degree {
		if deg == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		i := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		for _, j := range next[i] {
			degree[j]--
			if degree[j] == 0 {
				ready = append(ready, j)
			}
		}
	}
	left := map[int]bool{}
	for i, deg := range degree {
		if deg > 0 {
			left[i] = true
		}
	}
	return left
}

// rankNodes orders nodes as the reference starts evaluating them: it asks
// for every node in document order, and each node first asks for its
// inbound sources in edge order, so a node is ready to wait on its inputs
// in depth-first post-order. Nodes that become ready together run in this
// order.
func (d *DAG) rankNodes() {
	d.byRank = d.postOrder(nil)
	for rank, i := range d.byRank {
		d.nodes[i].rank = rank
	}
}

// postOrder walks every node in document order and, before each, its
// inbound sources in edge order, depth first, and lists them as it leaves
// them. A node skip holds is neither listed nor walked through.
func (d *DAG) postOrder(skip func(i int) bool) []int {
	done := make([]bool, len(d.nodes))
	order := make([]int, 0, len(d.nodes))
	type frame struct{ node, next int }
	var stack []frame
	for root := range d.nodes {
		if done[root] {
			continue
		}
		done[root] = true
		if skip != nil && skip(root) {
			continue
		}
		stack = append(stack[:0], frame{node: root})
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			inbound := d.nodes[top.node].inbound
			if top.next < len(inbound) {
				src := inbound[top.next].from
				top.next++
				if !done[src] {
					done[src] = true
					if skip == nil || !skip(src) {
						stack = append(stack, frame{node: src})
					}
				}
				continue
			}
			order = append(order, top.node)
			stack = stack[:len(stack)-1]
		}
	}
	return order
}
