package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/wire"
)

// Queue is how a task version's invocations wait for workers when its
// policy gives them a priority or a fairness key: in the queue stream,
// admitted by a dispatcher highest priority first, round robin across
// keys within a priority, FIFO within a key
// (docs/POLICY.md#priority-and-fairness).
type Queue struct {
	// Priority is the priority of an invocation whose run's start gave
	// none and PriorityFrom gives none.
	Priority int
	// PriorityFrom and Key are queries over {"input": run input}; nil
	// when unset.
	PriorityFrom, Key *query.Query
	// MaxPerKey caps the attempts of one key in flight (0: no cap).
	MaxPerKey int
}

// Queue resolves the task version's queue; ok is false when its policy
// sets none of priority, priorityFrom and key, so that its invocations go
// straight to the task subject.
func (p *Policy) Queue(task, version string) (q Queue, ok bool) {
	r := p.Rule(task, version)
	if r.Priority == nil && r.PriorityFrom == "" && r.Key == "" {
		return Queue{}, false
	}
	if r.Priority != nil {
		q.Priority = *r.Priority
	}
	q.PriorityFrom, q.Key, q.MaxPerKey = compiled(r.PriorityFrom), compiled(r.Key), r.MaxPerKey
	return q, true
}

// Queues reports whether some entry of p sets priority, priorityFrom or
// key, so that some task version may be queued.
func (p *Policy) Queues() bool {
	if p == nil {
		return false
	}
	for _, r := range p.rules {
		if r.Priority != nil || r.PriorityFrom != "" || r.Key != "" {
			return true
		}
	}
	return false
}

// Of is the priority and the key (empty: none) of an invocation of a run
// whose input is input and whose start gave the priority started (nil:
// none). A query that fails or gives no usable value falls back: the
// priority to q.Priority, the key to none.
func (q Queue) Of(input any, started *int) (priority int, key string) {
	view := map[string]any{"input": input}
	priority = q.Priority
	switch {
	case started != nil:
		priority = *started
	case q.PriorityFrom != nil:
		if v, ok, err := q.PriorityFrom.Eval(view, nil); err == nil && ok {
			if f, isNum := v.(float64); isNum && f == math.Trunc(f) && f >= wire.MinPriority && f <= wire.MaxPriority {
				priority = int(f)
			}
		}
	}
	priority = min(max(priority, wire.MinPriority), wire.MaxPriority)
	if q.Key != nil {
		if v, ok, err := q.Key.Eval(view, nil); err == nil && ok && v != nil {
			if s, isStr := v.(string); isStr {
				key = s
			} else {
				key = value.MustCanonical(v)
			}
		}
	}
	return priority, key
}

// queryDoc checks a query document and returns its canonical JSON.
func queryDoc(v any, ptr string) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", errAt(ptr, "must be a query over the run input, such as \"$.input.customer\": %v", err)
	}
	doc, err := value.Decode(raw, value.Limits{})
	if err != nil {
		return "", errAt(ptr, "must be a query over the run input, such as \"$.input.customer\": %v", err)
	}
	if _, isStr := doc.(string); !isStr {
		if _, isObj := doc.(map[string]any); !isObj {
			return "", errAt(ptr, "must be a query over the run input (a string such as \"$.input.customer\", or a query object), not %s", describe(v))
		}
	}
	if _, err := query.Compile(doc, query.Options{}); err != nil {
		return "", errAt(ptr, "not a query: %v", err)
	}
	return value.MustCanonical(doc), nil
}

// mustDecode is the value of canonical JSON that queryDoc produced.
func mustDecode(canon string) any {
	v, err := value.Decode([]byte(canon), value.Limits{})
	if err != nil {
		panic(fmt.Sprintf("policy: a checked query does not decode: %v", err))
	}
	return v
}

// queries caches compiled query documents by their canonical JSON: a
// policy is immutable and few documents recur.
var queries sync.Map

func compiled(canon string) *query.Query {
	if canon == "" {
		return nil
	}
	if q, ok := queries.Load(canon); ok {
		return q.(*query.Query)
	}
	q, err := query.Compile(mustDecode(canon), query.Options{})
	if err != nil {
		panic(fmt.Sprintf("policy: a checked query does not compile: %v", err))
	}
	queries.Store(canon, q)
	return q
}
