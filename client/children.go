package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// MaxTreeDepth is how many levels of child runs Tree reads below a run.
const MaxTreeDepth = 8

// Child statuses Tree gives a child whose record it cannot show.
const (
	// ChildStarting: the child's start is published, no dispatcher has
	// taken it up yet.
	ChildStarting = "starting"
	// ChildRemoved: retention removed the child's record (after its
	// parent settled: a child is kept until then).
	ChildRemoved = "removed"
)

// ChildNode is one child run in a run's tree (docs/CHILDREN.md).
type ChildNode struct {
	wire.Child
	// Status is the child's status, or ChildStarting or ChildRemoved.
	Status string `json:"status"`
	// RemovedAt is when retention removed the child (Unix milliseconds),
	// while its tombstone lasts; 0 otherwise, and for a child removed so
	// long ago that its tombstone expired too.
	RemovedAt float64 `json:"removedAt,omitempty"`
	// Children are the child's own children, when Tree read that deep.
	Children []ChildNode `json:"children,omitempty"`
}

// Tree reads the child runs rec links, and theirs, depth levels deep
// (at most MaxTreeDepth), in the order they were started.
func (c *Client) Tree(ctx context.Context, rec *runrecord.Record, depth int) ([]ChildNode, error) {
	return ReadTree(ctx, c.store, rec, depth)
}

// ReadTree is Client.Tree reading the records from runs.
func ReadTree(ctx context.Context, runs RunStore, rec *runrecord.Record, depth int) ([]ChildNode, error) {
	if rec == nil || len(rec.Children) == 0 || depth <= 0 {
		return nil, nil
	}
	depth = min(depth, MaxTreeDepth)
	out := make([]ChildNode, 0, len(rec.Children))
	for _, ch := range rec.Children {
		n := ChildNode{Child: ch}
		data, _, err := runs.Get(ctx, ch.Run)
		switch {
		case errors.Is(err, kvstore.ErrRunNotFound):
			// A child is kept until its parent settles: no record under a
			// settled parent is a child removed and its tombstone gone.
			n.Status = ChildStarting
			if ps := rec.Status; ps != nil && run.Status(ps.Status).Terminal() {
				n.Status = ChildRemoved
			}
		case err != nil:
			return nil, fmt.Errorf("client: child %s of the run: %w", ch.Run, err)
		default:
			kid, err := runrecord.Decode(data)
			if re := (*runrecord.RemovedError)(nil); errors.As(err, &re) {
				n.Status, n.RemovedAt = ChildRemoved, re.Removed.At
				break
			}
			if err != nil {
				return nil, fmt.Errorf("client: child %s: %w", ch.Run, err)
			}
			ws, err := step.StatusOf(ch.Run, kid, nil)
			if err != nil {
				return nil, fmt.Errorf("client: child %s: %w", ch.Run, err)
			}
			n.Status = ws.Status
			if n.Children, err = ReadTree(ctx, runs, kid, depth-1); err != nil {
				return nil, err
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// TreeCounts counts a tree's children by status, this level only.
func TreeCounts(nodes []ChildNode) map[string]int {
	m := map[string]int{}
	for _, n := range nodes {
		m[n.Status]++
	}
	return m
}

// Record reads run runID's record: what Tree reads the children from.
// The error wraps kvstore.ErrRunNotFound, or runrecord.ErrRemoved.
func (c *Client) Record(ctx context.Context, runID string) (*runrecord.Record, error) {
	data, _, err := c.store.Get(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("client: record: %w", err)
	}
	rec, err := runrecord.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("client: record %s: %w", runID, err)
	}
	return rec, nil
}
