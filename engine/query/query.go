// Package query compiles and evaluates Jaren JSON Query documents
// (QUERY-FORMAT.md of @jarenjs/json 0.91.4): compile once, evaluate many.
// Compile errors carry JQ0xxx codes and the JSON Pointer of the offending
// phrase; evaluation errors carry JQ2xxx codes.
package query

import "github.com/jetflow/jetflow/engine/fault"

// Options tune compilation. The zero value is the reference's default.
type Options struct {
	// Limits bound evaluation (steps, sequence items, result items, depth).
	// Zero fields take the reference's defaults.
	Limits Limits
}

// Limits bound what one evaluation may spend.
type Limits struct {
	SequenceItems int
	ResultItems   int
	Steps         int
	Depth         int
}

// Query is a compiled query document, safe for concurrent use.
type Query struct {
	doc any
	// implementation fields are added by the compiler
}

// Compile compiles a query document. A bare string is an RFC 9535 path or a
// literal, per the format.
func Compile(doc any, opts Options) (*Query, error) {
	return nil, fault.New(fault.JQ0002, "the query engine is not implemented yet", "")
}

// Eval applies the query to data. It returns the result as the reference's
// query(data) does: ok=false for the empty sequence (JavaScript undefined),
// the item itself for a singleton, a []any of the items for a longer
// sequence. ext binds external variables by name.
func (q *Query) Eval(data any, ext map[string]any) (result any, ok bool, err error) {
	return nil, false, fault.New(fault.JQ0002, "the query engine is not implemented yet", "")
}

// Items returns the result sequence as a slice (empty for the empty sequence).
func (q *Query) Items(data any, ext map[string]any) ([]any, error) {
	return nil, fault.New(fault.JQ0002, "the query engine is not implemented yet", "")
}

// EBV returns the effective boolean value of the result (QUERY-FORMAT §2.2),
// as the reference's query.ebv(data): JQ2003 for two or more items.
func (q *Query) EBV(data any, ext map[string]any) (bool, error) {
	return false, fault.New(fault.JQ0002, "the query engine is not implemented yet", "")
}

// Externals lists the external variable names in order of first appearance.
func (q *Query) Externals() []string { return nil }
