package dag

import (
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// Wave says what happened to a run since the previous Schedule call, so
// that the call orders its step exactly as the reference's promises do.
//
// The reference starts every node at once, in one synchronous pass, and
// each then waits on promises: for its inputs (Promise.all), for its
// handler, and for its checkpoint store after a save. What it does
// within a step (which nodes it evaluates before a failure stops the
// run, and so which handlers it calls and which values it saves, and
// which of two failures it reports) follows the order of the microtask
// queue. ScheduleWave replays that queue: every node's reactions
// registered in the order the reference registers them, a save costing
// two turns of the queue before its consumers hear of the value.
type Wave struct {
	// Settled lists the task nodes whose results arrived since the
	// previous call, in the order they arrived (all within one turn of
	// the event loop). Empty for the run's first call, whose known
	// values are those it was seeded with.
	Settled []string
	// Restored names the nodes whose values the run was seeded with
	// (Restore's keys): the reference hands their values out without
	// evaluating them, so its first pass does not walk through them to
	// their inputs.
	Restored map[string]bool
	// Refuse, when set, tells of a handler that refuses its argument at
	// once, such as one that first copies it as JSON: it returns the
	// message the handler fails with. It is asked with the argument the
	// reference would hand the handler, which holds the empty marker
	// where a query left one (value.Canonical then fails with the
	// reference's "a symbol is not a JSON value"). The reference then
	// fails the node one turn of the queue after the call, before the
	// work queued behind it, and the invocation is not listed.
	Refuse func(Invocation) (message string, refused bool)
	// FailsAtRead, when set, tells of a task whose result fails the run
	// as the reference reads it, such as a checkpointed task whose
	// handler returns at once a value the checkpoint refuses (JF2008):
	// it returns that failure, nil for a task whose result reads fine.
	// The reference reads a result its handler returned at once one
	// turn of the queue after the call, so the failure comes before the
	// work queued behind the call (an inline node further down another
	// branch), and after the work queued before it. The invocation is
	// listed: its handler was called.
	FailsAtRead func(Invocation) error
	// Marked holds known values as an earlier call computed them, with
	// the empty marker (an earlier Plan.Marked): they take the place of
	// their entries in values, and their consumers read the marker as
	// the reference's do. Only a runner that keeps them in memory has
	// them; a value stored as JSON has lost its marker.
	Marked map[string]any
}

// step is the state of one Schedule call.
type step struct {
	d     *DAG
	b     *query.Budget
	input any
	n     int
	known []bool
	vals  []any
	// held: the value may hold a *value.Object (see evaluate); nil
	// while none does
	held []bool
	// marked: the value may hold the reference's empty marker, which a
	// query left in an array or object it built (query.EvalMarked); nil
	// while none does. Consumers in this call read it as the empty
	// sequence, a checkpoint refuses it, and what leaves the call is
	// unmarked.
	marked []bool
	plan   Plan
	output any // the output node's value made plain, when computed here

	refuse   func(Invocation) (string, bool)
	refusals map[int]string // per refused task node: its handler's message
	// failsAtRead is Wave.FailsAtRead; readFailures the failure of each
	// task node whose result fails as it is read
	failsAtRead  func(Invocation) error
	readFailures map[int]error
	queue        []job
	waiting      []int // per node: inputs not yet delivered
	// the consumers to tell when node i resolves, one per edge, in
	// registration order: reactions[reactAt[i]:reactAt[i+1]]; nil when
	// no node waits on another
	reactions []int
	reactAt   []int
}

type jobKind uint8

const (
	// an input delivered to Promise.all: the consumer's count drops
	jobDeliver jobKind = iota
	// Promise.all settled: the node evaluates
	jobEvaluate
	// the store's save settled the race the node awaits
	jobSaved
	// the node's promise resolves with its value
	jobResolve
	// a task's handler settled: the node takes its result
	jobSettled
	// a task's handler refused its argument: the node fails
	jobRefused
	// a task's result was read and failed the run
	jobReadFailed
)

type job struct {
	kind jobKind
	node int
}

// run replays the microtask queue of one step.
func (st *step) run(running map[string]bool, w Wave) error {
	d := st.d
	st.refuse, st.failsAtRead = w.Refuse, w.FailsAtRead
	// every node evaluates, saves and resolves at most once, and each
	// edge delivers at most once: the queue never outgrows this
	st.queue = make([]job, 0, len(w.Settled)+3*st.n+d.edges)
	flags := make([]bool, 2*st.n)
	pending := flags[:st.n] // evaluated in this call, or waiting to be
	inFlight := flags[st.n:]
	for _, id := range w.Settled {
		if i, ok := d.index[id]; ok {
			inFlight[i] = true
			st.queue = append(st.queue, job{jobSettled, i})
		}
	}
	for i, nd := range d.nodes {
		pending[i] = !st.known[i] && !running[nd.ID]
	}
	st.waiting = make([]int, st.n)
	// reactions are registered as (source, consumer) pairs in order, then
	// grouped by source into one array, keeping that order
	var regs []reaction
	first := len(w.Settled) == 0
	for _, i := range d.passOrder(w.Restored) {
		if !pending[i] {
			continue
		}
		nd := d.nodes[i]
		if len(nd.inbound) == 0 {
			// Promise.all([]) is settled at once
			st.queue = append(st.queue, job{jobEvaluate, i})
			continue
		}
		for _, e := range nd.inbound {
			switch {
			case st.known[e.from] && !inFlight[e.from] && first:
				// a settled promise's reaction is queued at once
				st.waiting[i]++
				st.queue = append(st.queue, job{jobDeliver, i})
			case st.known[e.from] && !inFlight[e.from]:
				// delivered in an earlier step
			default:
				st.waiting[i]++
				if regs == nil {
					regs = make([]reaction, 0, d.edges)
				}
				regs = append(regs, reaction{e.from, i})
			}
		}
		if st.waiting[i] == 0 {
			st.queue = append(st.queue, job{jobEvaluate, i})
		}
	}
	st.group(regs)
	for k := 0; k < len(st.queue); k++ {
		j := st.queue[k]
		switch j.kind {
		case jobDeliver:
			st.waiting[j.node]--
			if st.waiting[j.node] == 0 {
				st.queue = append(st.queue, job{jobEvaluate, j.node})
			}
		case jobEvaluate:
			if err := st.evaluate(j.node); err != nil {
				return err
			}
		case jobSaved:
			st.queue = append(st.queue, job{jobResolve, j.node})
		case jobResolve:
			st.resolve(j.node)
		case jobRefused:
			return d.TaskFailed(d.nodes[j.node].ID, st.refusals[j.node])
		case jobReadFailed:
			return st.readFailures[j.node]
		case jobSettled:
			if d.nodes[j.node].Checkpoint {
				st.queue = append(st.queue, job{jobSaved, j.node})
			} else {
				st.resolve(j.node)
			}
		}
	}
	return nil
}

// resolve settles node i's promise: its consumers' reactions are queued.
func (st *step) resolve(i int) {
	if st.reactAt == nil {
		return
	}
	for _, c := range st.reactions[st.reactAt[i]:st.reactAt[i+1]] {
		st.queue = append(st.queue, job{jobDeliver, c})
	}
}

// reaction is a consumer waiting on a source's promise.
type reaction struct{ from, to int }

// group lays regs out by source: the consumers of node i are
// reactions[reactAt[i]:reactAt[i+1]], in the order they registered.
func (st *step) group(regs []reaction) {
	if len(regs) == 0 {
		return
	}
	st.reactAt = make([]int, st.n+1)
	for _, r := range regs {
		st.reactAt[r.from+1]++
	}
	for i := 1; i <= st.n; i++ {
		st.reactAt[i] += st.reactAt[i-1]
	}
	st.reactions = make([]int, len(regs))
	next := make([]int, st.n)
	copy(next, st.reactAt[:st.n])
	for _, r := range regs {
		st.reactions[next[r.from]] = r.to
		next[r.from]++
	}
}

// evaluate computes node i once its inputs are delivered: an inline
// node's value (saved, when it declares a checkpoint, before its
// consumers hear of it), or a task's invocation.
func (st *step) evaluate(i int) error {
	d, nd := st.d, st.d.nodes[i]
	v, h, m, inv, err := d.evaluate(nd, st.input, st.vals, st.held, st.marked, st.b)
	if err != nil {
		return err
	}
	if inv != nil {
		if st.refuse != nil {
			given := *inv
			if given.given != nil {
				given.Arg = given.given
			}
			given.given = nil
			if msg, refused := st.refuse(given); refused {
				if st.refusals == nil {
					st.refusals = map[int]string{}
				}
				st.refusals[i] = msg
				st.queue = append(st.queue, job{jobRefused, i})
				return nil
			}
		}
		st.plan.Tasks = append(st.plan.Tasks, *inv)
		if st.failsAtRead != nil {
			if err := st.failsAtRead(*inv); err != nil {
				if st.readFailures == nil {
					st.readFailures = map[int]error{}
				}
				st.readFailures[i] = err
				st.queue = append(st.queue, job{jobReadFailed, i})
			}
		}
		return nil
	}
	if m {
		if st.marked == nil {
			st.marked = make([]bool, st.n)
		}
		st.marked[i] = true
	}
	plain := v
	if h {
		plain = value.Plain(v)
		if st.held == nil {
			st.held = make([]bool, st.n)
		}
		st.held[i] = true
	}
	if err := checkpointable(nd, plain); err != nil {
		return err
	}
	if st.marked != nil && st.marked[i] {
		if i == d.output {
			st.plan.given = plain
		}
		plain = query.Unmark(plain)
	}
	// consumers in this call read v as the reference's do, by reference
	// (objects built at run time in their order); what leaves the call
	// is plain
	st.known[i], st.vals[i] = true, v
	st.plan.Values = append(st.plan.Values, NodeValue{ID: nd.ID, Value: plain, Checkpoint: nd.Checkpoint})
	if i == d.output {
		st.output = plain
	}
	if nd.Checkpoint {
		st.queue = append(st.queue, job{jobSaved, i})
	} else {
		st.resolve(i)
	}
	return nil
}

// passOrder is the order in which the reference's first pass reaches
// each node's Promise.all: it asks for every node in document order, and
// a node first asks for its inbound sources in edge order, depth first,
// except a restored node, whose value it already holds.
func (d *DAG) passOrder(restored map[string]bool) []int {
	if len(restored) == 0 {
		return d.byRank
	}
	return d.postOrder(func(i int) bool { return restored[d.nodes[i].ID] })
}
