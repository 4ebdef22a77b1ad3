package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/runindex"
	"github.com/jetflow/jetflow/wire"
)

// searchPolicy declares the search attribute the tests here filter on.
const searchPolicy = `{"$run": {"search": {"customer": "/input/customer"}}}`

// deploySearchGate deploys the gate document as workflow name with a
// policy that declares customer, and starts runs (id to customer) that
// wait at the gate.
func deploySearchGate(t *testing.T, f *fleet.Fleet, name string, runs map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	p, err := policy.Parse([]byte(searchPolicy))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.DeployWith(ctx, name, []byte(gateDoc), fleet.DeployOptions{Policy: p}); err != nil {
		t.Fatal(err)
	}
	for id, customer := range runs {
		if err := f.Client.StartRun(ctx, name, id, map[string]any{"wait": true, "customer": customer}); err != nil {
			t.Fatal(err)
		}
	}
	for id := range runs {
		waitStatus(t, f, id, wire.StatusWaiting)
	}
}

// listIDs runs list --json with args and returns the run ids, in order.
func listIDs(t *testing.T, f *fleet.Fleet, args ...string) string {
	t.Helper()
	out, errOut, exit := verb(t, f, append([]string{"list", "--json"}, args...)...)
	var runs []wire.Status
	if err := json.Unmarshal([]byte(out), &runs); err != nil || exit != 0 {
		t.Fatalf("list --json %v: exit %d, %v: %q %q", args, exit, err, out, errOut)
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.Run
	}
	return strings.Join(ids, " ")
}

// TestBulkCancelWhere: a bulk operation takes --where as list does: the
// count, the job the dispatcher carries out (which reads each run's
// attributes from its record) and list, by index and by scan, all keep
// only the runs whose customer is the one named.
func TestBulkCancelWhere(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	deploySearchGate(t, f, "sgate", map[string]string{"w-0": "c-7", "w-1": "c-8", "w-2": "c-7", "w-3": "c-9"})

	if got := listIDs(t, f, "--where", "customer=c-7"); got != "w-0 w-2" {
		t.Errorf("list --where customer=c-7: %q, want w-0 w-2", got)
	}
	if got := listIDs(t, f, "--where", "customer=c-7", "--scan"); got != "w-0 w-2" {
		t.Errorf("list --where customer=c-7 --scan: %q, want w-0 w-2", got)
	}
	bulk := []string{"cancel", "--where", "customer=c-7"}
	out, errOut, exit := verb(t, f, append(bulk, "--dry-run")...)
	if exit != 0 || !strings.Contains(out, "2 runs match; 2 can take a cancel now") {
		t.Fatalf("dry run: exit %d:\n%s%s", exit, out, errOut)
	}
	out, errOut, exit = verb(t, f, append(bulk, "--reason", "recall", "--yes")...)
	m := regexp.MustCompile(`job (\S+) submitted`).FindStringSubmatch(out)
	if exit != 0 || m == nil || !regexp.MustCompile(`job \S+ cancel \[#{30}\] 2/2  sent 2  skipped 0  errors 0  done`).MatchString(out) {
		t.Fatalf("bulk cancel --where: exit %d:\n%s%s", exit, out, errOut)
	}
	for id, want := range map[string]string{"w-0": wire.StatusCancelled, "w-1": wire.StatusWaiting, "w-2": wire.StatusCancelled, "w-3": wire.StatusWaiting} {
		waitStatus(t, f, id, want)
	}
	out, _, exit = verb(t, f, "jobs", "show", m[1])
	var j wire.Job
	if err := json.Unmarshal([]byte(out), &j); err != nil || exit != 0 || j.Filter.Where["customer"] != "c-7" {
		t.Errorf("jobs show: the job's filter keeps no where: exit %d, %v:\n%s", exit, err, out)
	}
	if got := listIDs(t, f, "--where", "customer=c-7", "--status", "waiting"); got != "" {
		t.Errorf("waiting runs of c-7 after the cancel: %q, want none", got)
	}
	if _, errOut, exit := verb(t, f, "cancel", "--where", "customer=c-7", "--where", "customer=c-8", "--yes"); exit != 2 || !strings.Contains(errOut, `customer is already "c-7"`) {
		t.Errorf("two values for one name: exit %d, %q", exit, errOut)
	}
	if got := listIDs(t, f, "--where", fmt.Sprintf("customer=%s", "c-0")); got != "" {
		t.Errorf("list --where of a customer no run has: %q", got)
	}
}

// TestIndexRebuildAndOff: a search attribute a later revision declares
// finds the runs of an older one once index rebuild has had the
// dispatchers index every run again; a dispatcher started with the index
// off leaves its mark, after which list warns and reads the run records,
// index status says so and a rebuild is refused.
func TestIndexRebuildAndOff(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	if _, err := f.Deploy(ctx, "rgate", []byte(gateDoc)); err != nil {
		t.Fatal(err)
	}
	for id, customer := range map[string]string{"r-0": "c-1", "r-1": "c-2"} {
		if err := f.Client.StartRun(ctx, "rgate", id, map[string]any{"wait": true, "customer": customer}); err != nil {
			t.Fatal(err)
		}
	}
	waitStatus(t, f, "r-0", wire.StatusWaiting)
	waitStatus(t, f, "r-1", wire.StatusWaiting)
	if got := listIDs(t, f, "--where", "customer=c-1"); got != "" {
		t.Errorf("before any revision declares customer: %q, want none", got)
	}
	p, err := policy.Parse([]byte(searchPolicy))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.DeployWith(ctx, "rgate", []byte(strings.Replace(gateDoc, `"revision":"g1"`, `"revision":"g2"`, 1)), fleet.DeployOptions{Policy: p}); err != nil {
		t.Fatal(err)
	}
	out, errOut, exit := verb(t, f, "index", "rebuild")
	if exit != 0 || !strings.Contains(out, "index rebuild requested") || !strings.Contains(out, "every run change is indexed") {
		t.Fatalf("index rebuild: exit %d:\n%s%s", exit, out, errOut)
	}
	if got := listIDs(t, f, "--where", "customer=c-1"); got != "r-0" {
		t.Errorf("after the rebuild, list --where customer=c-1: %q, want r-0 (a g1 run, found by g2's attribute)", got)
	}
	if out, _, exit := verb(t, f, "index", "status"); exit != 0 || !strings.Contains(out, "on: every run change is indexed") {
		t.Errorf("index status: exit %d: %s", exit, out)
	}

	// A second dispatcher with the index off leaves the mark.
	off := dispatcher.Config{Index: runindex.Config{Off: true, Holder: "d-off"}}
	g, err := fleet.Start(ctx, fleet.Config{URL: f.URL(), SkipProvision: true, Dispatcher: &off, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Stop(context.Background()) })
	out, errOut, exit = verb(t, f, "list", "--json", "--where", "customer=c-2")
	if exit != 0 || !strings.Contains(out, `"r-1"`) || strings.Contains(out, `"r-0"`) ||
		!strings.Contains(errOut, "warning: the run index is off since") || !strings.Contains(errOut, "dispatcher d-off") {
		t.Errorf("list with the index off: exit %d:\n%s%s", exit, out, errOut)
	}
	if out, _, exit := verb(t, f, "index", "status"); exit != 0 || !strings.Contains(out, "off since") {
		t.Errorf("index status with the index off: exit %d: %s", exit, out)
	}
	if _, errOut, exit := verb(t, f, "index", "rebuild"); exit != 2 || !strings.Contains(errOut, "the run index is off") {
		t.Errorf("index rebuild with the index off: exit %d, %q", exit, errOut)
	}
	if _, errOut, exit := verb(t, f, "list", "--status", "removed"); exit != 2 || !strings.Contains(errOut, "the run index is off") {
		t.Errorf("list --status removed with the index off: exit %d, %q", exit, errOut)
	}
}
