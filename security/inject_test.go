package security

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/cmd/jetflow/cli"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/worker"
)

// injections are names that would add, widen or break subject tokens.
var injections = []string{
	"a.b", "a.>", "*", ">", "a b", "a\tb", "a\r\nPUB x 1", "", "a\x00b", "ünï", "a~b", "a/b", strings.Repeat("r", subjects.MaxToken+1),
}

// TestInjectionRefusedInSDK: the Go client, worker and deploy refuse every
// injecting run id, event type, workflow name and task name before
// anything is published.
func TestInjectionRefusedInSDK(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	f, err := fleet.Start(ctx, fleet.Config{Embedded: embedded.Config{Listen: "127.0.0.1:-1", Logger: quiet()}, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Stop(context.Background()) }()
	if _, err := f.Deploy(ctx, "good", []byte(goodFlow)); err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(f.JS, worker.Config{Names: f.Names, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	before := inputCount(t, f)
	c := f.Client
	for _, bad := range injections {
		for what, err := range map[string]error{
			"StartRun run id":        c.StartRun(ctx, "good", bad, nil),
			"StartRun workflow name": c.StartRun(ctx, bad, "r1", nil),
			"SendEvent run id":       c.SendEvent(ctx, bad, "go", nil),
			"SendEvent event type":   c.SendEvent(ctx, "r1", bad, nil),
			"Cancel run id":          c.Cancel(ctx, bad, ""),
			"Status run id":          second(c.Status(ctx, bad)),
			"Wait run id":            second(c.Wait(ctx, bad)),
			"Register task name":     w.Register(bad, "1", nop),
			"Register task version":  w.Register("t", bad+" ", nop),
			"Deploy workflow name":   second(f.Deploy(ctx, bad, []byte(goodFlow))),
			"Deploy task name": second(f.Deploy(ctx, "w", []byte(`{"$workflow":"0.2","revision":"r","initial":"a","states":{"a":{"work":{"task":`+
				quote(bad)+`,"version":"1"},"then":"b"},"b":{"final":true}}}`))),
		} {
			if err == nil {
				t.Errorf("%s %q accepted", what, bad)
			} else if !errors.Is(err, subjects.ErrInvalid) && !strings.Contains(err.Error(), "invalid") {
				t.Errorf("%s %q refused without saying the name is invalid: %v", what, bad, err)
			}
		}
	}
	if after := inputCount(t, f); after != before {
		t.Errorf("%d messages reached the input stream", after-before)
	}
}

func nop(context.Context, worker.Invocation) (any, error) { return nil, nil }

func second[T any](_ T, err error) error { return err }

func quote(s string) string {
	var b bytes.Buffer
	b.WriteString(`"`)
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString(`"`)
	return b.String()
}

func inputCount(t *testing.T, f *fleet.Fleet) uint64 {
	t.Helper()
	s, err := f.JS.Stream(testCtx(t, 10*time.Second), f.Names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(testCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// TestInjectionRefusedInCLI: the command refuses the same names before it
// connects anywhere (no server runs in this test).
func TestInjectionRefusedInCLI(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "good.json")
	if err := os.WriteFile(doc, []byte(goodFlow), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, time.Minute)
	for _, bad := range injections {
		if bad == "" || strings.HasPrefix(bad, "-") {
			continue // not an argument the shell could pass as one
		}
		for _, args := range [][]string{
			{"start", "good", "--id", bad},
			{"start", bad},
			{"event", bad, "go"},
			{"event", "r1", bad},
			{"cancel", bad},
			{"status", bad},
			{"deploy", bad, doc},
		} {
			var out, errOut bytes.Buffer
			args = append(args, "--nats", "nats://127.0.0.1:1")
			code := cli.Main(ctx, args, strings.NewReader(""), &out, &errOut)
			if code == 0 || !strings.Contains(errOut.String(), "invalid name") {
				t.Errorf("jetflow %q: exit %d, stderr %q", args, code, errOut.String())
			}
		}
	}
}

// TestInjectionRefusedOnTheWire: inputs whose subject carries a run id or
// event type jetflow never makes, or whose start names an injecting
// workflow, are terminated with the reason, and nothing else happens.
func TestInjectionRefusedOnTheWire(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded: embedded.Config{Listen: "127.0.0.1:-1", Logger: quiet()},
		// r1's start is refused, so r1 never has a record; when the map's
		// order publishes it before r1's event, that event waits for the
		// run as long as UnknownRunWait says, then is terminated.
		Dispatcher: &dispatcher.Config{Logger: quiet(), UnknownRunWait: 3 * time.Second},
		Logger:     quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Stop(context.Background()) }()
	tm := watchTerminations(t, f)
	p := f.Names.Prefix() + ".in."
	msgs := map[string]string{
		p + "ünï.start":                          `{"workflow":"good"}`,
		p + "a~b.cancel":                         `{}`,
		p + strings.Repeat("r", 129) + ".cancel": `{}`,
		p + "r1.event.ünï":                       `{}`,
		p + "r1.start":                           `{"workflow":"a.>"}`,
		p + "r2.start":                           `{"workflow":"ünï"}`,
		p + "r3.start":                           `{"workflow":"x y"}`,
		p + "r4.event.go.more":                   `{}`,
		p + "r5.result.extra":                    `{}`,
	}
	var seqs []uint64
	subjectOf := map[uint64]string{}
	for subject, body := range msgs {
		m := nats.NewMsg(subject)
		m.Data = []byte(body)
		ack, err := f.JS.PublishMsg(ctx, m)
		if err != nil {
			t.Fatalf("%s: %v", subject, err)
		}
		seqs = append(seqs, ack.Sequence)
		subjectOf[ack.Sequence] = subject
	}
	natstest.WaitFor(t, 30*time.Second, "every injecting input terminated", func() error {
		for _, s := range seqs {
			if r, ok := tm.get(s); !ok || r == "" {
				return errorString("not yet: " + subjectOf[s])
			}
		}
		return nil
	})
	for _, s := range seqs {
		r, _ := tm.get(s)
		if !strings.Contains(r, "invalid name") && !strings.Contains(r, "subject") {
			t.Errorf("seq %d terminated for %q", s, r)
		}
	}
	if entries, err := f.Runs.List(ctx, nil); err != nil || len(entries) != 0 {
		t.Fatalf("runs created: %v, %v", entries, err)
	}
}
