// Package policy reads a deployment's task retry and timeout policy: a
// JSON object that maps "task@version", "task" (every version) and "*"
// (the deployment's default) to a rule. A policy belongs to a deployment,
// never to a workflow document, so documents stay jaren-workflow 0.2; the
// registry stores it beside the document and the dispatchers, replay and
// deploy all resolve it the same way (docs/POLICY.md).
package policy

import (
	"sort"
	"time"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/value"
)

// Rule is one entry of a policy. A zero field is unset: a task takes it
// from the next less specific entry that sets it, then from the defaults.
type Rule struct {
	// MaxAttempts counts every attempt, the first included. Default 3.
	MaxAttempts int
	// InitialInterval is the delay before the second attempt. Default 1s.
	InitialInterval time.Duration
	// MaxInterval caps every delay. Default 1m.
	MaxInterval time.Duration
	// Multiplier grows the delay per attempt. Default 2.
	Multiplier float64
	// NonRetryableCodes are worker error codes never retried; nil is
	// unset, empty sets none. Default none.
	NonRetryableCodes []string
	// StartToClose is the task consumer's AckWait: how long an attempt may
	// go without an acknowledgement or heartbeat before it is redelivered.
	// Default: the fleet's TaskPolicy (provision.DefaultStartToClose).
	StartToClose time.Duration
	// AttemptTimeout is how long one attempt may take from its invocation
	// to its accepted result before it fails with TASK_TIMEOUT (and is
	// retried like any task error). Default: DefaultAttemptTimeout.
	AttemptTimeout time.Duration
	// ScheduleToClose is how long all attempts of a task node may take
	// together, from the first invocation; its expiry is never retried.
	// Default: none.
	ScheduleToClose time.Duration
	// MaxConcurrency caps the attempts of the task version in flight
	// across every worker: the task consumer's MaxAckPending. Default:
	// the fleet's TaskPolicy (provision.DefaultMaxAckPending, 1000).
	MaxConcurrency int
	// RatePerSecond caps how many attempts of the task version start per
	// second across every dispatcher (docs/POLICY.md#rate-limits).
	// Default: none.
	RatePerSecond float64
	// RateBurst is how many attempts may start at once above
	// RatePerSecond after a quiet spell. Default: 1.
	RateBurst int
	// Priority, 0 to 9, queues the task version's invocations by
	// priority (docs/POLICY.md#priority-and-fairness): the priority of an
	// invocation whose run's start gave none and PriorityFrom gives none.
	// nil: unset.
	Priority *int
	// PriorityFrom is a query over {"input": run input} whose integer
	// value, 0 to 9, is the priority of an invocation whose run's start
	// gave none; canonical JSON of the query document, "" unset.
	PriorityFrom string
	// Key is a query over {"input": run input} whose value is the
	// invocation's fairness key: waiting invocations are served round
	// robin across keys. Canonical JSON of the query document, "" unset.
	Key string
	// MaxPerKey caps the attempts of one key in flight; it needs Key.
	// Default: none.
	MaxPerKey int
}

// DefaultAttemptTimeout is Rule.AttemptTimeout's default: no deployment
// is without one, so that an attempt nobody answers ends.
const DefaultAttemptTimeout = 10 * time.Minute

// Defaults of the retry fields, as durations (run.DefaultRetry in ms).
var (
	DefaultMaxAttempts     = run.DefaultRetry.MaxAttempts
	DefaultInitialInterval = time.Duration(run.DefaultRetry.InitialIntervalMs) * time.Millisecond
	DefaultMaxInterval     = time.Duration(run.DefaultRetry.MaxIntervalMs) * time.Millisecond
	DefaultMultiplier      = run.DefaultRetry.Multiplier
)

// Wildcard is the key of the deployment's default rule.
const Wildcard = "*"

// Policy is a parsed, valid policy; nil is the empty policy (defaults
// everywhere). A Policy is immutable.
type Policy struct {
	rules map[string]Rule
	// retention is the "$run" entry's retention (0: for ever); nil unset.
	retention *time.Duration
	// archive is the "$run" entry's archive; nil unset.
	archive *bool
	// search is the "$run" entry's search attributes: name to JSON
	// Pointer; nil unset.
	search map[string]string
	// children are the "$children" entry's bindings, keyed
	// "task@version"; nil unset.
	children map[string]Child
}

// Empty reports whether p has no entries.
func (p *Policy) Empty() bool {
	return p == nil || len(p.rules) == 0 && p.retention == nil && p.archive == nil && p.search == nil && len(p.children) == 0
}

// Keys are p's task rule keys, sorted ("$run" is not one).
func (p *Policy) Keys() []string {
	if p == nil {
		return nil
	}
	keys := make([]string, 0, len(p.rules))
	for k := range p.rules {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Entry returns the rule stored under key, as written.
func (p *Policy) Entry(key string) (Rule, bool) {
	if p == nil {
		return Rule{}, false
	}
	r, ok := p.rules[key]
	r.NonRetryableCodes = cloneCodes(r.NonRetryableCodes)
	return r, ok
}

// cloneCodes copies a code list, keeping nil (unset) apart from empty.
func cloneCodes(c []string) []string {
	if c == nil {
		return nil
	}
	return append([]string{}, c...)
}

// Rule resolves the rule of one task version field by field: each field
// comes from "task@version", else "task", else "*"; fields none of them
// sets stay zero.
func (p *Policy) Rule(task, version string) Rule {
	var out Rule
	if p == nil {
		return out
	}
	for _, k := range []string{task + "@" + version, task, Wildcard} {
		if r, ok := p.rules[k]; ok {
			out = out.inherit(r)
		}
	}
	out.NonRetryableCodes = cloneCodes(out.NonRetryableCodes)
	return out
}

// inherit fills r's unset fields from parent.
func (r Rule) inherit(parent Rule) Rule {
	if r.MaxAttempts == 0 {
		r.MaxAttempts = parent.MaxAttempts
	}
	if r.InitialInterval == 0 {
		r.InitialInterval = parent.InitialInterval
	}
	if r.MaxInterval == 0 {
		r.MaxInterval = parent.MaxInterval
	}
	if r.Multiplier == 0 {
		r.Multiplier = parent.Multiplier
	}
	if r.NonRetryableCodes == nil {
		r.NonRetryableCodes = parent.NonRetryableCodes
	}
	if r.StartToClose == 0 {
		r.StartToClose = parent.StartToClose
	}
	if r.AttemptTimeout == 0 {
		r.AttemptTimeout = parent.AttemptTimeout
	}
	if r.ScheduleToClose == 0 {
		r.ScheduleToClose = parent.ScheduleToClose
	}
	if r.MaxConcurrency == 0 {
		r.MaxConcurrency = parent.MaxConcurrency
	}
	if r.RatePerSecond == 0 {
		r.RatePerSecond = parent.RatePerSecond
	}
	if r.RateBurst == 0 {
		r.RateBurst = parent.RateBurst
	}
	if r.Priority == nil {
		r.Priority = parent.Priority
	}
	if r.PriorityFrom == "" {
		r.PriorityFrom = parent.PriorityFrom
	}
	if r.Key == "" {
		r.Key = parent.Key
	}
	if r.MaxPerKey == 0 {
		r.MaxPerKey = parent.MaxPerKey
	}
	return r
}

// withDefaults fills the retry fields a rule leaves unset (StartToClose
// stays: its default is the fleet's).
func (r Rule) withDefaults() Rule {
	return r.inherit(Rule{
		MaxAttempts: DefaultMaxAttempts, InitialInterval: DefaultInitialInterval,
		MaxInterval: DefaultMaxInterval, Multiplier: DefaultMultiplier,
	})
}

// Retry is the reducer's retry policy for one task version, every unset
// field at its default.
func (p *Policy) Retry(task, version string) run.RetryPolicy {
	r := p.Rule(task, version).withDefaults()
	return run.RetryPolicy{
		MaxAttempts:       r.MaxAttempts,
		InitialIntervalMs: ms(r.InitialInterval),
		MaxIntervalMs:     ms(r.MaxInterval),
		Multiplier:        r.Multiplier,
		NonRetryableCodes: r.NonRetryableCodes,
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// StartToClose is the task version's start-to-close timeout, 0 when the
// policy sets none (the caller's default applies).
func (p *Policy) StartToClose(task, version string) time.Duration {
	return p.Rule(task, version).StartToClose
}

// Limits are a task version's delivery limits: its fleet-wide
// concurrency (0: the fleet's default) and its start rate (0: none), the
// burst at least 1 when a rate is set.
type Limits struct {
	MaxConcurrency int
	RatePerSecond  float64
	RateBurst      int
}

// Limits resolves the task version's delivery limits.
func (p *Policy) Limits(task, version string) Limits {
	r := p.Rule(task, version)
	l := Limits{MaxConcurrency: r.MaxConcurrency, RatePerSecond: r.RatePerSecond, RateBurst: r.RateBurst}
	if l.RatePerSecond == 0 {
		l.RateBurst = 0
	} else if l.RateBurst == 0 {
		l.RateBurst = 1
	}
	return l
}

// Timeouts are the reducer's timeouts of one task version's attempts,
// AttemptTimeout at its default when unset; a nil p gives the defaults.
func (p *Policy) Timeouts(task, version string) run.Timeouts {
	r := p.Rule(task, version)
	if r.AttemptTimeout == 0 {
		r.AttemptTimeout = DefaultAttemptTimeout
	}
	return run.Timeouts{AttemptMs: ms(r.AttemptTimeout), ScheduleToCloseMs: ms(r.ScheduleToClose)}
}

// RunOptions are the reducer options that apply p: its retry rules (a
// nil p keeps run's defaults) and always its timeouts.
func (p *Policy) RunOptions() run.Options {
	if p == nil {
		return run.Options{Timeouts: p.Timeouts}
	}
	return run.Options{Retry: p.Retry, Timeouts: p.Timeouts}
}

// MarshalJSON is the canonical form (RFC 8785, durations as Go prints
// them): equal policies encode to equal bytes, which is what the
// registry's content address covers.
func (p *Policy) MarshalJSON() ([]byte, error) {
	return []byte(value.MustCanonical(p.tree())), nil
}

// UnmarshalJSON parses data as Parse does.
func (p *Policy) UnmarshalJSON(data []byte) error {
	q, err := Parse(data)
	if err != nil {
		return err
	}
	*p = *q
	return nil
}

// Canonical is MarshalJSON without an error.
func (p *Policy) Canonical() []byte {
	b, _ := p.MarshalJSON()
	return b
}

func (p *Policy) tree() map[string]any {
	out := map[string]any{}
	if p == nil {
		return out
	}
	for k, r := range p.rules {
		out[k] = r.tree()
	}
	if run := p.runTree(); run != nil {
		out[RunKey] = run
	}
	if ch := p.childrenTree(); ch != nil {
		out[ChildrenKey] = ch
	}
	return out
}

func (r Rule) tree() map[string]any {
	m := map[string]any{}
	if r.MaxAttempts != 0 {
		m[fieldMaxAttempts] = float64(r.MaxAttempts)
	}
	if r.InitialInterval != 0 {
		m[fieldInitialInterval] = r.InitialInterval.String()
	}
	if r.MaxInterval != 0 {
		m[fieldMaxInterval] = r.MaxInterval.String()
	}
	if r.Multiplier != 0 {
		m[fieldMultiplier] = r.Multiplier
	}
	if r.NonRetryableCodes != nil {
		codes := make([]any, len(r.NonRetryableCodes))
		for i, c := range r.NonRetryableCodes {
			codes[i] = c
		}
		m[fieldNonRetryableCodes] = codes
	}
	if r.StartToClose != 0 {
		m[fieldStartToClose] = r.StartToClose.String()
	}
	if r.AttemptTimeout != 0 {
		m[fieldAttemptTimeout] = r.AttemptTimeout.String()
	}
	if r.ScheduleToClose != 0 {
		m[fieldScheduleToClose] = r.ScheduleToClose.String()
	}
	if r.MaxConcurrency != 0 {
		m[fieldMaxConcurrency] = float64(r.MaxConcurrency)
	}
	if r.RatePerSecond != 0 {
		m[fieldRatePerSecond] = r.RatePerSecond
	}
	if r.RateBurst != 0 {
		m[fieldRateBurst] = float64(r.RateBurst)
	}
	if r.Priority != nil {
		m[fieldPriority] = float64(*r.Priority)
	}
	if r.PriorityFrom != "" {
		m[fieldPriorityFrom] = mustDecode(r.PriorityFrom)
	}
	if r.Key != "" {
		m[fieldKey] = mustDecode(r.Key)
	}
	if r.MaxPerKey != 0 {
		m[fieldMaxPerKey] = float64(r.MaxPerKey)
	}
	return m
}
