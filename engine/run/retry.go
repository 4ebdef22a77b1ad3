package run

import (
	"math"
	"slices"
	"strconv"

	"github.com/jetflow/jetflow/engine/value"
)

// RetryPolicy says how often and how soon a failed task is tried again
// before its failure reaches the workflow.
type RetryPolicy struct {
	// MaxAttempts counts every attempt, the first included. Default 3.
	MaxAttempts int
	// InitialIntervalMs is the delay before the second attempt. Default 1000.
	InitialIntervalMs float64
	// MaxIntervalMs caps any delay. Default 60000.
	MaxIntervalMs float64
	// Multiplier grows the delay per attempt. Default 2.
	Multiplier float64
	// NonRetryableCodes are worker error codes never retried.
	NonRetryableCodes []string
}

// DefaultRetry is the policy of a task the host configures nothing for.
var DefaultRetry = RetryPolicy{MaxAttempts: 3, InitialIntervalMs: 1000, MaxIntervalMs: 60000, Multiplier: 2}

// NoRetry fails a task at its first failure, as the reference does.
var NoRetry = RetryPolicy{MaxAttempts: 1}

func (r *reducer) policy(task, version string) RetryPolicy {
	p := DefaultRetry
	if r.opts.Retry != nil {
		if q := r.opts.Retry(task, version); q.MaxAttempts > 0 {
			p = q
		}
	}
	if p.InitialIntervalMs <= 0 {
		p.InitialIntervalMs = DefaultRetry.InitialIntervalMs
	}
	if p.MaxIntervalMs <= 0 {
		p.MaxIntervalMs = DefaultRetry.MaxIntervalMs
	}
	if p.Multiplier < 1 {
		p.Multiplier = DefaultRetry.Multiplier
	}
	return p
}

func (p RetryPolicy) retries(e *TaskError, attempt int) bool {
	return attempt < p.MaxAttempts && !e.NonRetryable && !slices.Contains(p.NonRetryableCodes, e.Code)
}

// retryLater parks a node until its backoff is over. The jitter is drawn
// from a hash of the attempt, not a random source, so that a replay of the
// run's history arms the same timer.
//
// A failure whose worker asked to retry after a delay of its own
// (TaskError.RetryAfterMs) waits exactly that long, at most
// MaxRetryAfterMs, and is left out of the backoff of later failures.
func (r *reducer) retryLater(node string, a *Attempt, p RetryPolicy, e *TaskError) {
	w := r.st.Work
	var delay float64
	if e != nil && e.RetryAfterMs > 0 {
		delay = math.Min(e.RetryAfterMs, MaxRetryAfterMs)
		a.Deferred++
	} else {
		delay = p.InitialIntervalMs * math.Pow(p.Multiplier, float64(max(0, w.ordinal(a)-1-a.Deferred)))
		delay = math.Min(delay, p.MaxIntervalMs)
		h, _ := strconv.ParseUint(value.HashContent(w.Activation+"|"+node+"|"+strconv.Itoa(a.Attempt)), 36, 64)
		delay *= 0.5 + 0.5*float64(h)/float64(math.MaxUint32)
	}
	a.Waiting = true
	r.st.Retries++
	id := "r" + strconv.FormatInt(r.st.Retries, 10)
	if w.Retries == nil {
		w.Retries = map[string]string{}
	}
	w.Retries[id] = node
	a.RetryAt = math.Round(r.now + delay)
	r.effects = append(r.effects, Effect{Arm: &ArmTimer{ID: id, Deadline: a.RetryAt}})
}
