package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/wire"
)

// revisionRuns starts the runs a check judges: two orders waiting for
// their payment and one paid (done), then deploys order-1b (the same
// document under another revision: every run stays the same) and
// order-2 (a receipt step after the payment's: the done run diverges,
// the waiting ones do not).
func (b *bundle) revisionRuns(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range []string{"o-wait-1", "o-wait-2", "o-paid"} {
		b.startOrder(t, id)
	}
	if err := b.f.Client.SendEvent(ctx, "o-paid", "payment", map[string]any{"amount": 25}); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, "o-paid", "done")
	doc, err := os.ReadFile(filepath.Join("..", "examples", "order.json"))
	if err != nil {
		t.Fatal(err)
	}
	same := bytes.Replace(doc, []byte(`"revision": "order-1"`), []byte(`"revision": "order-1b"`), 1)
	if bytes.Equal(same, doc) {
		t.Fatal(`examples/order.json has no "revision": "order-1"`)
	}
	if _, err := b.f.Deploy(ctx, "order", same); err != nil {
		t.Fatal(err)
	}
	doc2, err := os.ReadFile(filepath.Join("..", "examples", "order-2.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.f.Deploy(ctx, "order", doc2); err != nil {
		t.Fatal(err)
	}
}

// checkJSON decodes a check's report.
type checkJSON struct {
	Revision string `json:"revision"`
	Runs     []struct {
		Run, Revision, Status, Verdict, Text, Error string
		Divergence                                  *struct {
			Input              int
			OldState, NewState string
		}
	} `json:"runs"`
	Summary struct{ Checked, Same, Diverges, Fails, Movable int }
	Text    string   `json:"text"`
	Command string   `json:"command"`
	Migrate string   `json:"migrate"`
	Move    []string `json:"move"`
}

func (k checkJSON) verdicts() map[string]string {
	out := map[string]string{}
	for _, r := range k.Runs {
		out[r.Run] = r.Verdict
	}
	return out
}

// TestCheckRevision: the workflow's check judges the recent runs against
// a deployed revision as `jetflow check-revision` does, on a read-only
// console too: a revision that keeps every run the same, and one under
// which the settled run diverges at its payment's step.
func TestCheckRevision(t *testing.T) {
	b := setup(t, setupOptions{})
	b.revisionRuns(t)

	var k checkJSON
	if status, raw := b.get(t, "/api/workflows/order/check?revision=order-1b", &k); status != http.StatusOK {
		t.Fatalf("check order-1b: %d %s", status, raw)
	}
	if k.Summary.Checked != 3 || k.Summary.Same != 3 || k.Summary.Movable != 2 || k.Summary.Diverges+k.Summary.Fails != 0 {
		t.Errorf("check order-1b: %+v %+v", k.Summary, k.Runs)
	}
	if !strings.HasPrefix(k.Text, "checked 3 runs of order against revision order-1b in ") || !strings.HasSuffix(k.Text, ": 3 same (2 waiting or running may move), 0 diverge, 0 fail") {
		t.Errorf("summary line %q", k.Text)
	}

	k = checkJSON{}
	if status, raw := b.get(t, "/api/workflows/order/check?revision=order-2&runs=10", &k); status != http.StatusOK {
		t.Fatalf("check order-2: %d %s", status, raw)
	}
	v := k.verdicts()
	if v["o-wait-1"] != "same" || v["o-wait-2"] != "same" || v["o-paid"] != "diverges" || k.Summary.Diverges != 1 || k.Summary.Movable != 2 {
		t.Fatalf("check order-2: %+v %+v", k.Summary, k.Runs)
	}
	for _, r := range k.Runs {
		if r.Run != "o-paid" {
			continue
		}
		if r.Divergence == nil || r.Divergence.Input < 2 || r.Revision != "order-1" || r.Status != "done" ||
			!strings.HasPrefix(r.Text, fmt.Sprintf("diverges at input %d ", r.Divergence.Input)) || r.Divergence.OldState == r.Divergence.NewState {
			t.Errorf("the diverging run: %+v %+v", r, r.Divergence)
		}
	}
	if !strings.HasPrefix(k.Command, "jetflow check-revision order FILE --runs 10 --nats ") {
		t.Errorf("command %q", k.Command)
	}
	if !strings.HasPrefix(k.Migrate, "jetflow migrate --to order-2 --workflow order --run o-wait-1,o-wait-2 --yes --nats ") {
		t.Errorf("migrate command %q", k.Migrate)
	}
	if strings.Join(k.Move, ",") != "o-wait-1,o-wait-2" {
		t.Errorf("the runs to move %q", k.Move)
	}
	// The runs on order-1 may move onto both later revisions, newest first.
	var wf struct{ CheckRevisions []string }
	if status, _ := b.get(t, "/api/workflows/order", &wf); status != http.StatusOK || strings.Join(wf.CheckRevisions, ",") != "order-2,order-1b" {
		t.Errorf("the revisions offered to check: %d %q", status, wf.CheckRevisions)
	}
	// Only the waiting runs: all the same.
	k = checkJSON{}
	if b.get(t, "/api/workflows/order/check?revision=order-2&status=waiting", &k); k.Summary.Checked != 2 || k.Summary.Same != 2 {
		t.Errorf("check order-2 of the waiting runs: %+v", k.Summary)
	}

	for path, want := range map[string]int{
		"/api/workflows/order/check":                           http.StatusBadRequest,
		"/api/workflows/order/check?revision=order-9":          http.StatusNotFound,
		"/api/workflows/nosuch/check?revision=order-2":         http.StatusNotFound,
		"/api/workflows/order/check?revision=order-2&runs=0":   http.StatusBadRequest,
		"/api/workflows/order/check?revision=order-2&runs=x":   http.StatusBadRequest,
		"/api/workflows/order/check?revision=order-2&status=z": http.StatusBadRequest,
	} {
		var e apiError
		if status, raw := b.get(t, path, &e); status != want || e.Error == "" {
			t.Errorf("GET %s: %d %s, want %d with an error", path, status, raw, want)
		}
	}
}

// TestMigrateBulkAction: from the check, the waiting runs are migrated
// by a bulk job the console submits as `jetflow migrate --to REV
// --workflow W --yes` would; the job moves them, leaves the settled run,
// and the audit log holds the submission with its command.
func TestMigrateBulkAction(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	b.revisionRuns(t)

	for body, want := range map[string]string{
		`{"operation":"migrate","filter":{"workflow":"order"}}`:                            "needs the revision",
		`{"operation":"cancel","revision":"order-2","filter":{"workflow":"order"}}`:        "goes with operation migrate only",
		`{"operation":"migrate","revision":"order-9","filter":{"workflow":"order"}}`:       `revision "order-9" of workflow order is not deployed`,
		`{"operation":"migrate","revision":"order-2","filter":{"workflow":"order"},"x":1}`: "not the expected JSON",
	} {
		var e apiError
		if status := b.postJSON(t, "/api/bulk/count", body, &e); status != http.StatusBadRequest || !strings.Contains(e.Error, want) {
			t.Errorf("count %s: %d %q, want 400 mentioning %q", body, status, e.Error, want)
		}
	}
	var n bulkCountView
	body := `{"operation":"migrate","revision":"order-2","reason":"receipts","filter":{"workflow":"order"}}`
	if status := b.postJSON(t, "/api/bulk/count", body, &n); status != http.StatusOK || n.Matched != 3 || n.Eligible != 2 {
		t.Fatalf("count: %d %+v", status, n)
	}
	want := "jetflow migrate --to order-2 --workflow order --reason receipts --yes --nats " + b.f.URL()
	if !strings.HasPrefix(n.Command, want) {
		t.Errorf("command %q, want it to start %q", n.Command, want)
	}
	var j jobJSON
	submit, _ := json.Marshal(map[string]any{"operation": "migrate", "revision": "order-2", "reason": "receipts", "filter": n.Filter})
	if status := b.postJSON(t, "/api/jobs", string(submit), &j); status != http.StatusCreated || j.Revision != "order-2" || j.Command != n.Command {
		t.Fatalf("submit: %d %+v", status, j)
	}
	natstest.WaitFor(t, 2*time.Minute, "job "+j.ID+" to be done", func() error {
		var now jobJSON
		if status, raw := b.get(t, "/api/jobs/"+j.ID, &now); status != http.StatusOK {
			return fmt.Errorf("GET job: %d %s", status, raw)
		}
		if now.State != wire.JobDone {
			return fmt.Errorf("job is %s (%d/%d)", now.State, now.Sent, now.Matched)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range []string{"o-wait-1", "o-wait-2"} {
		natstest.WaitFor(t, 2*time.Minute, id+" on order-2", func() error {
			st, err := b.f.Client.Status(ctx, id)
			if err == nil && st.Revision != "order-2" {
				return fmt.Errorf("%s is on %s", id, st.Revision)
			}
			return err
		})
	}
	if st, err := b.f.Client.Status(ctx, "o-paid"); err != nil || st.Revision != "order-1" {
		t.Errorf("the settled run: %+v %v", st, err)
	}
	// Every waiting run is on the newest revision now: the workflow's page
	// offers no revision to check, where it offered order-2 and order-1b.
	natstest.WaitFor(t, 2*time.Minute, "no revision offered to check", func() error {
		var wf struct{ CheckRevisions []string }
		if status, _ := b.get(t, "/api/workflows/order", &wf); status != http.StatusOK || len(wf.CheckRevisions) != 0 {
			return fmt.Errorf("the revisions offered to check: %d %q", status, wf.CheckRevisions)
		}
		return nil
	})
	p := (&front{c: b.c, url: b.url}).auditEntries(t, nil, "")
	found := false
	for _, e := range p.Entries {
		if e.Action == "jobs-create" && e.Job == j.ID {
			found = true
			if e.Result != wire.AuditAccepted || e.Command != n.Command || !strings.Contains(e.Detail, "migrate") || !strings.Contains(e.Detail, "to revision order-2") {
				t.Errorf("audit entry %+v", e.AuditEntry)
			}
		}
	}
	if !found {
		t.Errorf("no audit entry of job %s in %+v", j.ID, p.Entries)
	}
}

// TestMigrateNamesTheRunsFoundTheSame: the migration the check offers is
// a job over exactly the runs it found the same. Under order-q, which
// rejects orders of more than 5, the waiting order of 9 diverges: the
// job names the two others only, so it is never offered the move (a job
// over the check's filter matched it too, and it refused).
func TestMigrateNamesTheRunsFoundTheSame(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b.startOrder(t, "o-small-1")
	b.startOrder(t, "o-small-2")
	if err := b.f.Client.StartRun(ctx, "order", "o-big", map[string]any{"sku": "KB-42", "qty": 9, "customer": "ada"}); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, "o-big", "waiting")
	doc, err := os.ReadFile(filepath.Join("..", "examples", "order.json"))
	if err != nil {
		t.Fatal(err)
	}
	q := bytes.Replace(doc, []byte(`"revision": "order-1"`), []byte(`"revision": "order-q"`), 1)
	q = bytes.Replace(q, []byte(`{"guard": {"$not": "$.context.data.inStock"}, "to": "rejected"},`),
		[]byte(`{"guard": {"$gt": ["$.context.data.order.qty", 5]}, "to": "rejected"}, {"guard": {"$not": "$.context.data.inStock"}, "to": "rejected"},`), 1)
	if bytes.Count(q, []byte("order.qty")) != 1 {
		t.Fatal("examples/order.json changed: order-q adds no guard on the quantity")
	}
	if _, err := b.f.Deploy(ctx, "order", q); err != nil {
		t.Fatal(err)
	}

	var k checkJSON
	if status, raw := b.get(t, "/api/workflows/order/check?revision=order-q", &k); status != http.StatusOK {
		t.Fatalf("check order-q: %d %s", status, raw)
	}
	v := k.verdicts()
	if v["o-small-1"] != "same" || v["o-small-2"] != "same" || v["o-big"] != "diverges" || k.Summary.Movable != 2 {
		t.Fatalf("check order-q: %+v %+v", k.Summary, k.Runs)
	}
	if strings.Join(k.Move, ",") != "o-small-1,o-small-2" || !strings.HasPrefix(k.Migrate, "jetflow migrate --to order-q --workflow order --run o-small-1,o-small-2 --yes ") {
		t.Fatalf("the migration offered: %q, %q", k.Move, k.Migrate)
	}

	// What the page's migrate button sends: the workflow and the runs.
	var n bulkCountView
	body, _ := json.Marshal(map[string]any{"operation": "migrate", "revision": "order-q", "filter": map[string]any{"workflow": "order", "runs": k.Move}})
	if status := b.postJSON(t, "/api/bulk/count", string(body), &n); status != http.StatusOK || n.Matched != 2 || n.Eligible != 2 || n.Command != k.Migrate {
		t.Fatalf("count: %d %+v", status, n)
	}
	var j jobJSON
	submit, _ := json.Marshal(map[string]any{"operation": "migrate", "revision": "order-q", "filter": n.Filter})
	if status := b.postJSON(t, "/api/jobs", string(submit), &j); status != http.StatusCreated {
		t.Fatalf("submit: %d %+v", status, j)
	}
	natstest.WaitFor(t, 2*time.Minute, "job "+j.ID+" to be done", func() error {
		if status, raw := b.get(t, "/api/jobs/"+j.ID, &j); status != http.StatusOK {
			return fmt.Errorf("GET job: %d %s", status, raw)
		}
		if j.State != wire.JobDone {
			return fmt.Errorf("job is %s (%d/%d)", j.State, j.Sent, j.Matched)
		}
		return nil
	})
	if j.Matched != 2 || j.Sent != 2 || j.Skipped+j.Errors != 0 {
		t.Errorf("the job handled %d runs (sent %d, skipped %d, errors %d); want the 2 the check found the same", j.Matched, j.Sent, j.Skipped, j.Errors)
	}
	for _, id := range []string{"o-small-1", "o-small-2"} {
		natstest.WaitFor(t, 2*time.Minute, id+" on order-q", func() error {
			st, err := b.f.Client.Status(ctx, id)
			if err == nil && st.Revision != "order-q" {
				return fmt.Errorf("%s is on %s", id, st.Revision)
			}
			return err
		})
	}
	if st, err := b.f.Client.Status(ctx, "o-big"); err != nil || st.Revision != "order-1" || st.Status != wire.StatusWaiting {
		t.Errorf("the diverging run: %+v %v", st, err)
	}
}
