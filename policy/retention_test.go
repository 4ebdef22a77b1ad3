package policy_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jetflow/jetflow/policy"
)

func TestRetention(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want *time.Duration
	}{
		{`{}`, nil},
		{`{"*":{"maxAttempts":2}}`, nil},
		{`{"$run":{"retention":"90m"}}`, new(90 * time.Minute)},
		{`{"$run":{"retention":"off"}}`, new(time.Duration(0))},
	} {
		p, err := policy.Parse([]byte(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		got := p.Retention()
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("%s: retention %v, want %v", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ in, ptr string }{
		{`{"$run":{"retention":"10ms"}}`, "/$run/retention"},
		{`{"$run":{"retention":7}}`, "/$run/retention"},
		{`{"$run":{"keep":"1h"}}`, "/$run/keep"},
		{`{"$run":[]}`, "/$run"},
		{`{"$run":{"retention":"1h","retention":"2h"}}`, "/$run/retention"},
		{`{"$run":{"archive":"yes"}}`, "/$run/archive"},
		{`{"$run":{"archive":true,"archive":false}}`, "/$run/archive"},
	} {
		_, err := policy.Parse([]byte(c.in))
		var pe *policy.Error
		if !errors.As(err, &pe) || pe.Pointer != c.ptr {
			t.Errorf("%s: %v, want a refusal at %s", c.in, err, c.ptr)
		}
	}
	for _, c := range []struct {
		in   string
		want *bool
	}{
		{`{"$run":{"retention":"1h"}}`, nil},
		{`{"$run":{"archive":true}}`, new(true)},
		{`{"$run":{"archive":false,"retention":"off"}}`, new(false)},
	} {
		p, err := policy.Parse([]byte(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := p.Archive(); (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("%s: archive %v, want %v", c.in, got, c.want)
		}
	}
	// A policy of run settings only is not empty (the registry keeps it)
	// but has no task rules (the dispatchers' own retry rules apply).
	p, err := policy.Parse([]byte(`{"$run":{"retention":"1h"}}`))
	if err != nil || p.Empty() || len(p.Keys()) != 0 {
		t.Errorf("run settings only: %v, empty %v, keys %v", err, p.Empty(), p.Keys())
	}
}
