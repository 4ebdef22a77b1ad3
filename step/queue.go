package step

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// queue moves the invocations in out whose task version's policy queues
// them (Definition.Queue) from the task subject to the queue stream, on
// the subject that names their priority and fairness key, where a
// dispatcher admits them onto the task subject in order
// (docs/POLICY.md#priority-and-fairness). Their priority is the run's
// (started, from its start), else the policy's.
func queue(names subjects.Names, def *Definition, next *run.State, started *int, out []runrecord.Outgoing) {
	if def.Queue == nil {
		return
	}
	for i := range out {
		o := &out[i]
		if o.Kind != runrecord.OutInvoke {
			continue
		}
		var inv struct{ Task, Version string }
		if json.Unmarshal(o.Data, &inv) != nil {
			continue
		}
		priority, key, maxPerKey, ok := def.Queue(inv.Task, inv.Version, next.Context.Input, started)
		if !ok {
			continue
		}
		o.Subject = names.Queue(inv.Task, inv.Version, priority, KeyToken(key))
		h := make(map[string]string, len(o.Header)+2)
		for k, v := range o.Header {
			h[k] = v
		}
		if key != "" {
			h[wire.HeaderKey] = key
		}
		if maxPerKey > 0 {
			h[wire.HeaderKeyLimit] = strconv.Itoa(maxPerKey)
		}
		o.Header = h
	}
}

// KeyToken is the subject token of a fairness key: a short hash, so that
// any value fits one token; subjects.NoKey for none.
func KeyToken(key string) string {
	if key == "" {
		return subjects.NoKey
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// QueueFunc is what Definition.Queue holds: whether the deployment's
// policy queues the task version (ok), and if so the priority and key of
// an invocation of a run whose input is input and whose start gave the
// priority started (nil: none), and the key's maxPerKey (0: none). The
// registry makes it from the policy (policy.Queue), which the step does
// not import: clients link the step.
type QueueFunc func(task, version string, input any, started *int) (priority int, key string, maxPerKey int, ok bool)
