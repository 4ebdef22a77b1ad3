package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestResetFromTheHistory: the console resets a run to an input of its
// history timeline and answers with the equivalent command; the history
// then marks the inputs the reset took off the run's line superseded,
// the reset applied, and its replay is still equal.
func TestResetFromTheHistory(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{actions: true})
	b.startOrder(t, "order-r")
	var before historyView
	b.get(t, "/api/runs/order-r/history", &before)
	if len(before.Entries) != 4 {
		t.Fatalf("history before the reset: %+v, want the start and three results", before.Entries)
	}
	start := before.Entries[0].Seq
	if res := b.post(t, "/api/runs/order-r/reset", `{"to":0}`, nil); res.StatusCode != http.StatusBadRequest {
		t.Errorf("a reset to 0: %s, want 400", res.Status)
	}
	req, err := http.NewRequest(http.MethodPost, b.url+"/api/runs/order-r/reset", strings.NewReader(fmt.Sprintf(`{"to":%d,"reason":"rerun the checks"}`, start)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(actionHeader, "1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	var sent struct {
		Seq     uint64 `json:"seq"`
		Command string `json:"command"`
	}
	if err := json.NewDecoder(res.Body).Decode(&sent); err != nil || res.StatusCode != http.StatusAccepted {
		t.Fatalf("reset action: %s, %v", res.Status, err)
	}
	if want := fmt.Sprintf("jetflow reset order-r --to %d --nats ", start); !strings.HasPrefix(sent.Command, want) {
		t.Errorf("equivalent command %q, want it to begin %q", sent.Command, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := b.f.Client.Resetted(ctx, "order-r", sent.Seq); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, "order-r", "waiting")

	var after historyView
	b.get(t, "/api/runs/order-r/history", &after)
	outcomes := map[uint64]string{}
	for _, e := range after.Entries {
		outcomes[e.Seq] = e.Outcome
	}
	for _, e := range before.Entries[1:] {
		if outcomes[e.Seq] != "superseded" {
			t.Errorf("result %d: %s, want superseded", e.Seq, outcomes[e.Seq])
		}
	}
	if outcomes[start] != "applied" || outcomes[sent.Seq] != "applied" || after.Replay.Verdict != "equal" {
		t.Fatalf("start %s, reset %s, replay %+v; want both applied and the replay equal", outcomes[start], outcomes[sent.Seq], after.Replay)
	}
}

// A read-only console refuses the reset action.
func TestResetNeedsConsoleActions(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{})
	b.startOrder(t, "order-ro")
	if res := b.post(t, "/api/runs/order-ro/reset", `{"to":1}`, nil); res.StatusCode != http.StatusForbidden {
		t.Errorf("reset on a read-only console: %s, want 403", res.Status)
	}
}
