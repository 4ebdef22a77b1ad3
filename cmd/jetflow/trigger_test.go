package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/natstest"
)

const trigFlow = `{"$workflow":"0.2","revision":"t1","initial":"wait","states":{
 "wait":{"on":[{"event":"paid","to":"done"}]},
 "done":{"final":true}}}`

const trigFile = `{
 "orders":   {"subject": "shop.orders"},
 "payments": {"subject": "shop.payments", "action": "event", "event": "paid", "run": {"$concat": ["orders-", "$.data.order"]}, "key": "$.data.payment"}
}`

// TestDeployTriggersSurviveARestart: deploy --triggers refuses a bad file
// naming the member; a deployed subject trigger starts a run once per
// key from a message published by a plain NATS client, and after serve
// restarts on the same store an event trigger correlates to that run.
func TestDeployTriggersSurviveARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow, file, bad := filepath.Join(dir, "flow.json"), filepath.Join(dir, "triggers.json"), filepath.Join(dir, "bad.json")
	for p, body := range map[string]string{flow: trigFlow, file: trigFile, bad: `{"t": {"subject": "jetflow.in.x.start"}}`} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	args := []string{"serve", "--data", data, "--listen", "127.0.0.1:-1", "--http", "off"}
	d := startDaemon(t, nil, args...)
	out, _, exit := runEnv(t, nil, "", "deploy", "orders", flow, "--triggers", bad, "--nats", d.NATS)
	if exit != 1 || !strings.Contains(out, bad+": TRIGGERS /t/subject: ") {
		t.Fatalf("deploy with a bad trigger file: exit %d: %s", exit, out)
	}
	out, errOut, exit := runEnv(t, nil, "", "deploy", "orders", flow, "--triggers", file, "--nats", d.NATS)
	if exit != 0 || !strings.Contains(out, "trigger orders: subject shop.orders starts a run") || !strings.Contains(out, "trigger payments: subject shop.payments sends event paid") {
		t.Fatalf("deploy --triggers: exit %d: %s%s", exit, out, errOut)
	}
	publish := func(url, subject, id, body string) {
		t.Helper()
		nc, err := nats.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		m := nats.NewMsg(subject)
		m.Data = []byte(body)
		m.Header.Set("Nats-Msg-Id", id)
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	status := func(url, run string) string {
		out, _, _ := runEnv(t, nil, "", "status", run, "--json", "--nats", url)
		return out
	}
	// Deploy made the trigger streams: a message published as soon as it
	// returned waits there until the dispatcher binds the trigger.
	publish(d.NATS, "shop.orders", "A1", `{"order":"A1"}`)
	natstest.WaitFor(t, 2*time.Minute, "a run started by shop.orders", func() error {
		if s := status(d.NATS, "orders-A1"); !strings.Contains(s, `"status":"waiting"`) {
			return fmt.Errorf("status: %s", s)
		}
		return nil
	})
	if exit := d.interrupt(); exit != 0 {
		t.Fatalf("serve exited %d:\n%s", exit, d.stderr)
	}
	d = startDaemon(t, nil, args...)
	publish(d.NATS, "shop.payments", "p-1", `{"order":"A1","payment":"pay-1"}`)
	out, errOut, exit = runEnv(t, nil, "", "status", "orders-A1", "--wait", "--nats", d.NATS)
	if exit != 0 || !strings.Contains(out, "done") {
		t.Fatalf("after the payment: exit %d: %s%s\nserve:\n%s", exit, out, errOut, d.stderr)
	}
}
