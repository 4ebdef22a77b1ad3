package main

import (
	"strings"
	"testing"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/wire"
)

// TestStartControls: start's idempotency, singleton and debounce flags,
// and what status says of a start they kept from starting.
func TestStartControls(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	wait := `{"wait":true}`

	out, errOut, exit := verb(t, f, "start", "gate", "--id", "idem-1", "--idempotency-key", "cart-77", "--input", wait)
	if exit != 0 || out != "idem-1\n" {
		t.Fatalf("first start: exit %d, %q, %q", exit, out, errOut)
	}
	out, errOut, exit = verb(t, f, "start", "gate", "--id", "idem-2", "--idempotency-key", "cart-77", "--input", wait)
	if exit != 0 || out != "idem-1\n" || !strings.Contains(errOut, `idempotency key "cart-77" started run idem-1 before: run idem-2 was not started`) {
		t.Fatalf("second start with the key: exit %d, stdout %q, stderr %q; want idem-1 answered", exit, out, errOut)
	}

	out, errOut, exit = verb(t, f, "start", "gate", "--id", "one-1", "--singleton-key", "tenant-4", "--input", wait)
	if exit != 0 || out != "one-1\n" {
		t.Fatalf("singleton start: exit %d, %q, %q", exit, out, errOut)
	}
	waitStatus(t, f, "one-1", wire.StatusWaiting)
	out, errOut, exit = verb(t, f, "start", "gate", "--id", "one-2", "--singleton-key", "tenant-4")
	if exit != 1 || out != "" || !strings.Contains(errOut, `run one-1 holds singleton key "tenant-4" and has not settled`) {
		t.Fatalf("second singleton start: exit %d, stdout %q, stderr %q; want a refusal naming one-1", exit, out, errOut)
	}
	out, _, exit = verb(t, f, "status", "one-2")
	if exit != 1 || !strings.Contains(out, `run one-2 was not started: run one-1 holds singleton key "tenant-4"`) {
		t.Fatalf("status of the refused run: exit %d, %q", exit, out)
	}
	out, errOut, exit = verb(t, f, "start", "gate", "--id", "one-3", "--singleton-key", "tenant-4", "--singleton", "queue")
	if exit != 0 || out != "one-3\n" || !strings.Contains(errOut, "run one-3 is queued behind run one-1") {
		t.Fatalf("queued start: exit %d, stdout %q, stderr %q", exit, out, errOut)
	}
	if _, errOut, exit = verb(t, f, "event", "one-1", "go"); exit != 0 {
		t.Fatalf("event: %d %s", exit, errOut)
	}
	waitStatus(t, f, "one-3", wire.StatusDone)

	for _, id := range []string{"deb-1", "deb-2"} {
		out, errOut, exit = verb(t, f, "start", "gate", "--id", id, "--debounce-key", "doc-9", "--debounce", "1s")
		if exit != 0 || out != id+"\n" || !strings.Contains(errOut, "is held by debounce key \"doc-9\"") {
			t.Fatalf("debounced start %s: exit %d, stdout %q, stderr %q", id, exit, out, errOut)
		}
	}
	waitStatus(t, f, "deb-2", wire.StatusDone)
	natstest.WaitFor(t, verbBound, "status of deb-1 says it was replaced", func() error {
		out, _, _ := verb(t, f, "status", "deb-1")
		if !strings.Contains(out, `run deb-1 will not start: run deb-2's start with debounce key "doc-9" replaced it`) {
			return errString(out)
		}
		return nil
	})

	for _, c := range []struct{ args, want string }{
		{"--singleton queue", "give --singleton-key KEY too"},
		{"--singleton-key k --singleton later", `--singleton "later": give refuse or queue`},
		{"--debounce-key k", "--debounce-key needs --debounce D"},
		{"--debounce 2s", "--debounce needs --debounce-key KEY"},
		{"--debounce-key k --debounce 25h", "is longer than 24h0m0s"},
	} {
		_, errOut, exit := verb(t, f, append([]string{"start", "gate"}, strings.Fields(c.args)...)...)
		if exit == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("start gate %s: exit %d, stderr %q; want %q", c.args, exit, errOut, c.want)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }
