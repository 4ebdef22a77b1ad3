package otherlang

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// TestOrderWorkflowOnOtherLanguages runs the order workflow with its tasks
// served by real processes: the Node.js worker (check-stock, quote-price,
// ship) and `jetflow worker exec` running the Python (score-fraud) and sh
// (notify) scripts. Three orders take the three ways out of the check:
// paid and shipped, out of stock, and refused as fraud; the paid one is
// started, paid and awaited by the Node publisher. The Node tasks take
// longer than the consumers' ack wait, so only heartbeats keep them from
// being redelivered; the Node worker gets SIGTERM while ship runs and must
// finish it before exiting 0. The exec workers then drain too.
func TestOrderWorkflowOnOtherLanguages(t *testing.T) {
	node := requireNode(t)
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed for the exec worker example (apt-get install python3)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root := repoRoot(t)
	bin := buildJetflow(t, ctx)
	const ackWait = 2 * time.Second
	f := startFleet(t, ctx, provision.TaskPolicy{StartToClose: ackWait})
	if _, err := f.Deploy(ctx, "order", readRepoFile(t, "examples/order.json")); err != nil {
		t.Fatal(err)
	}

	ready := filepath.Join(t.TempDir(), "node-ready")
	nodeWorker := start(t, "node worker", filepath.Join(root, "examples", "workers", "node"), []string{
		"JETFLOW_NATS_URL=" + f.URL(),
		"JETFLOW_TASKS=check-stock@1,quote-price@1,ship@1",
		"JETFLOW_READY_FILE=" + ready,
		"JETFLOW_PULL_EXPIRES_MS=1000",
		fmt.Sprintf("JETFLOW_SIMULATED_WORK_MS=%d", (2 * ackWait).Milliseconds()),
	}, node, "worker.js")
	shell := filepath.Join(root, "examples", "workers", "shell")
	fraud := start(t, "exec worker score-fraud", shell, nil,
		bin, "worker", "exec", "--nats", f.URL(), "--task", "score-fraud@1", "--drain-timeout", "20s", "--", python, "score_fraud.py")
	notify := start(t, "exec worker notify", shell, nil,
		bin, "worker", "exec", "--nats", f.URL(), "--task", "notify@1", "--drain-timeout", "20s", "--", "sh", "notify.sh")
	natstest.WaitFor(t, 30*time.Second, "the node worker binds its consumers", func() error {
		if done, err := nodeWorker.exited(); done {
			if err == nil {
				return errors.New("node worker exited with status 0")
			}
			return fmt.Errorf("node worker exited: %w", err)
		}
		_, err := os.Stat(ready)
		return err
	})

	orders := []struct {
		run   string
		input map[string]any
		state string
	}{
		{"order-paid", map[string]any{"sku": "tea", "qty": 2, "customer": "c-7"}, "/states/done"},
		{"order-short", map[string]any{"sku": "mug", "qty": 9, "customer": "c-8"}, "/states/rejected"},
		{"order-fraud", map[string]any{"sku": "tea", "qty": 1, "customer": "c-fraud-3"}, "/states/rejected"},
	}
	// order-paid is driven by the Node publisher, the others by the Go client.
	nodeDir := filepath.Join(root, "examples", "workers", "node")
	natsEnv := []string{"JETFLOW_NATS_URL=" + f.URL()}
	if out := runNode(t, ctx, node, nodeDir, natsEnv, "publish.js", "start", "order", "order-paid", `{"sku":"tea","qty":2,"customer":"c-7"}`); !strings.Contains(out, `"duplicate":false`) {
		t.Errorf("publish.js start printed %q", out)
	}
	for _, o := range orders[1:] {
		if err := f.Client.StartRun(ctx, "order", o.run, o.input); err != nil {
			t.Fatal(err)
		}
	}
	waitStatus(t, ctx, f, "order-paid", wire.StatusWaiting)
	runNode(t, ctx, node, nodeDir, natsEnv, "publish.js", "event", "order-paid", "payment", `{"amount":9}`, "pay-1")
	natstest.WaitFor(t, 30*time.Second, "the node worker starts ship", func() error {
		if !nodeWorker.out.contains(`"msg":"task started","run_id":"order-paid","task":"ship"`) {
			return errors.New("not yet")
		}
		return nil
	})
	if err := nodeWorker.stop(t, 30*time.Second); err != nil {
		t.Errorf("node worker after SIGTERM: %v, want exit status 0", err)
	}
	if !nodeWorker.out.contains(`"msg":"result published","run_id":"order-paid","task":"ship"`) || !nodeWorker.out.contains(`"msg":"stopped"`) {
		t.Errorf("the node worker did not finish ship before stopping")
	}

	var final wire.Status
	if err := json.Unmarshal([]byte(runNode(t, ctx, node, nodeDir, natsEnv, "publish.js", "wait", "order-paid", "60000")), &final); err != nil || final.Status != wire.StatusDone {
		t.Errorf("publish.js wait order-paid: %+v, %v", final, err)
	}
	for _, o := range orders {
		st, err := f.Client.Wait(ctx, o.run)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != wire.StatusDone || st.State != o.state {
			t.Errorf("%s ended %s at %s (error %+v), want done at %s", o.run, st.Status, st.State, st.Error, o.state)
		}
	}

	// What each language computed, as the run records hold it.
	paid := results(t, ctx, f, "order-paid")
	check := paid["/states/check"]
	if check["inStock"] != true || check["total"] != 9.0 || check["risk"] != 0.1 {
		t.Errorf("check of order-paid: %v (want inStock from node, total 9 from node, risk 0.1 from python)", check)
	}
	ship := paid["/states/fulfil/flow/states/ship"]
	if tr, _ := ship["tracking"].(string); !regexp.MustCompile(`^T-[0-9a-f]{10}$`).MatchString(tr) || ship["sku"] != "tea" {
		t.Errorf("ship of order-paid (node): %v", ship)
	}
	note := paid["/states/fulfil/flow/states/notify"]
	if note["notified"] != true || note["channel"] != "sh" || note["tracking"] != ship["tracking"] {
		t.Errorf("notify of order-paid (sh): %v", note)
	}
	if c := results(t, ctx, f, "order-short")["/states/check"]; c["inStock"] != false {
		t.Errorf("check of order-short: %v, want inStock false", c)
	}
	if c := results(t, ctx, f, "order-fraud")["/states/check"]; c["risk"] != 0.95 {
		t.Errorf("check of order-fraud: %v, want risk 0.95", c)
	}
	// Every Node task outlived the ack wait: heartbeats alone kept it.
	for _, task := range []string{"check-stock", "quote-price", "ship"} {
		c, err := f.JS.Consumer(ctx, f.Names.TaskStream(), f.Names.TaskConsumer(task, "1"))
		if err != nil {
			t.Fatal(err)
		}
		if info := c.CachedInfo(); info.NumRedelivered != 0 || info.NumAckPending != 0 {
			t.Errorf("consumer of %s: %d redelivered, %d unacknowledged; want 0 and 0", task, info.NumRedelivered, info.NumAckPending)
		}
	}

	for _, p := range []*process{fraud, notify} {
		if err := p.stop(t, 30*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v, want exit status 0", p.name, err)
		}
	}
}

// TestNodeWorkerHandsBackOnHardStop stops a Node worker whose task cannot
// finish within its grace period: the task is cancelled and the invocation
// handed back with a NAK, so a second worker runs it at once rather than
// after the consumer's five-minute ack wait.
func TestNodeWorkerHandsBackOnHardStop(t *testing.T) {
	node := requireNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := filepath.Join(repoRoot(t), "examples", "workers", "node")
	f := startFleet(t, ctx, provision.TaskPolicy{})
	const shipOnly = `{"$workflow":"0.2","revision":"s1","initial":"ship","states":{
 "ship":{"work":{"task":"ship","version":"1"},"then":"done"},"done":{"final":true}}}`
	if _, err := f.Deploy(ctx, "ship-only", []byte(shipOnly)); err != nil {
		t.Fatal(err)
	}
	env := []string{"JETFLOW_NATS_URL=" + f.URL(), "JETFLOW_TASKS=ship@1", "JETFLOW_PULL_EXPIRES_MS=1000"}
	slow := start(t, "slow node worker", dir, append(env, "JETFLOW_SIMULATED_WORK_MS=600000", "JETFLOW_GRACE_MS=200"), node, "worker.js")
	if err := f.Client.StartRun(ctx, "ship-only", "parcel-1", map[string]any{"order": map[string]any{"sku": "mug", "qty": 1}}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 30*time.Second, "the slow worker starts ship", func() error {
		if !slow.out.contains(`"msg":"task started"`) {
			return errors.New("not yet")
		}
		return nil
	})
	if err := slow.stop(t, 30*time.Second); err != nil {
		t.Errorf("slow node worker after SIGTERM: %v, want exit status 0", err)
	}
	if !slow.out.contains("invocation handed back") {
		t.Errorf("the slow worker did not hand its invocation back")
	}

	fast := start(t, "fast node worker", dir, env, node, "worker.js")
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	st, err := f.Client.Wait(wctx, "parcel-1")
	if err != nil {
		t.Fatalf("parcel-1 did not end within 30s of the hand-back (the ack wait is 1m): %v", err)
	}
	if st.Status != wire.StatusDone {
		t.Errorf("parcel-1 ended %+v", st)
	}
	if !fast.out.contains(`"msg":"invocation redelivered"`) {
		t.Errorf("the second worker did not see a redelivery")
	}
	if err := fast.stop(t, 30*time.Second); err != nil {
		t.Errorf("fast node worker after SIGTERM: %v, want exit status 0", err)
	}
}

func waitStatus(t *testing.T, ctx context.Context, f *fleet.Fleet, runID, status string) {
	t.Helper()
	natstest.WaitFor(t, 60*time.Second, runID+" "+status, func() error {
		st, err := f.Client.Status(ctx, runID)
		if err != nil {
			return err
		}
		if st.Status != status {
			return fmt.Errorf("status %s at %s", st.Status, st.State)
		}
		return nil
	})
}

// results returns the task results a run's record holds, by state.
func results(t *testing.T, ctx context.Context, f *fleet.Fleet, runID string) map[string]map[string]any {
	t.Helper()
	data, _, err := f.Runs.Get(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := runrecord.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Context struct {
			Results map[string]map[string]any `json:"results"`
		} `json:"context"`
	}
	if err := json.Unmarshal(rec.State, &st); err != nil {
		t.Fatalf("run %s state: %v", runID, err)
	}
	return st.Context.Results
}

// TestNodeWorkerPayloadsByReference: the Node.js worker resolves an
// invocation that came by reference (a 3 MB input) and publishes its 3 MB
// result by reference, as docs/PROTOCOL.md 2.4 says, with no consumer of
// the payload bucket.
func TestNodeWorkerPayloadsByReference(t *testing.T) {
	node := requireNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := filepath.Join(repoRoot(t), "examples", "workers", "node")
	f := startFleet(t, ctx, provision.TaskPolicy{})
	const notifyOnly = `{"$workflow":"0.2","revision":"n1","initial":"notify","states":{
 "notify":{"work":{"task":"notify","version":"1"},"then":"done"},"done":{"final":true}}}`
	if _, err := f.Deploy(ctx, "notify-only", []byte(notifyOnly)); err != nil {
		t.Fatal(err)
	}
	w := start(t, "node worker", dir, []string{"JETFLOW_NATS_URL=" + f.URL(), "JETFLOW_TASKS=notify@1"}, node, "worker.js")
	tracking := strings.Repeat("T", 3<<20)
	if err := f.Client.StartRun(ctx, "notify-only", "big-parcel", map[string]any{"tracking": tracking}); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Minute)
	defer wcancel()
	st, err := f.Client.Wait(wctx, "big-parcel")
	if err != nil {
		t.Fatalf("big-parcel did not end: %v\n%s", err, w.out.String())
	}
	var out struct{ Tracking string }
	if err := json.Unmarshal(st.Result, &out); st.Status != wire.StatusDone || err != nil || out.Tracking != tracking {
		t.Fatalf("big-parcel ended %s with a tracking number of %d bytes (%v), want done with %d", st.Status, len(out.Tracking), err, len(tracking))
	}
	// The listing gets a bound of its own: on a loaded machine the run
	// may have used most of ctx's.
	lctx, lcancel := context.WithTimeout(context.Background(), time.Minute)
	defer lcancel()
	obs, err := f.JS.ObjectStore(lctx, f.Names.PayloadBucket())
	if err != nil {
		t.Fatal(err)
	}
	infos, err := obs.List(lctx)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, i := range infos {
		if parts := strings.Split(i.Name, "/"); parts[0] == "big-parcel" {
			kinds[parts[1]] = true
		}
	}
	if !kinds["invoke"] || !kinds["result"] {
		t.Errorf("objects of big-parcel: %v, want an invocation and a result", kinds)
	}
	if err := w.stop(t, 30*time.Second); err != nil {
		t.Errorf("node worker after SIGTERM: %v, want exit status 0", err)
	}
}
