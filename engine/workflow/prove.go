package workflow

import "github.com/jetflow/jetflow/engine/fault"

// prove checks that every automatically traversable cycle crosses a state
// with a limit (JF0022). Work completions, choices, timers, nested entry
// and final-to-continuation edges run by themselves; external event edges
// do not. The walk is the reference's depth-first search, in the same
// order, so the same state is reported; it keeps its own stack so that a
// long chain of states cannot exhaust the goroutine's.
func (lw *lowerer) prove() error {
	const (
		unseen = iota
		visiting
		visited
	)
	mark := make(map[string]int, len(lw.order))
	type frame struct {
		id   string
		next int
	}
	var stack []frame
	// enter reports whether id must be explored; a bounded state cuts
	// every cycle through it.
	enter := func(id string) (bool, error) {
		if lw.bounded[id] {
			return false, nil
		}
		switch mark[id] {
		case visited:
			return false, nil
		case visiting:
			return false, fault.New(fault.JF0022, "automatic cycle requires a state limit", lw.sources[id])
		}
		mark[id] = visiting
		return true, nil
	}
	for _, root := range lw.order {
		push, err := enter(root)
		if err != nil {
			return err
		}
		if !push {
			continue
		}
		stack = append(stack[:0], frame{id: root})
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			links := lw.links[top.id]
			if top.next == len(links) {
				mark[top.id] = visited
				stack = stack[:len(stack)-1]
				continue
			}
			next := links[top.next]
			top.next++
			push, err := enter(next)
			if err != nil {
				return err
			}
			if push {
				stack = append(stack, frame{id: next})
			}
		}
	}
	return nil
}
