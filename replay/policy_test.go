package replay_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// TestReplayUsesTheDeployedPolicy runs workflows whose retries follow
// policies deployed with them (none of them the defaults, and neither
// the dispatchers nor the replay are told anything about them) and checks
// that each replay rebuilds the saved record byte for byte.
func TestReplayUsesTheDeployedPolicy(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	quiet := slog.New(slog.DiscardHandler)
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded:   embedded.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir(), Logger: quiet},
		Dispatcher: &dispatcher.Config{RetryDelay: 20 * time.Millisecond, UnknownRunWait: unknownRunWait, Logger: quiet},
		Logger:     quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop(context.Background()) })

	doc := func(revision string) []byte {
		return fmt.Appendf(nil, `{"$workflow":"0.2","revision":%q,"initial":"a","states":{
 "a":{"work":{"task":"stubborn","version":"1"},"then":"ok","catch":"caught"},
 "ok":{"final":true},"caught":{"final":true}}}`, revision)
	}
	for name, pol := range map[string]string{
		"patient": `{"stubborn@1":{"maxAttempts":5,"initialInterval":"30ms","maxInterval":"90ms","multiplier":3}}`,
		"hasty":   `{"*":{"maxAttempts":2,"initialInterval":"40ms"}}`,
		"strict":  `{"stubborn":{"maxAttempts":6,"initialInterval":"30ms","nonRetryableCodes":["NO"]}}`,
	} {
		p, err := policy.Parse([]byte(pol))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.DeployWith(ctx, name, doc(name+"-1"), fleet.DeployOptions{Policy: p}); err != nil {
			t.Fatalf("deploy %s: %v", name, err)
		}
	}
	w, err := worker.New(f.JS, worker.Config{Names: f.Names, PollWait: 200 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	// stubborn fails its first four attempts with the code its input names.
	if err := w.Register("stubborn", "1", func(_ context.Context, inv worker.Invocation) (any, error) {
		var code string
		if err := inv.DecodeInput(&code); err != nil {
			return nil, err
		}
		if inv.Attempt < 5 {
			return nil, worker.WithCode(code, errors.New("not yet"))
		}
		return inv.Attempt, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })

	b := &bundle{f: f, ctx: ctx, src: replay.Source{
		JS: f.JS, Names: f.Names, Registry: f.Registry, Runs: f.Runs,
	}}
	cases := []struct{ workflow, run, code, state, result string }{
		{"patient", "patient-1", "LATER", "/states/ok", "5"},
		{"hasty", "hasty-1", "LATER", "/states/caught", ""},
		{"strict", "strict-1", "NO", "/states/caught", ""},
		{"strict", "strict-2", "LATER", "/states/ok", "5"},
	}
	for _, c := range cases {
		if err := f.Client.StartRun(ctx, c.workflow, c.run, c.code); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		st := b.wait(t, c.run)
		if st.Status != wire.StatusDone || st.State != c.state || (c.result != "" && string(st.Result) != c.result) {
			t.Fatalf("run %s ended %s in %s with %s, want done in %s", c.run, st.Status, st.State, st.Result, c.state)
		}
		rep := b.checkEqual(t, c.run)
		if rep.Info.Applied < 2 {
			t.Errorf("run %s: replay applied %d inputs", c.run, rep.Info.Applied)
		}
	}
}
