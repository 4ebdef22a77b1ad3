package query

import (
	"strconv"

	"github.com/jetflow/jetflow/engine/fault"
)

// Budget is an account of evaluation work that several evaluations share,
// so that a limit bounds a whole unit of work (one reducer step of a run,
// with all its guards and queries) rather than each query in it. Within a
// budget, its Steps and Bytes replace the query's own Limits.Steps and
// Limits.Bytes; the output caps and the depth still apply per query.
//
// The zero Budget has the default limits. A Budget is not safe for
// concurrent use; evaluations charge it one after another.
type Budget struct {
	// Steps caps the expression-node evaluations of every evaluation
	// charged to the budget, together (JQ2009). Default
	// DefaultLimits.Steps.
	Steps int
	// Bytes caps the bytes of strings, arrays and objects they create,
	// together (JQ2009). It is an account, not a heap measurement: a
	// string counts its length, an array or sequence 16 bytes an item, an
	// object 48 bytes a member. Default DefaultLimits.Bytes.
	Bytes int

	steps, bytes int // spent so far
}

// Spent reports the steps and bytes charged so far.
func (b *Budget) Spent() (steps, bytes int) { return b.steps, b.bytes }

func (b *Budget) stepLimit() int {
	if b.Steps > 0 {
		return b.Steps
	}
	return DefaultLimits.Steps
}

func (b *Budget) byteLimit() int {
	if b.Bytes > 0 {
		return b.Bytes
	}
	return DefaultLimits.Bytes
}

// Evaluator evaluates a query, charging a budget (none when nil: the
// query's own limits then apply to each evaluation). It is a small value;
// making one allocates nothing.
type Evaluator struct {
	q    *Query
	b    *Budget
	mode evalMode
}

// Within returns the query's evaluator that charges b.
func (q *Query) Within(b *Budget) Evaluator { return Evaluator{q: q, b: b} }

// Holding returns the evaluator for data that may hold *value.Object (a
// task's with as EvalOrdered left it, read by a simulation's mock): the
// query walks those objects in their order and reads them as maps
// wherever it reads data, at the cost of converting the operands of
// order-blind operators.
func (e Evaluator) Holding() Evaluator { e.mode |= objectsIn; return e }

// Eval is Query.Eval charged to the budget.
func (e Evaluator) Eval(data any, ext map[string]any) (any, bool, error) {
	return e.q.evalAs(data, ext, e.b, e.mode)
}

// EvalOrdered is Eval whose result keeps the objects the query built at
// run time as *value.Object, in the member order the reference's objects
// have, rather than as maps. It is for a value that only leaves the engine
// as JSON text (value.JSText), such as a task's with: code that reads the
// result as data must use Eval, or value.Plain it.
func (e Evaluator) EvalOrdered(data any, ext map[string]any) (any, bool, error) {
	return e.q.evalAs(data, ext, e.b, e.mode|keepOrder)
}

// EvalMarked is EvalOrdered whose result keeps the reference's empty
// marker (value.Empty) where the evaluation left it in an array element,
// an object member or a result item, rather than as the reference's JSON
// text shows it (null, a member left out). marked says the result may
// hold one: a caller then reports it where the reference cannot store it
// (a checkpoint), may hand it to another evaluation, which reads it as
// the empty sequence, and makes it JSON with Unmark before it leaves.
func (e Evaluator) EvalMarked(data any, ext map[string]any) (res any, ok, marked bool, err error) {
	return e.q.evalMarked(data, ext, e.b, e.mode|keepOrder|keepMarks)
}

// Items is Query.Items charged to the budget.
func (e Evaluator) Items(data any, ext map[string]any) ([]any, error) {
	return e.q.items(data, ext, e.b, e.mode)
}

// EBV is Query.EBV charged to the budget.
func (e Evaluator) EBV(data any, ext map[string]any) (bool, error) {
	return e.q.ebv(data, ext, e.b, e.mode)
}

// The account of created values: rough figures of their Go size, enough
// to stop a query that builds without bound.
const (
	itemBytes   = 16 // an interface value in a slice
	sliceBytes  = 24 // a slice header
	memberBytes = 48 // a map entry: key, value and its share of buckets
	objectBytes = 48 // a map header
)

// alloc charges n bytes of strings, arrays or objects the evaluation
// created.
func (f *frame) alloc(n int, path string) {
	f.bytesLeft -= n
	if f.bytesLeft < 0 {
		f.overBytes(path)
	}
}

// allocItems charges a new array or sequence of n items.
func (f *frame) allocItems(n int, path string) { f.alloc(sliceBytes+n*itemBytes, path) }

// charge accounts for n items one node materialized: their memory, and
// the bulk work against the steps, so that one node cannot hide an
// unbounded loop.
func (f *frame) charge(n int, path string) {
	f.allocItems(n, path)
	if n <= 64 {
		return
	}
	f.stepsLeft -= n / 64
	if f.stepsLeft < 0 {
		f.overSteps(path)
	}
}

// chargeObject accounts for an object of n members.
func (f *frame) chargeObject(n int, path string) { f.alloc(objectBytes+n*memberBytes, path) }

func (f *frame) overSteps(path string) {
	if f.budget != nil {
		throw(fault.JQ2009, "the query exceeded the step budget ("+strconv.Itoa(f.budget.stepLimit())+
			" expression evaluations shared by every query of one run step)", path)
	}
	throw(fault.JQ2009, "the query exceeded limits.steps ("+strconv.Itoa(f.lim.Steps)+" expression evaluations)", path)
}

func (f *frame) overBytes(path string) {
	if f.budget != nil {
		throw(fault.JQ2009, "the query exceeded the byte budget ("+strconv.Itoa(f.budget.byteLimit())+
			" bytes of strings, arrays and objects shared by every query of one run step)", path)
	}
	throw(fault.JQ2009, "the query exceeded limits.bytes ("+strconv.Itoa(f.lim.Bytes)+
		" bytes of strings, arrays and objects)", path)
}
