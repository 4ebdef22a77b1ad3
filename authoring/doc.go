// Package authoring turns the engine's refusal of a workflow document into
// what its author needs: the line and column of the member at fault, the
// path in the author's document where the reference's path points into
// the lowered statechart or a DAG, and a hint (the nearest state, member
// or operator name). The engine's code, path and message pass through
// unchanged; this package only adds to them. It is pure: bytes in,
// values out.
package authoring
