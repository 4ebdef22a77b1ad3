package security

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// secret marks every payload the log test sends; no log line may carry it.
const secret = "s3cr3t-4242"

// TestLogsCarryNoPayloads runs good and hostile inputs whose payloads
// carry a secret through a deployment logging at Info (dispatcher, worker,
// embedded server) and checks that no line repeats it: logs carry ids,
// sizes and reasons, not payloads.
func TestLogsCarryNoPayloads(t *testing.T) {
	logs := newCapture(slog.LevelInfo)
	ctx := testCtx(t, 2*time.Minute)
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded:   embedded.Config{Listen: "127.0.0.1:-1", MaxPayload: 2 << 20, Logger: logs.logger()},
		Dispatcher: &dispatcher.Config{Logger: logs.logger(), UnknownRunWait: 200 * time.Millisecond, RetryDelay: 20 * time.Millisecond, MaxInputBytes: 64 << 10},
		Logger:     logs.logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = f.Stop(ctx)
	})
	if _, err := f.Deploy(ctx, "good", []byte(goodFlow)); err != nil {
		t.Fatal(err)
	}
	wk, err := worker.New(f.JS, worker.Config{Names: f.Names, PollWait: 200 * time.Millisecond, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := wk.Register("echo", "1", func(_ context.Context, inv worker.Invocation) (any, error) {
		return map[string]any{"echo": inv.Input, "extra": secret + "-output"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := wk.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = wk.Stop(context.Background()) }()

	// A run start to end, with secrets in its input, output and event.
	if err := f.Client.StartRun(ctx, "good", "logged", map[string]any{"card": secret + "-input"}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 30*time.Second, "run waits", func() error {
		st, err := f.Client.Status(ctx, "logged")
		if err != nil {
			return err
		}
		if st.Status != wire.StatusWaiting {
			return errorString(st.Status)
		}
		return nil
	})
	if err := f.Client.SendEvent(ctx, "logged", "go", map[string]any{"pin": secret + "-event"}); err != nil {
		t.Fatal(err)
	}
	if st, err := f.Client.Wait(ctx, "logged"); err != nil || st.Status != wire.StatusDone || !strings.Contains(string(st.Result), secret) {
		t.Fatalf("run ended %+v, %v", st, err)
	}

	// Hostile inputs carrying the secret, each logged as refused.
	n := f.Names
	hostile := []struct{ subject, body string }{
		{n.Start("bad-json"), `{"workflow":"good","input":"` + secret + `-truncated`},
		{n.Start("no-flow"), `{"workflow":"absent","input":"` + secret + `-unknown-workflow"}`},
		{n.Start("logged"), `{"workflow":"good","input":"` + secret + `-duplicate-start"}`},
		{n.Event("logged", "go"), `{"pin":"` + secret + `-after-the-end"}`},
		{n.Event("nobody", "go"), `{"pin":"` + secret + `-unknown-run"}`},
		{n.Event("logged", "big"), `{"pad":"` + secret + strings.Repeat("x", 70<<10) + `"}`},
		{n.Result("logged"), `{"activation":"a","node":"n","attempt":1,"token":"` + secret + `","output":"` + secret + `-forged"}`},
		{n.Result("logged"), `{"activation":"` + secret + `","output":` + secret + `}`},
		{n.Timer("logged"), `{"timer":"` + secret + `","deadline":"x"}`},
		{n.Cancel("logged"), `{"reason":"` + secret + `-cancel"}`},
		{n.Prefix() + ".in.logged.bogus", `"` + secret + `-bad-subject"`},
	}
	for _, h := range hostile {
		m := nats.NewMsg(h.subject)
		m.Data = []byte(h.body)
		if _, err := f.JS.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	natstest.WaitFor(t, 30*time.Second, "every hostile input handled", func() error {
		return inputsDrained(ctx, f)
	})
	if leaks := logs.containing(secret); len(leaks) > 0 {
		t.Errorf("%d log lines carry a payload:\n%s", len(leaks), strings.Join(leaks, "\n"))
	}
	// The refusals themselves are logged, with ids and sizes.
	for _, want := range []string{"run_id=bad-json", "bytes=", "reason="} {
		if len(logs.containing(want)) == 0 {
			t.Errorf("no log line has %q", want)
		}
	}
	t.Logf("%d log lines at Info and above, none with a payload", len(logs.lines()))
}

type errorString string

func (e errorString) Error() string { return string(e) }
