package client

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// What a record cannot tell about a step, the input it applied can: a
// failed attempt's error code and message as the worker sent them, and
// the output of an attempt whose activation ended with it.

// withResults completes the settle steps among steps from the task
// results rec applied since prev (nil for none), read through t.Result.
func (t *Tracker) withResults(steps []Progress, prev, rec *runrecord.Record) {
	if t.Result == nil {
		return
	}
	var results []*wire.Result
	read := false
	for i := range steps {
		s := &steps[i]
		if s.Kind != ProgressSettle {
			continue
		}
		if !read {
			read = true
			for _, seq := range rec.Applied {
				if prev == nil || !prev.HasApplied(seq) {
					if r := t.Result(seq); r != nil {
						results = append(results, r)
					}
				}
			}
		}
		i := slices.IndexFunc(results, func(r *wire.Result) bool { return r.Node == s.Node && r.Attempt == s.Attempt })
		if i < 0 {
			continue
		}
		r := results[i]
		switch {
		case r.Error != nil && !s.OK:
			caught := strings.HasSuffix(s.Detail, caughtMark)
			s.Code, s.Detail = r.Error.Code, r.Error.Message
			if caught {
				s.Detail += caughtMark
			}
		case r.Error == nil && s.OK && s.Detail == "" && len(r.Output) > 0:
			var v any
			if json.Unmarshal(r.Output, &v) == nil {
				s.Detail = compact(v)
			}
		}
	}
}

// refusals reports the inputs rec lists as ignored or rejected that no
// earlier record of this Tracker listed, in stream order.
func (t *Tracker) refusals(rec *runrecord.Record) []Progress {
	var out []Progress
	for verdict, list := range map[string][]runrecord.Rejection{"ignored": rec.Ignored, "rejected": rec.Rejected} {
		for _, r := range list {
			if r.Seq > t.refused {
				out = append(out, Progress{Kind: ProgressRefused, At: r.Time, Name: r.Kind, Detail: verdict + ": " + r.Reason, Seq: r.Seq})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Progress) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, p := range out {
		t.refused = max(t.refused, p.Seq)
	}
	return out
}
