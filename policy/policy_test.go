package policy_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/policy"
)

// valid are policy files Parse accepts, with their canonical form.
var valid = []struct{ name, in, canon string }{
	{"empty", `{}`, `{}`},
	{"whitespace", " \n{ }\n", `{}`},
	{"empty rule", `{"*":{}}`, `{"*":{}}`},
	{"retention", `{"$run":{"retention":"72h"},"*":{}}`, `{"$run":{"retention":"72h0m0s"},"*":{}}`},
	{"retention off", `{"$run":{"retention":"off"}}`, `{"$run":{"retention":"off"}}`},
	{"archive", `{"$run":{"archive":true,"retention":"1h"}}`, `{"$run":{"archive":true,"retention":"1h0m0s"}}`},
	{"archive only", `{"$run":{"archive":false}}`, `{"$run":{"archive":false}}`},
	{"empty run settings", `{"$run":{}}`, `{}`},
	{
		"every field", `{"ship@1":{"maxAttempts":5,"initialInterval":"250ms","maxInterval":"1m","multiplier":1.5,"nonRetryableCodes":["CARD","<&>"],"startToClose":"30s"}}`,
		`{"ship@1":{"initialInterval":"250ms","maxAttempts":5,"maxInterval":"1m0s","multiplier":1.5,"nonRetryableCodes":["CARD","<&>"],"startToClose":"30s"}}`,
	},
	{
		"timeouts", `{"*":{"attemptTimeout":"90s"},"ship":{"scheduleToClose":"1h"}}`,
		`{"*":{"attemptTimeout":"1m30s"},"ship":{"scheduleToClose":"1h0m0s"}}`,
	},
	{
		"three levels", `{"*":{"startToClose":"2m"},"ship":{"maxAttempts":1},"ship@2.0+b":{"multiplier":1}}`,
		`{"*":{"startToClose":"2m0s"},"ship":{"maxAttempts":1},"ship@2.0+b":{"multiplier":1}}`,
	},
	{"no codes", `{"t":{"nonRetryableCodes":[]}}`, `{"t":{"nonRetryableCodes":[]}}`},
	{
		"priority and fairness", `{"charge@1":{"priority":2,"priorityFrom":"$.input.tier","key":"$.input.customer","maxPerKey":3}}`,
		`{"charge@1":{"key":"$.input.customer","maxPerKey":3,"priority":2,"priorityFrom":"$.input.tier"}}`,
	},
	{"priority zero", `{"t":{"priority":0}}`, `{"t":{"priority":0}}`},
	{"durations normalised", `{"t":{"initialInterval":"1000ms","maxInterval":"1h0m0s"}}`, `{"t":{"initialInterval":"1s","maxInterval":"1h0m0s"}}`},
	{"integral float", `{"t":{"maxAttempts":2.0}}`, `{"t":{"maxAttempts":2}}`},
	{
		"bounds", `{"t":{"maxAttempts":1000,"multiplier":100,"initialInterval":"1ms","maxInterval":"168h","startToClose":"1s"}}`,
		`{"t":{"initialInterval":"1ms","maxAttempts":1000,"maxInterval":"168h0m0s","multiplier":100,"startToClose":"1s"}}`,
	},
	{
		"limits", `{"*":{"ratePerSecond":0.5},"ship@1":{"maxConcurrency":4,"rateBurst":10}}`,
		`{"*":{"ratePerSecond":0.5},"ship@1":{"maxConcurrency":4,"rateBurst":10}}`,
	},
}

func TestParseValid(t *testing.T) {
	t.Parallel()
	for _, c := range valid {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := policy.Parse([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if got := string(p.Canonical()); got != c.canon {
				t.Fatalf("canonical %s, want %s", got, c.canon)
			}
			again, err := policy.Parse(p.Canonical())
			if err != nil || string(again.Canonical()) != c.canon {
				t.Fatalf("the canonical form does not parse back to itself: %v, %s", err, again.Canonical())
			}
		})
	}
}

func TestParseRefusesWithPointer(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, ptr, reason string }{
		{"not an object", `[]`, "", "must be a JSON object"},
		{"null", `null`, "", "not null"},
		{"not JSON", `{"*":`, "/*", "unexpected end"},
		{"cut short", `{"t":{}`, "", "unexpected end"},
		{"trailing data", `{} {}`, "", "data after the policy object"},
		{"syntax in a rule", `{"t":{"maxAttempts":}}`, "/t", "invalid JSON"},
		{"duplicate key", `{"t":{},"t":{}}`, "/t", "appears twice"},
		{"bad key", `{"a.b":{}}`, "/a.b", `"task@version"`},
		{"bad version", `{"t@1/2":{}}`, "/t@1~12", "task version"},
		{"empty version", `{"t@":{}}`, "/t@", "task version is empty"},
		{"empty key", `{"":{}}`, "/", "task name is empty"},
		{"rule not object", `{"t":3}`, "/t", "must be an object"},
		{"unknown field", `{"t":{"retries":3}}`, "/t/retries", "not a policy field"},
		{"duplicate field", `{"t":{"maxAttempts":2,"maxAttempts":3}}`, "/t/maxAttempts", "appears twice"},
		{"attempts zero", `{"t":{"maxAttempts":0}}`, "/t/maxAttempts", "integer from 1 to 1000"},
		{"attempts fraction", `{"t":{"maxAttempts":2.5}}`, "/t/maxAttempts", "integer"},
		{"attempts string", `{"t":{"maxAttempts":"3"}}`, "/t/maxAttempts", "integer"},
		{"attempts huge", `{"t":{"maxAttempts":1e400}}`, "/t/maxAttempts", "integer"},
		{"duration number", `{"t":{"initialInterval":1000}}`, "/t/initialInterval", "Go duration string"},
		{"duration garbage", `{"t":{"maxInterval":"soon"}}`, "/t/maxInterval", "not a Go duration"},
		{"duration negative", `{"t":{"initialInterval":"-1s"}}`, "/t/initialInterval", "outside"},
		{"duration zero", `{"t":{"initialInterval":"0s"}}`, "/t/initialInterval", "outside"},
		{"duration too short", `{"t":{"initialInterval":"500us"}}`, "/t/initialInterval", "outside"},
		{"start-to-close too short", `{"t":{"startToClose":"500ms"}}`, "/t/startToClose", "outside 1s to 24h0m0s"},
		{"start-to-close too long", `{"t":{"startToClose":"25h"}}`, "/t/startToClose", "outside"},
		{"attempt timeout too short", `{"t":{"attemptTimeout":"10ms"}}`, "/t/attemptTimeout", "outside 1s"},
		{"schedule-to-close not a duration", `{"t":{"scheduleToClose":5}}`, "/t/scheduleToClose", ""},
		{"multiplier below 1", `{"t":{"multiplier":0.5}}`, "/t/multiplier", "from 1 to 100"},
		{"multiplier bool", `{"t":{"multiplier":true}}`, "/t/multiplier", "not a boolean"},
		{"codes not array", `{"t":{"nonRetryableCodes":"X"}}`, "/t/nonRetryableCodes", "array"},
		{"code not string", `{"t":{"nonRetryableCodes":["A",1]}}`, "/t/nonRetryableCodes/1", "error code string"},
		{"code empty", `{"t":{"nonRetryableCodes":[""]}}`, "/t/nonRetryableCodes/0", "1 to 256 bytes"},
		{"code twice", `{"t":{"nonRetryableCodes":["A","A"]}}`, "/t/nonRetryableCodes/1", "appears twice"},
		{"initial above max", `{"t":{"initialInterval":"2s","maxInterval":"1s"}}`, "/t/initialInterval", "longer than maxInterval"},
		{"initial above default max", `{"t":{"initialInterval":"2m"}}`, "/t", "resolved maxInterval 1m0s"},
		{"max below inherited initial", `{"*":{"initialInterval":"10s"},"t@1":{"maxInterval":"5s"}}`, "/t@1", "resolved initialInterval 10s"},
		{"concurrency zero", `{"t":{"maxConcurrency":0}}`, "/t/maxConcurrency", "integer from 1 to 100000"},
		{"rate zero", `{"t":{"ratePerSecond":0}}`, "/t/ratePerSecond", "from 0.001 to 100000"},
		{"burst fraction", `{"t":{"ratePerSecond":1,"rateBurst":1.5}}`, "/t/rateBurst", "integer from 1"},
		{"burst without a rate", `{"t":{"rateBurst":5}}`, "/t/rateBurst", "a burst needs a rate"},
		{"wildcard below default initial", `{"*":{"maxInterval":"500ms"}}`, "/*", "resolved initialInterval 1s"},
		{"priority too high", `{"t":{"priority":10}}`, "/t/priority", "integer from 0 to 9"},
		{"priority fraction", `{"t":{"priority":1.5}}`, "/t/priority", "integer from 0 to 9"},
		{"key a number", `{"t":{"key":7}}`, "/t/key", "must be a query over the run input"},
		{"key not a query", `{"t":{"key":{"$nope":1}}}`, "/t/key", "not a query"},
		{"priority from not a query", `{"t":{"priorityFrom":{"$nope":[]}}}`, "/t/priorityFrom", "not a query"},
		{"per-key limit zero", `{"t":{"key":"$.input.c","maxPerKey":0}}`, "/t/maxPerKey", "integer from 1"},
		{"per-key limit without a key", `{"t":{"maxPerKey":2}}`, "/t/maxPerKey", "needs a key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := policy.Parse([]byte(c.in))
			var pe *policy.Error
			if !errors.As(err, &pe) || !errors.Is(err, policy.ErrInvalid) {
				t.Fatalf("Parse = %v, want a *policy.Error", err)
			}
			if pe.Pointer != c.ptr || !strings.Contains(pe.Reason, c.reason) {
				t.Fatalf("Parse = pointer %q reason %q; want pointer %q and a reason with %q", pe.Pointer, pe.Reason, c.ptr, c.reason)
			}
		})
	}
}

func TestParseRefusesLargeFiles(t *testing.T) {
	t.Parallel()
	big := `{"t":{"nonRetryableCodes":["` + strings.Repeat("x", 1<<20) + `"]}}`
	if _, err := policy.Parse([]byte(big)); err == nil || !strings.Contains(err.Error(), "more than the limit") {
		t.Fatalf("Parse of a 1 MiB file = %v", err)
	}
}

func TestResolveFieldByField(t *testing.T) {
	t.Parallel()
	p, err := policy.Parse([]byte(`{
		"*":{"maxAttempts":4,"startToClose":"2m","nonRetryableCodes":["FATAL"]},
		"ship":{"initialInterval":"100ms","maxInterval":"2s","startToClose":"30s"},
		"ship@2":{"maxAttempts":6,"nonRetryableCodes":[]}}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		task, version string
		retry         run.RetryPolicy
		stc           time.Duration
	}{
		{"ship", "2", run.RetryPolicy{MaxAttempts: 6, InitialIntervalMs: 100, MaxIntervalMs: 2000, Multiplier: 2, NonRetryableCodes: []string{}}, 30 * time.Second},
		{"ship", "1", run.RetryPolicy{MaxAttempts: 4, InitialIntervalMs: 100, MaxIntervalMs: 2000, Multiplier: 2, NonRetryableCodes: []string{"FATAL"}}, 30 * time.Second},
		{"notify", "1", run.RetryPolicy{MaxAttempts: 4, InitialIntervalMs: 1000, MaxIntervalMs: 60000, Multiplier: 2, NonRetryableCodes: []string{"FATAL"}}, 2 * time.Minute},
	}
	for _, c := range cases {
		if got := p.Retry(c.task, c.version); !reflect.DeepEqual(got, c.retry) {
			t.Errorf("Retry(%s, %s) = %+v, want %+v", c.task, c.version, got, c.retry)
		}
		if got := p.StartToClose(c.task, c.version); got != c.stc {
			t.Errorf("StartToClose(%s, %s) = %v, want %v", c.task, c.version, got, c.stc)
		}
	}
	if keys := p.Keys(); !reflect.DeepEqual(keys, []string{"*", "ship", "ship@2"}) {
		t.Errorf("Keys = %v", keys)
	}
}

func TestNilPolicyIsDefaults(t *testing.T) {
	t.Parallel()
	var p *policy.Policy
	if got := p.Retry("t", "1"); !reflect.DeepEqual(got, run.DefaultRetry) {
		t.Errorf("Retry = %+v, want %+v", got, run.DefaultRetry)
	}
	if p.StartToClose("t", "1") != 0 || !p.Empty() || p.RunOptions().Retry != nil || string(p.Canonical()) != "{}" {
		t.Errorf("a nil policy is not the empty one")
	}
	empty, err := policy.Parse([]byte(`{}`))
	if err != nil || !empty.Empty() || !reflect.DeepEqual(empty.Retry("t", "1"), run.DefaultRetry) {
		t.Errorf("an empty policy is not the defaults: %v", err)
	}
}

// FuzzParse: Parse never panics, refuses with a *policy.Error, and what
// it accepts has a canonical form that parses back to itself.
func FuzzParse(f *testing.F) {
	for _, c := range valid {
		f.Add([]byte(c.in))
	}
	for _, s := range []string{`[]`, `{"t":{"maxAttempts":0}}`, `{"*":{"maxInterval":"500ms"}}`, `{"a@b@c":{}}`, `{"t":{"nonRetryableCodes":[1]}}`, `{"$run":{"search":{"customer":"/input/customer","n":"/data/a~1b"}}}`, `{"$run":{"search":{"a.b":"/x"}}}`, `{"t":{"maxPerKey":2}}`, `{"t":{"priority":10}}`, `{"t":{"key":7}}`, `{"t":{"key":{"$nope":1}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := policy.Parse(data)
		if err != nil {
			var pe *policy.Error
			if !errors.As(err, &pe) {
				t.Fatalf("Parse = %T %v, want a *policy.Error", err, err)
			}
			return
		}
		canon := p.Canonical()
		again, err := policy.Parse(canon)
		if err != nil {
			t.Fatalf("canonical form %s does not parse: %v", canon, err)
		}
		if string(again.Canonical()) != string(canon) {
			t.Fatalf("canonical form is not stable: %s then %s", canon, again.Canonical())
		}
		for _, k := range p.Keys() {
			task, version, _ := strings.Cut(k, "@")
			if r := p.Retry(task, version); r.MaxAttempts < 1 || r.InitialIntervalMs > r.MaxIntervalMs || r.Multiplier < 1 {
				t.Fatalf("resolved %s to %+v", k, r)
			}
		}
	})
}

func TestPolicyJSONRoundTrip(t *testing.T) {
	t.Parallel()
	var holder struct {
		Policy *policy.Policy `json:"policy"`
	}
	in := `{"policy":{"ship@1":{"maxAttempts":2,"maxInterval":"90s"}}}`
	if err := json.Unmarshal([]byte(in), &holder); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(holder)
	if err != nil || string(out) != `{"policy":{"ship@1":{"maxAttempts":2,"maxInterval":"1m30s"}}}` {
		t.Fatalf("Marshal = %s, %v", out, err)
	}
	err = json.Unmarshal([]byte(`{"policy":{"ship@1":{"maxAttempts":-1}}}`), &holder)
	if !errors.Is(err, policy.ErrInvalid) {
		t.Fatalf("Unmarshal of an invalid policy = %v", err)
	}
}

func TestTimeoutsResolve(t *testing.T) {
	t.Parallel()
	p, err := policy.Parse([]byte(`{"*":{"attemptTimeout":"90s"},"ship":{"scheduleToClose":"1h"},"ship@2":{"attemptTimeout":"5s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		task, version    string
		attempt, closing float64
	}{
		{"notify", "1", 90000, 0},
		{"ship", "1", 90000, 3600000},
		{"ship", "2", 5000, 3600000},
	} {
		if got := p.Timeouts(c.task, c.version); got.AttemptMs != c.attempt || got.ScheduleToCloseMs != c.closing {
			t.Errorf("%s@%s: %+v, want %v / %v", c.task, c.version, got, c.attempt, c.closing)
		}
	}
	var none *policy.Policy
	if got := none.Timeouts("any", "1"); got.AttemptMs != float64(policy.DefaultAttemptTimeout/time.Millisecond) || got.ScheduleToCloseMs != 0 {
		t.Errorf("no policy: %+v, want the default attempt timeout", got)
	}
	if none.RunOptions().Timeouts == nil {
		t.Error("no policy: the run options set no timeouts")
	}
}

// TestLimitsResolve: each limit comes from the most specific entry that
// sets it; a rate without a burst has a burst of 1, no rate has none.
func TestLimitsResolve(t *testing.T) {
	t.Parallel()
	p, err := policy.Parse([]byte(`{"*":{"ratePerSecond":0.5},"ship":{"rateBurst":3},"ship@1":{"maxConcurrency":4},"mail":{"maxConcurrency":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		task, version string
		want          policy.Limits
	}{
		{"ship", "1", policy.Limits{MaxConcurrency: 4, RatePerSecond: 0.5, RateBurst: 3}},
		{"ship", "2", policy.Limits{RatePerSecond: 0.5, RateBurst: 3}},
		{"mail", "1", policy.Limits{MaxConcurrency: 2, RatePerSecond: 0.5, RateBurst: 1}},
	} {
		if got := p.Limits(c.task, c.version); got != c.want {
			t.Errorf("Limits(%s, %s) = %+v, want %+v", c.task, c.version, got, c.want)
		}
	}
	var none *policy.Policy
	if got := none.Limits("ship", "1"); got != (policy.Limits{}) {
		t.Errorf("no policy: %+v", got)
	}
}

func TestQueueResolvesPriorityAndKey(t *testing.T) {
	t.Parallel()
	p, err := policy.Parse([]byte(`{"*":{"priority":1},"charge":{"priorityFrom":"$.input.tier","key":"$.input.customer","maxPerKey":2},"plain@1":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := (*policy.Policy)(nil).Queue("t", "1"); ok {
		t.Fatal("an empty policy queues")
	}
	q, ok := p.Queue("charge", "1")
	if !ok || q.MaxPerKey != 2 {
		t.Fatalf("Queue(charge@1) = %+v, %v", q, ok)
	}
	cases := []struct {
		input    any
		started  *int
		priority int
		key      string
	}{
		{map[string]any{"tier": 7.0, "customer": "ada"}, nil, 7, "ada"},
		{map[string]any{"tier": 7.0, "customer": "ada"}, new(3), 3, "ada"},
		{map[string]any{"tier": 12.0, "customer": 5.0}, nil, 1, "5"},
		{map[string]any{"tier": "high"}, nil, 1, ""},
		{nil, nil, 1, ""},
	}
	for _, c := range cases {
		if prio, key := q.Of(c.input, c.started); prio != c.priority || key != c.key {
			t.Errorf("Of(%v, %v) = %d %q, want %d %q", c.input, c.started, prio, key, c.priority, c.key)
		}
	}
	if q, ok := p.Queue("plain", "1"); !ok || q.Priority != 1 || q.Key != nil {
		t.Fatalf("Queue(plain@1) inherits the default priority: %+v, %v", q, ok)
	}
}
