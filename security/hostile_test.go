package security

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/wire"
)

func hostileFleet(t *testing.T) *fleet.Fleet {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded:   embedded.Config{Listen: "127.0.0.1:-1", Logger: quiet()},
		Dispatcher: &dispatcher.Config{Logger: quiet()},
		Logger:     quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = f.Stop(ctx)
	})
	return f
}

// choose is a workflow whose first state chooses with guard.
func choose(guard string) string {
	return `{"$workflow":"0.2","revision":"h","initial":"c","states":{"c":{"choose":[{"guard":` + guard +
		`,"to":"yes"}],"otherwise":"no"},"yes":{"final":true},"no":{"final":true}}}`
}

// TestHostileDocumentsRefusedAtDeploy: documents too large, too deep or
// naming subjects they must not are refused with an error that says what
// is wrong, and nothing is deployed.
func TestHostileDocumentsRefusedAtDeploy(t *testing.T) {
	f := hostileFleet(t)
	ctx := testCtx(t, 60*time.Second)
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	cases := []struct {
		name, doc string
		want      func(error) bool
		says      string
	}{
		{"larger than the server takes", `{"$workflow":"0.2","revision":"r","initial":"a","states":{"a":{"work":{"task":"t","version":"1","with":"` +
			strings.Repeat("x", 2<<20) + `"},"then":"b"},"b":{"final":true}}}`, func(err error) bool { return errors.Is(err, nats.ErrMaxPayload) }, "maximum payload"},
		{"nested 100000 deep", `{"$workflow":"0.2","revision":"r","initial":"a","x":` + deep(100000) + `,"states":{"a":{"final":true}}}`, nil, "nesting too deep"},
		{"a guard nested 300 deep", choose(strings.Repeat(`{"$not":`, 300) + "true" + strings.Repeat("}", 300)), nil, "nesting too deep"},
		// (The engine reports the lowered chart's path and drops the
		// query's own JQ0002 "unknown operator": reported as a gap.)
		{"an unknown operator", choose(`{"$eval":"while(1){}"}`), func(err error) bool { return fault.CodeOf(err) == fault.JF0007 }, "guard failed to compile"},
		{
			"an automatic cycle without a limit", `{"$workflow":"0.2","revision":"r","initial":"a","states":{"a":{"choose":[{"guard":true,"to":"b"}],"otherwise":"b"},"b":{"choose":[{"guard":true,"to":"a"}],"otherwise":"a"}}}`,
			func(err error) bool { return fault.CodeOf(err) == fault.JF0022 }, "requires a state limit",
		},
		{
			"a task name that is two subject tokens", `{"$workflow":"0.2","revision":"r","initial":"a","states":{"a":{"work":{"task":"pay.>","version":"1"},"then":"b"},"b":{"final":true}}}`,
			func(err error) bool {
				var pe *fleet.PathError
				return errors.As(err, &pe) && pe.Path == "/states/a/work"
			}, "subject",
		},
		{"a task version with a space", `{"$workflow":"0.2","revision":"r","initial":"a","states":{"a":{"work":{"task":"pay","version":"1 0"},"then":"b"},"b":{"final":true}}}`, nil, "task version"},
		{"not JSON", `{"$workflow":`, nil, ""},
	}
	for _, c := range cases {
		began := time.Now()
		_, err := f.Deploy(ctx, "hostile", []byte(c.doc))
		took := time.Since(began)
		switch {
		case err == nil:
			t.Errorf("%s: deployed", c.name)
		case c.want != nil && !c.want(err):
			t.Errorf("%s: refused with %v", c.name, err)
		case !strings.Contains(err.Error(), c.says):
			t.Errorf("%s: the refusal %q does not say %q", c.name, err, c.says)
		default:
			t.Logf("%s (%d bytes): refused in %s: %.160s", c.name, len(c.doc), took.Round(time.Microsecond), err)
		}
	}
	if ws, err := f.Registry.List(ctx); err != nil || len(ws) != 0 {
		t.Fatalf("deployed after refusals: %v, %v", ws, err)
	}
}

// TestEvaluationLimitsStopHostileGuards deploys documents whose guards or
// task inputs would run for very long or allocate without bound. Each run
// fails with the limit's code at the guard's path, and a good run beside
// them ends normally: the dispatcher neither hangs nor crashes.
func TestEvaluationLimitsStopHostileGuards(t *testing.T) {
	f := hostileFleet(t)
	ctx := testCtx(t, 3*time.Minute)
	serveEcho(t, f)
	if _, err := f.Deploy(ctx, "good", []byte(goodFlow)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, doc string
		code      fault.Code
	}{
		{"10^12 quantifier steps", choose(`{"$some":{"a":{"$range":[1,1000000]},"b":{"$range":[1,1000000]}},"$satisfies":false}`), fault.JQ2009},
		{"a 10^12-item sequence", choose(`{"$gt":[{"$count":{"$for":{"a":{"$range":[1,1000000]},"b":{"$range":[1,1000000]}},"$return":1}},0]}`), fault.JQ2009},
		{"a string doubled 40 times", choose(`{"$eq":[{"$fold":{"acc":"ab"},"$for":{"x":{"$range":[1,40]}},"$return":{"$concat":["$acc","$acc"]}},"x"]}`), fault.JQ2007},
		{"a 10^9-item range", choose(`{"$gt":[{"$count":{"$range":[1,1000000000]}},0]}`), fault.JQ2007},
		{"a task input of 10^12 steps", `{"$workflow":"0.2","revision":"h","initial":"w","states":{"w":{"work":{"task":"echo","version":"1","with":{"$some":{"a":{"$range":[1,1000000]},"b":{"$range":[1,1000000]}},"$satisfies":false}},"then":"d"},"d":{"final":true}}}`, fault.JQ2009},
	}
	for i, c := range cases {
		name := fmt.Sprintf("hostile-%d", i)
		if _, err := f.Deploy(ctx, name, []byte(c.doc)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := f.Client.StartRun(ctx, name, name, map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	good := make(chan string, 1)
	if err := f.Client.StartRun(ctx, "good", "beside", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	go func() { good <- driveGood(t, ctx, f, "beside") }()
	for i, c := range cases {
		began := time.Now()
		st, err := f.Client.Wait(ctx, fmt.Sprintf("hostile-%d", i))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		// The run's error is the guard's or node's (JF2016, JF2006); the
		// limit's own code leads its message.
		if st.Status != wire.StatusFailed || st.Error == nil || !strings.Contains(st.Error.Message, string(c.code)+":") {
			t.Errorf("%s: ended %s %+v, want failed with %s", c.name, st.Status, st.Error, c.code)
			continue
		}
		t.Logf("%s: failed with %s at %s (%s), waited %s", c.name, st.Error.Code, st.Error.Path, st.Error.Message, time.Since(began).Round(time.Millisecond))
	}
	if got := <-good; got != `{"echo":{"n":1}}` {
		t.Errorf("the good run beside them ended %s", got)
	}
}
