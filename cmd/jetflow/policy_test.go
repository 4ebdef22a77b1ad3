package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
)

// TestDeployWithPolicy deploys the order example with a policy file and
// reads the policy back from deploy, workflows and the task consumer.
func TestDeployWithPolicy(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	f, err := fleet.Start(ctx, fleet.Config{Embedded: embedded.Config{Listen: "127.0.0.1:-1", Logger: quiet}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop(context.Background()) })
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pol := write("policy.json", `{"ship@1":{"maxAttempts":5,"startToClose":"30s","nonRetryableCodes":["NO_ADDRESS"],"attemptTimeout":"2m","scheduleToClose":"5m","maxConcurrency":4,"ratePerSecond":2.5},"*":{"initialInterval":"250ms"}}`)
	const order = "../../examples/order.json"

	out, errOut, exit := runEnv(t, nil, "", "deploy", "order", order, "--policy", pol, "--nats", f.URL())
	if exit != 0 {
		t.Fatalf("deploy --policy: exit %d: %s%s", exit, out, errOut)
	}
	for _, want := range []string{
		`policy {"*":{"initialInterval":"250ms"},"ship@1":{"attemptTimeout":"2m0s","maxAttempts":5,"maxConcurrency":4,"nonRetryableCodes":["NO_ADDRESS"],"ratePerSecond":2.5,"scheduleToClose":"5m0s","startToClose":"30s"}}`,
		"limits: ship@1 at most 4 attempts in flight, at most 2.5 starts/s (burst 1)\n",
		"ship@1         jetflow.task.ship.1         task_ship_1\n",
		"ship@1         5         250ms x2 up to 1m0s  30s             2m0s (all 5m0s)  NO_ADDRESS\n",
		"notify@1       3         250ms x2 up to 1m0s  1m0s            10m0s            -\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("deploy output lacks %q:\n%s", want, out)
		}
	}
	c, err := f.JS.Consumer(ctx, f.Names.TaskStream(), f.Names.TaskConsumer("ship", "1"))
	if err != nil || c.CachedInfo().Config.AckWait != 30*time.Second {
		t.Fatalf("ship's consumer after the deploy: %v", err)
	}

	// --json and workflows --json carry the policy.
	out, _, exit = runEnv(t, nil, "", "deploy", "order", order, "--policy", pol, "--json", "--nats", f.URL())
	var rep struct {
		Hash   string
		Policy map[string]map[string]any
		Tasks  []struct {
			Task           string
			StartToClose   string
			Retry          struct{ MaxAttempts int }
			MaxConcurrency int
			RatePerSecond  float64
			RateBurst      int
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); exit != 0 || err != nil {
		t.Fatalf("deploy --json: exit %d, %v: %s", exit, err, out)
	}
	ship, first := rep.Tasks[len(rep.Tasks)-1], rep.Tasks[0]
	if rep.Policy["ship@1"]["startToClose"] != "30s" || len(rep.Tasks) != 5 || ship.Task != "ship" ||
		ship.StartToClose != "30s" || ship.Retry.MaxAttempts != 5 || first.StartToClose != "1m0s" || first.Retry.MaxAttempts != 3 ||
		ship.MaxConcurrency != 4 || ship.RatePerSecond != 2.5 || ship.RateBurst != 1 || first.MaxConcurrency != 1000 || first.RatePerSecond != 0 {
		t.Errorf("deploy --json: %s", out)
	}
	out, _, exit = runEnv(t, nil, "", "workflows", "--json", "--nats", f.URL())
	var list []struct {
		Revisions []struct {
			Hash   string
			Policy map[string]any
		}
	}
	if err := json.Unmarshal([]byte(out), &list); exit != 0 || err != nil || len(list) != 1 ||
		list[0].Revisions[0].Hash != rep.Hash || list[0].Revisions[0].Policy["ship@1"] == nil {
		t.Errorf("workflows --json: exit %d, %v: %s", exit, err, out)
	}

	// The policy is part of the revision.
	other := write("other.json", `{"ship@1":{"maxAttempts":2}}`)
	out, _, exit = runEnv(t, nil, "", "deploy", "order", order, "--policy", other, "--nats", f.URL())
	if exit != 1 || !strings.HasPrefix(out, `JF0021 /revision revision "order-1" of workflow "order" is already deployed with a different policy`) {
		t.Errorf("another policy under a deployed revision: exit %d, %q", exit, out)
	}

	// A later deploy without a policy puts ship's AckWait back, and says so.
	next := strings.Replace(readTestFile(t, order), `"order-1"`, `"order-2"`, 1)
	out, errOut, exit = runEnv(t, nil, next, "deploy", "order", "-", "--nats", f.URL())
	if exit != 0 || !strings.Contains(out, "note: task ship@1: consumer task_ship_1 now redelivers after 1m0s instead of 30s") ||
		!strings.Contains(out, "note: task ship@1: at most 1000 attempts in flight instead of 4") ||
		!strings.Contains(out, "note: task ship@1: rate limit none instead of 2.5/s (burst 1)") {
		t.Errorf("deploy without a policy after one: exit %d: %s%s", exit, out, errOut)
	}
}

// TestDeployRefusesBadPolicies needs no server: the policy is checked
// before deploy connects.
func TestDeployRefusesBadPolicies(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, policy, want string }{
		{"not JSON", `{"ship@1":`, "POLICY /ship@1 invalid JSON"},
		{"not an object", `[]`, "POLICY '' must be a JSON object"},
		{"bad field", `{"ship@1":{"maxAttempts":0}}`, "POLICY /ship@1/maxAttempts must be an integer from 1 to 1000, not 0"},
		{"unknown field", `{"*":{"timeout":"1s"}}`, `POLICY /*/timeout "timeout" is not a policy field`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, exit := runEnv(t, nil, c.policy, "deploy", "w", "../../examples/order.json", "--policy", "-", "--nats", "nats://127.0.0.1:1")
			if exit != 1 || !strings.HasPrefix(out, c.want) || strings.Count(out, "\n") != 1 {
				t.Errorf("exit %d, %q (stderr %q); want exit 1, %q", exit, out, errOut, c.want)
			}
		})
	}
	_, errOut, exit := runEnv(t, nil, "", "deploy", "w", "../../examples/order.json", "--policy", "/nonexistent/policy.json", "--nats", "nats://127.0.0.1:1")
	if exit != 2 || !strings.Contains(errOut, "--policy: open /nonexistent/policy.json") {
		t.Errorf("a missing policy file: exit %d, %q", exit, errOut)
	}
	_, errOut, exit = runEnv(t, nil, "{}", "deploy", "w", "-", "--policy", "-", "--nats", "nats://127.0.0.1:1")
	if exit != 2 || !strings.Contains(errOut, "cannot both be -") {
		t.Errorf("document and policy both on standard input: exit %d, %q", exit, errOut)
	}
}
