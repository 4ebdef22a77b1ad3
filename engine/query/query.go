// Package query compiles and evaluates Jaren JSON Query documents
// (QUERY-FORMAT.md of @jarenjs/json 0.91.4): compile once, evaluate many.
// Compile errors carry JQ0xxx codes and the JSON Pointer of the offending
// phrase; evaluation errors carry JQ2xxx codes.
//
// A document compiles to a tree of closures over a frame of slots (slot 0
// is the input document, one slot per binding site and external), so
// evaluation does no interpretation, reflection or re-encoding.
package query

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// Options tune compilation. The zero value is the reference's default.
type Options struct {
	// Limits bound evaluation (steps, bytes, sequence items, result items,
	// depth).
	// Zero fields take jetflow's defaults (DefaultLimits).
	Limits Limits
	// Apply makes $apply an operator: set by the JSLT stylesheet compiler
	// for rule bodies only.
	Apply *ApplyOperator
	// Written is the member order of the document's objects as written
	// (value.DecodeWritten), for a document the reference reads as
	// written: its object constructors build members in that order and
	// its $for, $let, $some and $every bind in it. Nil: Keys order, the
	// order of a canonicalized document (workflows and DAGs).
	Written value.Written
}

// Limits bound what one evaluation may spend (QUERY-FORMAT §8.12). The
// reference sets none by default; jetflow always enforces these so that a
// hostile query is stopped rather than hung.
type Limits struct {
	// SequenceItems caps every FLWOR phrase result and fold accumulator
	// (JQ2009) and tightens the $range guard (JQ2007). Default 1,000,000.
	SequenceItems int
	// ResultItems caps the final result of Eval and Items (JQ2009).
	// Default 1,000,000.
	ResultItems int
	// Steps caps expression-node evaluations per call (JQ2009); bulk work
	// inside one node is charged one step per 64 items. A Budget replaces
	// it (and Bytes) for the evaluations it is shared by. Default
	// 10,000,000.
	Steps int
	// Depth caps expression nesting, checked at compile time (JQ0011).
	// Default 256.
	Depth int
	// Bytes caps the bytes of strings, arrays and objects one evaluation
	// creates (JQ2009), as Budget counts them. Default 64 MiB.
	Bytes int
}

// DefaultLimits are the limits a zero field takes.
var DefaultLimits = Limits{SequenceItems: 1000000, ResultItems: 1000000, Steps: 10000000, Depth: 256, Bytes: 64 << 20}

func (l Limits) withDefaults() Limits {
	if l.SequenceItems <= 0 {
		l.SequenceItems = DefaultLimits.SequenceItems
	}
	if l.ResultItems <= 0 {
		l.ResultItems = DefaultLimits.ResultItems
	}
	if l.Steps <= 0 {
		l.Steps = DefaultLimits.Steps
	}
	if l.Depth <= 0 {
		l.Depth = DefaultLimits.Depth
	}
	if l.Bytes <= 0 {
		l.Bytes = DefaultLimits.Bytes
	}
	return l
}

// Query is a compiled query document, safe for concurrent use.
type Query struct {
	doc       any
	root      getter
	frameSize int
	externals []string
	extSlots  []int
	lim       Limits
	// keep: evaluations build order-keeping objects (see frame.keep)
	keep bool
}

// Compile compiles a query document. A bare string is an RFC 9535 path or a
// literal, per the format.
func Compile(doc any, opts Options) (q *Query, err error) {
	lim := opts.Limits.withDefaults()
	c := &compiler{
		nextSlot: 1, extSlots: map[string]int{}, lim: lim, hardDepth: lim.Depth * 4, apply: opts.Apply,
		written: opts.Written,
	}
	defer func() {
		if r := recover(); r != nil {
			ce, ok := r.(compileError)
			if !ok {
				panic(r)
			}
			q, err = nil, ce.err
		}
	}()
	expr, rootPath := doc, ""
	if obj, ok := doc.(map[string]any); ok && (has(obj, "$query") || has(obj, "$expr")) {
		allDollar := true
		for k := range obj {
			if len(k) == 0 || k[0] != '$' {
				allDollar = false
			}
		}
		if allDollar {
			if v, ok := obj["$query"]; ok && v != "0.1" {
				fail(fault.JQ0006, "unknown query format version "+jsonText(v), "/$query")
			}
			if !has(obj, "$query") || !has(obj, "$expr") || len(obj) != 2 {
				fail(fault.JQ0003, "the version envelope requires exactly the keys '$query' and '$expr'", "")
			}
			expr, rootPath = obj["$expr"], "/$expr"
		}
	}
	root := c.expr(expr, rootPath, nil, 1)
	if c.maxDepth > lim.Depth {
		fail(fault.JQ0011, "the query nests "+strconv.Itoa(c.maxDepth)+" expressions deep, more than limits.depth ("+
			strconv.Itoa(lim.Depth)+")", c.deepPath)
	}
	for _, check := range c.late {
		check()
	}
	q = &Query{doc: doc, root: root, frameSize: c.nextSlot, externals: c.extNames, lim: lim, keep: c.observes || opts.Apply != nil}
	for _, n := range c.extNames {
		q.extSlots = append(q.extSlots, c.extSlots[n])
	}
	return q, nil
}

// jsonText is v as the reference's JSON.stringify writes it (an object's
// index keys first), for messages.
func jsonText(v any) string {
	s, err := value.JSText(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return s
}

// evalMode says what an evaluation's data and result may hold.
type evalMode uint8

const (
	// keepOrder: the result keeps the *value.Objects the evaluation built
	// instead of making them maps
	keepOrder evalMode = 1 << iota
	// objectsIn: the data may hold *value.Objects
	objectsIn
	// keepMarks: the result keeps the reference's empty marker where the
	// evaluation left it (one.go) instead of being unmarked
	keepMarks
)

// evaluateAs runs the closure tree in a mode and recovers runtime
// faults. A non-nil budget replaces the step and byte limits, and is
// charged what the evaluation spent, whether it succeeded or not.
func (q *Query) evaluateAs(data any, ext map[string]any, b *Budget, mode evalMode) (v any, err error) {
	v, _, err = q.evaluateMarked(data, ext, b, mode)
	return v, err
}

// evaluateMarked is evaluateAs that says whether the evaluation left the
// empty marker in what it built: marked is true only in keepMarks mode,
// where the result then keeps it.
func (q *Query) evaluateMarked(data any, ext map[string]any, b *Budget, mode evalMode) (v any, marked bool, err error) {
	ordered := mode&keepOrder != 0
	f := q.newFrame(data, b, nil, func(name string) (any, bool) {
		x, ok := ext[name]
		return x, ok
	})
	f.keep = f.keep || ordered
	if mode&objectsIn != 0 {
		// as if the evaluation had built them: operands and the result
		// are made plain, and so is the root filters read
		f.built, f.holding = true, true
	}
	defer func() {
		if b != nil {
			b.steps, b.bytes = b.stepLimit()-f.stepsLeft, b.byteLimit()-f.bytesLeft
		}
		r := recover()
		// nothing an evaluation returns holds its frame: it can serve the
		// next one (a panic that is not ours leaves it to the collector)
		if _, ours := r.(runtimeError); r == nil || ours {
			*f = frame{}
			framePool.Put(f)
		}
		if r != nil {
			re, ok := r.(runtimeError)
			if !ok {
				panic(r)
			}
			v, marked, err = nil, false, re.err
		}
	}()
	v = q.root(f)
	if f.marked {
		if mode&keepMarks != 0 {
			marked = true
		} else {
			v = unmark(v)
		}
	}
	if f.built && !ordered {
		// the boundary: outside the evaluator every object is a map
		v = plainItems(v)
	}
	return v, marked, nil
}

// framePool recycles evaluation frames, so that a guard over a small
// query allocates nothing.
var framePool = sync.Pool{New: func() any { return new(frame) }}

func (q *Query) checkResult(n int) error {
	if n > q.lim.ResultItems {
		return fault.New(fault.JQ2009, "the query result has "+strconv.Itoa(n)+" items, more than limits.resultItems ("+
			strconv.Itoa(q.lim.ResultItems)+")", "")
	}
	return nil
}

// Eval applies the query to data. It returns the result as the reference's
// query(data) does: ok=false for the empty sequence (JavaScript undefined),
// the item itself for a singleton, a []any of the items for a longer
// sequence. ext binds external variables by name.
func (q *Query) Eval(data any, ext map[string]any) (result any, ok bool, err error) {
	return q.eval(data, ext, nil)
}

func (q *Query) eval(data any, ext map[string]any, b *Budget) (result any, ok bool, err error) {
	return q.evalAs(data, ext, b, 0)
}

func (q *Query) evalAs(data any, ext map[string]any, b *Budget, mode evalMode) (result any, ok bool, err error) {
	result, ok, _, err = q.evalMarked(data, ext, b, mode)
	return result, ok, err
}

func (q *Query) evalMarked(data any, ext map[string]any, b *Budget, mode evalMode) (result any, ok, marked bool, err error) {
	v, marked, err := q.evaluateMarked(data, ext, b, mode)
	if err != nil {
		return nil, false, false, err
	}
	switch x := v.(type) {
	case emptySeq:
		return nil, false, false, nil
	case *multi:
		if err := q.checkResult(x.len()); err != nil {
			return nil, false, false, err
		}
		return x.items(), true, marked, nil
	}
	return v, true, marked, nil
}

// Items returns the result sequence as a slice (empty for the empty sequence).
func (q *Query) Items(data any, ext map[string]any) ([]any, error) {
	return q.items(data, ext, nil, 0)
}

func (q *Query) items(data any, ext map[string]any, b *Budget, mode evalMode) ([]any, error) {
	v, err := q.evaluateAs(data, ext, b, mode)
	if err != nil {
		return nil, err
	}
	items := itemsOf(v)
	if err := q.checkResult(len(items)); err != nil {
		return nil, err
	}
	if items == nil {
		items = []any{}
	}
	return items, nil
}

// EBV returns the effective boolean value of the result (QUERY-FORMAT §2.2),
// as the reference's query.ebv(data): JQ2003 for two or more items.
func (q *Query) EBV(data any, ext map[string]any) (bool, error) {
	return q.ebv(data, ext, nil, 0)
}

func (q *Query) ebv(data any, ext map[string]any, b *Budget, mode evalMode) (res bool, err error) {
	v, err := q.evaluateAs(data, ext, b, mode)
	if err != nil {
		return false, err
	}
	defer func() {
		if r := recover(); r != nil {
			re, ok := r.(runtimeError)
			if !ok {
				panic(r)
			}
			res, err = false, re.err
		}
	}()
	return ebv(v, ""), nil
}

// Externals lists the external variable names in order of first appearance.
func (q *Query) Externals() []string { return append([]string(nil), q.externals...) }

// Doc returns the document the query was compiled from.
func (q *Query) Doc() any { return q.doc }

// newFrame takes a frame from the pool for one evaluation of q over data:
// the query's own limits, or what b has left; host h (nil for none); each
// external variable as external gives it, unbound when it does not.
func (q *Query) newFrame(data any, b *Budget, h Host, external func(string) (any, bool)) *frame {
	f := framePool.Get().(*frame)
	*f = frame{stepsLeft: q.lim.Steps, bytesLeft: q.lim.Bytes, lim: &q.lim, host: h, keep: q.keep}
	if b != nil {
		f.budget = b
		f.stepsLeft, f.bytesLeft = b.stepLimit()-b.steps, b.byteLimit()-b.bytes
	}
	if q.frameSize <= len(f.buf) {
		f.slots = f.buf[:q.frameSize]
	} else {
		f.slots = make([]any, q.frameSize)
	}
	f.slots[0] = data
	for i, name := range q.externals {
		if x, ok := external(name); ok {
			f.slots[q.extSlots[i]] = x
		} else {
			f.slots[q.extSlots[i]] = unboundT{}
		}
	}
	return f
}
