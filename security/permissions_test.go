package security

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/schedule"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/token"
	"github.com/jetflow/jetflow/trigger"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// twoTasks invokes task-a, then task-b, then waits for event "go".
const twoTasks = `{"$workflow":"0.2","revision":"p1","initial":"a","states":{
 "a":{"work":{"task":"task-a","version":"1"},"then":"b"},
 "b":{"work":{"task":"task-b","version":"1"},"then":"w"},
 "w":{"on":[{"event":"go","to":"done"}],"after":{"ms":60000,"to":"late"}},
 "done":{"final":true},"late":{"final":true}}}`

// brief is timed, deployed with a retention of a second: its removal
// (tombstone, purges) must need no right the dispatcher lacks.
const brief = `{"$workflow":"0.2","revision":"b1","initial":"w","states":{
 "w":{"on":[{"event":"never","to":"done"}],"after":{"ms":100,"to":"done"}},"done":{"final":true}}}`

// timed ends when its timer fires: the dispatcher's schedule rights and
// the server's own fire must suffice.
const timed = `{"$workflow":"0.2","revision":"t1","initial":"w","states":{
 "w":{"on":[{"event":"never","to":"late"}],"after":{"ms":200,"to":"done"}},"done":{"final":true},"late":{"final":true}}}`

// family invokes kid@1, which its policy binds to a workflow: the
// dispatcher starts the child, the child's result comes back, and the
// parent's operations cascade, all within the dispatcher's rights.
const family = `{"$workflow":"0.2","revision":"f1","initial":"a","states":{
 "a":{"work":{"task":"kid","version":"1"},"then":"done"},"done":{"final":true}}}`

var twoTaskRefs = []registry.TaskRef{{Task: "task-a", Version: "1"}, {Task: "task-b", Version: "1"}}

// roles is a secured deployment with every role connected as its own
// user: an operator that deployed, a dispatcher, the workers of task-a
// and task-b, an application, an event source and an observer.
type roles struct {
	*deployment
	op, disp, workerA, workerB, app, events, observer *conn
}

func startRoles(t *testing.T) *roles {
	t.Helper()
	r := &roles{deployment: secured(t, twoTaskRefs, "ticks")}
	ctx := testCtx(t, 60*time.Second)
	r.op = r.connect(t, UserOperator)
	of := r.fleet(t, r.op, nil)
	// task-a is rate limited, so that the dispatcher holds invocations
	// back (dispatcher/limit.go) as its own user; task-b is queued by
	// priority and key, so that it admits them from the queue stream
	// (dispatcher/queue.go) as its own user.
	paced, err := policy.Parse([]byte(`{"task-a@1":{"ratePerSecond":1,"rateBurst":1},"task-b@1":{"priority":1,"key":"$.input.n","maxPerKey":4}}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]string{"two": twoTasks, "timed": timed} {
		if _, err := of.DeployWith(ctx, name, []byte(doc), fleet.DeployOptions{Policy: paced}); err != nil {
			t.Fatal(err)
		}
	}
	keepASecond, err := policy.Parse([]byte(`{"$run":{"retention":"1s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := of.DeployWith(ctx, "brief", []byte(brief), fleet.DeployOptions{Policy: keepASecond}); err != nil {
		t.Fatal(err)
	}
	for name, child := range map[string]string{"family": "timed", "family2": "two"} {
		bind, err := policy.Parse([]byte(`{"$children":{"kid@1":{"workflow":"` + child + `"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := of.DeployWith(ctx, name, []byte(family), fleet.DeployOptions{Policy: bind}); err != nil {
			t.Fatal(err)
		}
	}
	r.disp = r.connect(t, UserDispatcher)
	r.fleet(t, r.disp, &dispatcher.Config{Logger: quiet()})
	r.workerA = r.connect(t, WorkerUser("task-a", "1"))
	r.workerB = r.connect(t, WorkerUser("task-b", "1"))
	r.serve(t, r.workerA, "task-a")
	r.serve(t, r.workerB, "task-b")
	r.app = r.connect(t, UserApp)
	r.events = r.connect(t, UserEvents)
	r.observer = r.connect(t, UserObserver)
	return r
}

// fleet joins the deployment over c's connection, without provisioning
// (only the operator may), as `jetflow dispatcher` and `deploy` do.
func (r *roles) fleet(t *testing.T, c *conn, d *dispatcher.Config) *fleet.Fleet {
	t.Helper()
	opts := append(r.connectOptions(c.user), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			c.mu.Lock()
			c.violations = append(c.violations, err.Error())
			c.mu.Unlock()
		}
	}))
	f, err := fleet.Start(testCtx(t, 30*time.Second), fleet.Config{
		URL: r.srv.ClientURL(), NATSOptions: opts, SkipProvision: true, Dispatcher: d, Logger: quiet(),
	})
	if err != nil {
		t.Fatalf("fleet as %s: %v", c.user, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = f.Stop(ctx)
	})
	return f
}

func (r *roles) serve(t *testing.T, c *conn, task string) {
	t.Helper()
	w, err := worker.New(c.js, worker.Config{Names: r.names, PollWait: 200 * time.Millisecond, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Register(task, "1", func(_ context.Context, inv worker.Invocation) (any, error) {
		if inv.Run == "big1" {
			// Larger than the payload threshold: the result travels by
			// reference.
			return map[string]any{"by": task, "pad": strings.Repeat(task, 200<<10)}, nil
		}
		return map[string]any{"by": task}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(lifetime(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
}

func (r *roles) client(t *testing.T, c *conn) *client.Client {
	t.Helper()
	cl, err := client.New(testCtx(t, 10*time.Second), c.js, client.Config{Names: r.names})
	if err != nil {
		t.Fatalf("client as %s: %v", c.user, err)
	}
	return cl
}

// jsPublish is a JetStream publish that waits for the acknowledgement a
// refused publish never gets.
func jsPublish(c *conn, subject string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		_, err := c.js.Publish(ctx, subject, []byte(`{}`))
		return err
	}
}

// request is a request that a refused publish leaves unanswered.
func request(c *conn, subject string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		_, err := c.RequestWithContext(ctx, subject, []byte(`{}`))
		return err
	}
}

// subscribe asks for a subscription and waits for its first message or
// the refusal.
func subscribe(c *conn, subject string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		sub, err := c.SubscribeSync(subject)
		if err != nil {
			return err
		}
		defer func() { _ = sub.Unsubscribe() }()
		if _, err := sub.NextMsgWithContext(ctx); err != nil {
			return err
		}
		return nil
	}
}

// TestPermissionMatrix runs a workflow with every role connected as its
// own least-privilege user, then checks that each role is refused what it
// must not do. The server reports each refusal as a permission violation
// on the exact subject.
func TestPermissionMatrix(t *testing.T) {
	r := startRoles(t)
	// Long enough for every step on a loaded 2-core CI machine, where the
	// whole matrix has taken more than a minute; the bound only ends a hang.
	ctx := testCtx(t, 5*time.Minute)
	n := r.names
	app, events, observer := r.client(t, r.app), r.client(t, r.events), r.client(t, r.observer)

	// The whole run with nothing refused: the permissions suffice.
	status, err := r.observer.SubscribeSync(n.Status("p1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.StartRun(ctx, "two", "p1", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 30*time.Second, "p1 waits for its event", func() error {
		st, err := observer.Status(ctx, "p1")
		if err != nil {
			return err
		}
		if st.Status != wire.StatusWaiting {
			return errors.New(st.Status)
		}
		return nil
	})
	if err := events.SendEvent(ctx, "p1", "go", map[string]any{"ok": true}); err != nil {
		t.Fatal(err)
	}
	st, err := app.Wait(ctx, "p1")
	if err != nil || st.Status != wire.StatusDone {
		t.Fatalf("p1 ended %+v, %v", st, err)
	}
	if _, err := status.NextMsgWithContext(ctx); err != nil {
		t.Fatalf("the observer got no status announcement: %v", err)
	}
	if err := app.StartRun(ctx, "timed", "t1", nil); err != nil {
		t.Fatal(err)
	}
	if st, err := app.Wait(ctx, "t1"); err != nil || st.Status != wire.StatusDone || st.State != "/states/done" {
		t.Fatalf("the timed run ended %+v, %v", st, err)
	}
	// A run's sequence page, which a dispatcher stores each 128 inputs
	// (more than these runs have).
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if _, err := r.disp.js.Publish(pctx, n.Page("p1", 1), []byte(`[1]`)); err != nil {
		t.Fatalf("the dispatcher cannot store a sequence page: %v", err)
	}
	cancel()
	if _, err := observer.Status(ctx, "p1"); err != nil {
		t.Fatalf("the observer cannot read the run: %v", err)
	}
	// The dispatcher indexed both runs; the observer lists from the index.
	page, err := observer.ListRuns(ctx, client.ListOptions{Filter: wire.RunFilter{Status: wire.StatusDone}, Sort: client.SortUpdate})
	if err != nil || page.Scanned || page.Behind > 0 || len(page.Runs) != 2 || page.Runs[0].Status.Run != "t1" || page.Runs[1].Status.Run != "p1" {
		t.Fatalf("the observer's listing of done runs: %+v, %v", page, err)
	}
	page, err = observer.ListRuns(ctx, client.ListOptions{Filter: wire.RunFilter{Status: wire.StatusDone}, Sort: client.SortStart})
	if err != nil || page.Scanned || len(page.Runs) != 2 || page.Runs[0].Status.Run != "t1" || page.Runs[1].Status.Run != "p1" {
		t.Fatalf("the observer's listing of done runs by start: %+v, %v", page, err)
	}
	// Start controls (docs/STARTS.md): the dispatcher decides them with
	// its own rights (the key buckets, a debounced start's hold in the
	// timer stream, a queued one's), the application reads its answers
	// with its own, and so does the observer.
	if _, err := app.StartDecided(ctx, "timed", "k1", nil, client.WithIdempotencyKey("k")); err != nil {
		t.Fatal(err)
	}
	if out, err := app.StartDecided(ctx, "timed", "k2", nil, client.WithIdempotencyKey("k")); err != nil || out.Run != "k1" {
		t.Fatalf("a repeated idempotency key: %+v, %v", out, err)
	}
	if d, ok, err := observer.StartDecision(ctx, "k2"); err != nil || !ok || d.Run != "k1" {
		t.Fatalf("the observer reads the decision on k2: %+v %v %v", d, ok, err)
	}
	if out, err := app.StartDecided(ctx, "timed", "d1", nil, client.WithDebounce("d", 200*time.Millisecond)); err != nil || out.Decision == nil || out.Decision.Outcome != wire.StartOutcomeDebounced {
		t.Fatalf("a debounced start: %+v, %v", out, err)
	}
	for _, id := range []string{"s1", "s2"} {
		if _, err := app.StartDecided(ctx, "timed", id, nil, client.WithSingleton("s", wire.SingletonQueue)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"d1", "s1", "s2"} {
		natstest.WaitFor(t, 30*time.Second, id+" is done", func() error {
			st, err := observer.Status(ctx, id)
			if err != nil {
				return err
			}
			if st.Status != wire.StatusDone {
				return errors.New(st.Status)
			}
			return nil
		})
	}
	// Two runs at once of the rate-limited task-a: the second's
	// invocation is held back a second by a schedule the dispatcher
	// publishes, and released by the server.
	for _, id := range []string{"h1", "h2"} {
		if err := app.StartRun(ctx, "two", id, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"h1", "h2"} {
		natstest.WaitFor(t, 30*time.Second, id+" waits for its event", func() error {
			st, err := observer.Status(ctx, id)
			if err != nil {
				return err
			}
			if st.Status != wire.StatusWaiting {
				return errors.New(st.Status)
			}
			return nil
		})
		if err := events.SendEvent(ctx, id, "go", nil); err != nil {
			t.Fatal(err)
		}
		if st, err := app.Wait(ctx, id); err != nil || st.Status != wire.StatusDone {
			t.Fatalf("%s ended %+v, %v", id, st, err)
		}
	}
	// Payloads by reference: the application's large start, the event
	// source's large event, the workers' large results (and so the large
	// invocation of task-b and the run record) all go through the payload
	// bucket, each with the rights of its role.
	pad := strings.Repeat("x", 700<<10)
	if err := app.StartRun(ctx, "two", "big1", map[string]any{"pad": pad}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 30*time.Second, "big1 waits for its event", func() error {
		st, err := observer.Status(ctx, "big1")
		if err != nil {
			return err
		}
		if st.Status != wire.StatusWaiting {
			return errors.New(st.Status)
		}
		return nil
	})
	if err := events.SendEvent(ctx, "big1", "go", map[string]any{"pad": pad}); err != nil {
		t.Fatal(err)
	}
	if st, err := app.Wait(ctx, "big1"); err != nil || st.Status != wire.StatusDone || st.State != "/states/done" {
		t.Fatalf("big1 ended %+v, %v", st, err)
	}
	// A bulk cancel submitted by the operator, carried out by the
	// dispatcher: the job bucket, the run scan and the cancel it publishes.
	if err := app.StartRun(ctx, "two", "p2", nil); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 30*time.Second, "p2 waits for its event", func() error {
		st, err := observer.Status(ctx, "p2")
		if err != nil {
			return err
		}
		if st.Status != wire.StatusWaiting {
			return errors.New(st.Status)
		}
		return nil
	})
	opc := r.client(t, r.op)
	job, err := opc.SubmitJob(ctx, client.JobSpec{Operation: "cancel", Filter: wire.RunFilter{Workflow: "two", Status: wire.StatusWaiting}})
	if err != nil {
		t.Fatal(err)
	}
	if j, err := opc.WatchJob(ctx, job.ID, func(*wire.Job) bool { return true }); err != nil || j.State != wire.JobDone || j.Sent != 1 {
		t.Fatalf("the bulk job ended %+v, %v", j, err)
	}
	if st, err := app.Wait(ctx, "p2"); err != nil || st.Status != wire.StatusCancelled {
		t.Fatalf("p2 after the bulk cancel: %+v, %v", st, err)
	}
	// A run of a deployment that keeps its runs a second is removed: the
	// dispatcher's rights cover the tombstone and both purges.
	if err := app.StartRun(ctx, "brief", "b1", nil); err != nil {
		t.Fatal(err)
	}
	// A removal waits out twice the ack wait (60 s here) after any input
	// stored after the settling one, such as a late duplicate timer fire.
	natstest.WaitFor(t, 2*time.Minute, "b1 removed by retention", func() error {
		_, err := observer.Status(ctx, "b1")
		if !errors.Is(err, runrecord.ErrRemoved) {
			return fmt.Errorf("status: %w", err)
		}
		return nil
	})
	inputs, err := r.op.js.Stream(ctx, n.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	// ... in a bucket of removals: the dispatcher's rights cover the
	// reaper consumer and the read of the bucket's due entries.
	reaper, err := r.op.js.Consumer(ctx, n.TimerStream(), n.ReaperConsumer())
	if err != nil {
		t.Fatalf("the reaper consumer: %v", err)
	}
	natstest.WaitFor(t, 30*time.Second, "b1's bucket of removals done", func() error {
		info, err := reaper.Info(ctx)
		if err != nil {
			return err
		}
		if info.AckFloor.Consumer == 0 {
			return fmt.Errorf("no bucket done: %+v", info)
		}
		return nil
	})
	natstest.WaitFor(t, 30*time.Second, "b1's history purged", func() error {
		info, err := inputs.Info(ctx, jetstream.WithSubjectFilter(n.RunInputs("b1")))
		if err != nil {
			return err
		}
		if len(info.State.Subjects) > 0 {
			return fmt.Errorf("history %v", info.State.Subjects)
		}
		return nil
	})
	// An event for a run nobody started: the dispatcher looks for its
	// start in the input stream, and refuses it.
	if err := events.SendEvent(ctx, "nobody", "go", nil); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 30*time.Second, "the stray event handled", func() error {
		c, err := r.op.js.Consumer(ctx, n.InputStream(), n.PartitionConsumer(subjects.Partition("nobody", provision.DefaultPartitions)))
		if err != nil {
			return err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumPending+uint64(info.NumAckPending) > 0 || info.NumRedelivered > 0 {
			return fmt.Errorf("pending %d, unacknowledged %d, redelivered %d", info.NumPending, info.NumAckPending, info.NumRedelivered)
		}
		return nil
	})
	// The operator pauses, resumes and terminates runs.
	operator := r.client(t, r.op)
	if err := app.StartRun(ctx, "two", "p3", nil); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, observer, "p3", wire.StatusWaiting)
	if err := operator.Pause(ctx, "p3", "check the matrix", "ops"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, observer, "p3", wire.StatusPaused)
	if err := operator.Resume(ctx, "p3", "", "ops"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, observer, "p3", wire.StatusWaiting)
	if err := operator.Terminate(ctx, "p3", "end of the check", "ops"); err != nil {
		t.Fatal(err)
	}
	if st, err := app.Wait(ctx, "p3"); err != nil || st.Status != wire.StatusTerminated || st.Reason != "end of the check" {
		t.Fatalf("p3 ended %+v, %v", st, err)
	}
	// ... and resets one: the dispatcher reads the run's history to
	// rebuild it (leader reads of the input stream).
	resumed, err := inputs.GetLastMsgForSubject(ctx, n.StoredInput(n.Resume("p3"), provision.Partitions(inputs.CachedInfo().Config)))
	if err != nil {
		t.Fatal(err)
	}
	seq, err := operator.Reset(ctx, "p3", resumed.Sequence, "check the matrix", "ops")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := operator.Resetted(ctx, "p3", seq); err != nil || st.Status != wire.StatusWaiting {
		t.Fatalf("p3 after its reset: %+v, %v", st, err)
	}
	if err := operator.Terminate(ctx, "p3", "end of the check", "ops"); err != nil {
		t.Fatal(err)
	}
	// ... and pauses and resumes a task version.
	if _, err := provision.PauseTask(ctx, r.op.js, n, "task-a", "1", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := provision.ResumeTask(ctx, r.op.js, n, "task-a", "1"); err != nil {
		t.Fatal(err)
	}
	// ... and writes and reads the audit log.
	if err := operator.WriteAudit(ctx, wire.AuditEntry{Who: "ops", Source: subjects.AuditCLI, Action: "pause", Run: "p3", Result: wire.AuditAccepted}); err != nil {
		t.Fatal(err)
	}
	if page, err := operator.AuditPage(ctx, 0, 10, client.AuditFilter{Run: "p3"}); err != nil || len(page.Entries) != 1 || page.Entries[0].Who != "ops" {
		t.Fatalf("the operator's read of the audit log: %+v, %v", page, err)
	}
	// ... and child runs: the dispatcher starts a parent's child, sends
	// the child's result to the parent, and cascades the operator's pause
	// and terminate.
	if err := app.StartRun(ctx, "family", "f1", nil); err != nil {
		t.Fatal(err)
	}
	if st, err := app.Wait(ctx, "f1"); err != nil || st.Status != wire.StatusDone {
		t.Fatalf("the parent of a child run ended %+v, %v", st, err)
	}
	if err := app.StartRun(ctx, "family2", "f2", nil); err != nil {
		t.Fatal(err)
	}
	kid := ""
	natstest.WaitFor(t, 30*time.Second, "f2's child waits for its event", func() error {
		rec, err := observer.Record(ctx, "f2")
		if err != nil {
			return err
		}
		kids, err := observer.Tree(ctx, rec, 1)
		if err != nil || len(kids) != 1 || kids[0].Status != wire.StatusWaiting {
			return fmt.Errorf("children %+v: %w", kids, err)
		}
		kid = kids[0].Run
		return nil
	})
	if err := operator.Pause(ctx, "f2", "", "ops"); err != nil {
		t.Fatal(err)
	}
	waitFor := func(id, status string) {
		natstest.WaitFor(t, 30*time.Second, id+" "+status, func() error {
			st, err := observer.Status(ctx, id)
			if err != nil || st.Status != status {
				return fmt.Errorf("%+v: %w", st, err)
			}
			return nil
		})
	}
	waitFor(kid, wire.StatusPaused)
	if err := operator.Terminate(ctx, "f2", "test", "ops"); err != nil {
		t.Fatal(err)
	}
	waitFor(kid, wire.StatusTerminated)
	// ... and creates a schedule, whose fires the dispatcher turns into
	// runs (reading and writing the schedule's state, deleting the fires
	// it took), then deletes it.
	sched, err := schedule.Open(ctx, r.op.js, n)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sched.Create(ctx, wire.Schedule{Name: "tick", Workflow: "timed", Every: "1s", Overlap: wire.OverlapAllow}); err != nil {
		t.Fatal(err)
	}
	var ticked string
	natstest.WaitFor(t, time.Minute, "a scheduled run", func() error {
		info, err := sched.Get(ctx, "tick")
		if err != nil {
			return err
		}
		if ticked = info.State.LastRun; ticked == "" {
			return errors.New("no run yet")
		}
		return nil
	})
	if st, err := observer.Wait(ctx, ticked); err != nil || st.Status != wire.StatusDone {
		t.Fatalf("scheduled run %s: %+v, %v", ticked, st, err)
	}
	if err := sched.Delete(ctx, "tick"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*conn{r.op, r.disp, r.workerA, r.workerB, r.app, r.events, r.observer} {
		if v := c.all(); len(v) > 0 {
			t.Fatalf("%s was refused during a normal run: %v", c.user, v)
		}
	}

	ts, taskB := n.TaskStream(), n.TaskConsumer("task-b", "1")
	runKey := "$KV." + n.RunBucket() + ".p1"
	directRun := "$JS.API.DIRECT.GET.KV_" + n.RunBucket() + "." + runKey
	cases := []struct {
		who     *conn
		what    string
		subject string
		op      func(context.Context) error
	}{
		// A worker of task A cannot consume task B.
		{r.workerA, "subscribe to task B's invocations", n.Task("task-b", "1"), subscribe(r.workerA, n.Task("task-b", "1"))},
		{r.workerA, "bind task B's consumer", "$JS.API.CONSUMER.INFO." + ts + "." + taskB, func(ctx context.Context) error {
			_, err := r.workerA.js.Consumer(ctx, ts, taskB)
			return err
		}},
		{r.workerA, "pull from task B's consumer", "$JS.API.CONSUMER.MSG.NEXT." + ts + "." + taskB, request(r.workerA, "$JS.API.CONSUMER.MSG.NEXT."+ts+"."+taskB)},
		{r.workerA, "create its own consumer of task B", "$JS.API.CONSUMER.CREATE." + ts + ".sneak." + n.Task("task-b", "1"), func(ctx context.Context) error {
			_, err := r.workerA.js.CreateConsumer(ctx, ts, jetstream.ConsumerConfig{Name: "sneak", FilterSubject: n.Task("task-b", "1")})
			return err
		}},
		{r.workerA, "acknowledge task B's invocations", "$JS.ACK." + ts + "." + taskB + ".1.1.1.1.1.0", request(r.workerA, "$JS.ACK."+ts+"."+taskB+".1.1.1.1.1.0")},
		{r.workerA, "read another client's replies", "_INBOX.>", subscribe(r.workerA, "_INBOX.>")},
		{r.workerA, "read the dispatcher's replies", InboxPrefix(UserDispatcher) + ".>", subscribe(r.workerA, InboxPrefix(UserDispatcher)+".>")},
		// ... cannot write (or read) run state.
		{r.workerA, "write run state", runKey, jsPublish(r.workerA, runKey)},
		{r.workerA, "read run state", directRun, request(r.workerA, directRun)},
		// ... cannot publish events, starts, cancels, invocations or status.
		{r.workerA, "publish an event", n.Event("p1", "go"), jsPublish(r.workerA, n.Event("p1", "go"))},
		{r.workerA, "publish a start", n.Start("p9"), jsPublish(r.workerA, n.Start("p9"))},
		{r.workerA, "publish a cancel", n.Cancel("p1"), jsPublish(r.workerA, n.Cancel("p1"))},
		{r.workerA, "forge a timer", n.Timer("p1"), jsPublish(r.workerA, n.Timer("p1"))},
		{r.workerA, "redrive a run", n.Redrive("p1"), jsPublish(r.workerA, n.Redrive("p1"))},
		{r.workerA, "publish an invocation", n.Task("task-b", "1"), jsPublish(r.workerA, n.Task("task-b", "1"))},
		// An event source cannot forge results or read run state.
		{r.events, "forge a result", n.Result("p1"), jsPublish(r.events, n.Result("p1"))},
		{r.events, "read run state", directRun, func(ctx context.Context) error {
			_, err := events.Status(ctx, "p1")
			return err
		}},
		{r.events, "read run state from the leader", "$JS.API.STREAM.MSG.GET.KV_" + n.RunBucket(), request(r.events, "$JS.API.STREAM.MSG.GET.KV_"+n.RunBucket())},
		{r.events, "watch run state", "$KV." + n.RunBucket() + ".>", subscribe(r.events, "$KV."+n.RunBucket()+".>")},
		{r.events, "start a run", n.Start("p9"), func(ctx context.Context) error { return events.StartRun(ctx, "two", "p9", nil) }},
		{r.events, "forge a timer", n.Timer("p1"), jsPublish(r.events, n.Timer("p1"))},
		{r.events, "fire a timer in the timer stream", n.Fired("p1"), jsPublish(r.events, n.Fired("p1"))},
		{r.events, "schedule a timer", n.Schedule("p1", "t9"), jsPublish(r.events, n.Schedule("p1", "t9"))},
		{r.app, "fire a timer in the timer stream", n.Fired("p1"), jsPublish(r.app, n.Fired("p1"))},
		{r.workerA, "schedule a timer", n.Schedule("p1", "t9"), jsPublish(r.workerA, n.Schedule("p1", "t9"))},
		{r.observer, "cancel timers", "$JS.API.STREAM.PURGE." + n.TimerStream(), request(r.observer, "$JS.API.STREAM.PURGE."+n.TimerStream())},
		{r.disp, "fire a timer itself", n.Fired("p1"), jsPublish(r.disp, n.Fired("p1"))},
		// Only dispatchers queue invocations and admit them.
		{r.workerA, "queue an invocation", n.Queue("task-b", "1", 9, subjects.NoKey), jsPublish(r.workerA, n.Queue("task-b", "1", 9, subjects.NoKey))},
		{r.app, "queue an invocation", n.Queue("task-b", "1", 9, subjects.NoKey), jsPublish(r.app, n.Queue("task-b", "1", 9, subjects.NoKey))},
		{r.observer, "delete a queued invocation", "$JS.API.STREAM.MSG.DELETE." + n.QueueStream(), request(r.observer, "$JS.API.STREAM.MSG.DELETE."+n.QueueStream())},
		// Batched removal: only dispatchers publish due entries and bucket
		// schedules, and a bucket fires only by its schedule.
		{r.disp, "fire a bucket of removals itself", n.ReapFire(1), jsPublish(r.disp, n.ReapFire(1))},
		{r.events, "make a run due for removal", n.ReapDue(1, "p1"), jsPublish(r.events, n.ReapDue(1, "p1"))},
		{r.workerA, "schedule a bucket of removals", n.ReapSchedule(1), jsPublish(r.workerA, n.ReapSchedule(1))},
		{
			r.observer, "take bucket fires", "$JS.API.CONSUMER.MSG.NEXT." + n.TimerStream() + "." + n.ReaperConsumer(),
			request(r.observer, "$JS.API.CONSUMER.MSG.NEXT."+n.TimerStream()+"."+n.ReaperConsumer()),
		},
		// Only dispatchers write the runs' sequence pages, which history
		// reads follow.
		{r.app, "forge a sequence page", n.Page("p1", 1), jsPublish(r.app, n.Page("p1", 1))},
		{r.events, "forge a sequence page", n.Page("p1", 1), jsPublish(r.events, n.Page("p1", 1))},
		{r.workerA, "forge a sequence page", n.Page("p1", 1), jsPublish(r.workerA, n.Page("p1", 1))},
		{r.observer, "forge a sequence page", n.Page("p1", 1), jsPublish(r.observer, n.Page("p1", 1))},
		// An observer reads (above) and changes nothing.
		{r.observer, "start a run", n.Start("p9"), func(ctx context.Context) error { return observer.StartRun(ctx, "two", "p9", nil) }},
		{r.observer, "send an event", n.Event("p1", "go"), jsPublish(r.observer, n.Event("p1", "go"))},
		{r.observer, "cancel a run", n.Cancel("p1"), jsPublish(r.observer, n.Cancel("p1"))},
		{r.observer, "redrive a run", n.Redrive("p1"), jsPublish(r.observer, n.Redrive("p1"))},
		{r.observer, "forge a result", n.Result("p1"), jsPublish(r.observer, n.Result("p1"))},
		{r.observer, "write run state", runKey, jsPublish(r.observer, runKey)},
		{r.observer, "purge the history", "$JS.API.STREAM.PURGE." + n.InputStream(), request(r.observer, "$JS.API.STREAM.PURGE."+n.InputStream())},
		{r.observer, "delete the run bucket", "$JS.API.STREAM.DELETE.KV_" + n.RunBucket(), request(r.observer, "$JS.API.STREAM.DELETE.KV_"+n.RunBucket())},
		{r.observer, "consume run inputs", "$JS.API.CONSUMER.MSG.NEXT." + n.InputStream() + "." + n.DispatcherConsumer(), request(r.observer, "$JS.API.CONSUMER.MSG.NEXT."+n.InputStream()+"."+n.DispatcherConsumer())},
		{
			r.observer, "create a consumer (its deliver subject could be a run input)", "$JS.API.CONSUMER.CREATE.KV_" + n.RunBucket() + ".evil",
			request(r.observer, "$JS.API.CONSUMER.CREATE.KV_"+n.RunBucket()+".evil"),
		},
		{
			r.observer, "read the token secret", "$JS.API.DIRECT.GET.KV_" + n.WorkflowBucket() + ".$KV." + n.WorkflowBucket() + "." + token.Key,
			request(r.observer, "$JS.API.DIRECT.GET.KV_"+n.WorkflowBucket()+".$KV."+n.WorkflowBucket()+"."+token.Key),
		},
		{r.observer, "write the run index", n.IndexEntry("two", "done", 1, "evil"), jsPublish(r.observer, n.IndexEntry("two", "done", 1, "evil"))},
		{r.observer, "purge the run index", "$JS.API.STREAM.PURGE." + n.IndexStream(), request(r.observer, "$JS.API.STREAM.PURGE."+n.IndexStream())},
		{r.app, "write the run index", n.IndexHead("p1"), jsPublish(r.app, n.IndexHead("p1"))},
		{r.events, "read the run index", "$JS.API.DIRECT.GET." + n.IndexStream(), request(r.events, "$JS.API.DIRECT.GET."+n.IndexStream())},
		// Turning the index off and rebuilding it are the dispatcher's and
		// the operator's (jetflow index rebuild).
		{r.observer, "mark the run index off", n.IndexOff(), jsPublish(r.observer, n.IndexOff())},
		{r.app, "rebuild the run index", "$JS.API.CONSUMER.DELETE.KV_" + n.RunBucket() + "." + n.IndexerConsumer(), request(r.app, "$JS.API.CONSUMER.DELETE.KV_"+n.RunBucket()+"."+n.IndexerConsumer())},
		{r.observer, "rebuild the run index", "$JS.API.CONSUMER.DELETE.KV_" + n.RunBucket() + "." + n.IndexerConsumer(), request(r.observer, "$JS.API.CONSUMER.DELETE.KV_"+n.RunBucket()+"."+n.IndexerConsumer())},
		// Schedules are the operator's: nobody else may create, trigger
		// or delete one, nor fire one itself; a dispatcher only writes a
		// schedule's state and delays.
		{r.app, "create a schedule", n.ScheduleDef("evil"), jsPublish(r.app, n.ScheduleDef("evil"))},
		{r.observer, "create a schedule", n.ScheduleDef("evil"), jsPublish(r.observer, n.ScheduleDef("evil"))},
		{r.events, "trigger a schedule", n.ScheduleTrigger("evil"), jsPublish(r.events, n.ScheduleTrigger("evil"))},
		{r.workerA, "create a schedule", n.ScheduleDef("evil"), jsPublish(r.workerA, n.ScheduleDef("evil"))},
		{r.disp, "create a schedule", n.ScheduleDef("evil"), jsPublish(r.disp, n.ScheduleDef("evil"))},
		{r.disp, "fire a schedule itself", n.ScheduleFire("evil"), jsPublish(r.disp, n.ScheduleFire("evil"))},
		{r.disp, "delete a schedule", "$JS.API.STREAM.PURGE." + n.ScheduleStream(), request(r.disp, "$JS.API.STREAM.PURGE."+n.ScheduleStream())},
		{r.observer, "read the schedules", "$JS.API.STREAM.INFO." + n.ScheduleStream(), request(r.observer, "$JS.API.STREAM.INFO."+n.ScheduleStream())},
		{r.app, "take schedule fires", "$JS.API.CONSUMER.MSG.NEXT." + n.ScheduleStream() + "." + n.ScheduleConsumer(), request(r.app, "$JS.API.CONSUMER.MSG.NEXT."+n.ScheduleStream()+"."+n.ScheduleConsumer())},
		// A dispatcher drives runs but cannot deploy or destroy.
		{r.disp, "deploy a workflow", "$KV." + n.WorkflowBucket() + ".name.evil", jsPublish(r.disp, "$KV."+n.WorkflowBucket()+".name.evil")},
		{r.disp, "delete the input stream", "$JS.API.STREAM.DELETE." + n.InputStream(), request(r.disp, "$JS.API.STREAM.DELETE."+n.InputStream())},
		// Only the operator submits bulk jobs.
		{r.app, "submit a bulk job", "$KV." + n.JobBucket() + ".evil", jsPublish(r.app, "$KV."+n.JobBucket()+".evil")},
		{r.observer, "cancel a bulk job", "$KV." + n.JobBucket() + ".evil", jsPublish(r.observer, "$KV."+n.JobBucket()+".evil")},
		// The application cannot forge results either.
		{r.app, "forge a result", n.Result("p1"), jsPublish(r.app, n.Result("p1"))},
		// Pause, resume and terminate are the operator's.
		{r.app, "pause a run", n.Pause("p1"), func(ctx context.Context) error { return app.Pause(ctx, "p1", "", "") }},
		{r.app, "resume a run", n.Resume("p1"), jsPublish(r.app, n.Resume("p1"))},
		{r.app, "terminate a run", n.Terminate("p1"), func(ctx context.Context) error { return app.Terminate(ctx, "p1", "no", "") }},
		{r.events, "pause a run", n.Pause("p1"), jsPublish(r.events, n.Pause("p1"))},
		{r.observer, "terminate a run", n.Terminate("p1"), jsPublish(r.observer, n.Terminate("p1"))},
		{r.workerA, "pause a run", n.Pause("p1"), jsPublish(r.workerA, n.Pause("p1"))},
		{r.workerA, "pause its own task", "$JS.API.CONSUMER.PAUSE." + ts + "." + n.TaskConsumer("task-a", "1"), func(ctx context.Context) error {
			_, err := provision.PauseTask(ctx, r.workerA.js, n, "task-a", "1", time.Time{})
			return err
		}},
		{r.app, "pause a task", "$JS.API.CONSUMER.PAUSE." + ts + "." + taskB, request(r.app, "$JS.API.CONSUMER.PAUSE."+ts+"."+taskB)},
		// Nor redrive: restarting failed work is the operator's.
		{r.app, "redrive a run", n.Redrive("p1"), func(ctx context.Context) error {
			_, err := app.Redrive(ctx, "p1", "")
			return err
		}},
		{r.events, "redrive a run", n.Redrive("p1"), jsPublish(r.events, n.Redrive("p1"))},
		// Nor reset: taking a run back is the operator's.
		{r.app, "reset a run", n.Reset("p1"), func(ctx context.Context) error {
			_, err := app.Reset(ctx, "p1", 1, "", "")
			return err
		}},
		{r.events, "reset a run", n.Reset("p1"), jsPublish(r.events, n.Reset("p1"))},
		{r.workerA, "reset a run", n.Reset("p1"), jsPublish(r.workerA, n.Reset("p1"))},
		{r.observer, "reset a run", n.Reset("p1"), jsPublish(r.observer, n.Reset("p1"))},
		{r.disp, "reset a run", n.Reset("p1"), jsPublish(r.disp, n.Reset("p1"))},
		// The audit log is the operator's: nobody else writes or reads it.
		{r.app, "write the audit log", n.Audit(subjects.AuditCLI, "pause"), jsPublish(r.app, n.Audit(subjects.AuditCLI, "pause"))},
		{r.observer, "write the audit log", n.Audit(subjects.AuditConsole, "cancel"), jsPublish(r.observer, n.Audit(subjects.AuditConsole, "cancel"))},
		{r.events, "write the audit log", n.Audit(subjects.AuditConsole, "event"), jsPublish(r.events, n.Audit(subjects.AuditConsole, "event"))},
		{r.workerA, "write the audit log", n.Audit(subjects.AuditCLI, "deploy"), jsPublish(r.workerA, n.Audit(subjects.AuditCLI, "deploy"))},
		{r.disp, "write the audit log", n.Audit(subjects.AuditCLI, "reset"), jsPublish(r.disp, n.Audit(subjects.AuditCLI, "reset"))},
		{r.observer, "read the audit log", "$JS.API.STREAM.INFO." + n.AuditStream(), func(ctx context.Context) error {
			_, err := observer.AuditPage(ctx, 0, 10, client.AuditFilter{})
			return err
		}},
		{r.app, "read the audit log", "$JS.API.DIRECT.GET." + n.AuditStream(), request(r.app, "$JS.API.DIRECT.GET."+n.AuditStream())},
	}
	for _, c := range cases {
		c.who.denied(t, c.what, c.subject, c.op)
	}
	t.Logf("permission matrix: %d refusals checked, each reported by the server on its subject", len(cases))

	// Task B's invocations were never taken by worker A: the run above
	// needed both workers and ended with task-b's own output.
	rec, err := observer.Status(ctx, "p1")
	if err != nil || rec.Status != wire.StatusDone {
		t.Fatalf("p1 after the refusals: %+v, %v", rec, err)
	}
}

// waitStatus waits until run id has status want.
func waitStatus(t *testing.T, c *client.Client, id, want string) {
	t.Helper()
	natstest.WaitFor(t, 30*time.Second, id+" is "+want, func() error {
		st, err := c.Status(context.Background(), id)
		if err != nil {
			return err
		}
		if st.Status != want {
			return errors.New(st.Status)
		}
		return nil
	})
}

// TestNoAnonymousClients: a connection without credentials is refused.
func TestNoAnonymousClients(t *testing.T) {
	d := secured(t, nil)
	pool := d.pki.pool
	_, err := nats.Connect(d.srv.ClientURL(), nats.Secure(tlsConfig(pool)), nats.MaxReconnects(0))
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("anonymous connect: %v", err)
	}
}

// TestPlaintextRefused speaks the NATS protocol without TLS to a server
// that requires it: the server announces tls_required and closes the
// connection instead of answering.
func TestPlaintextRefused(t *testing.T) {
	d := secured(t, nil)
	u, err := url.Parse(d.srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		TLSRequired bool `json:"tls_required"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(strings.TrimSpace(line), "INFO ")), &info); err != nil || !info.TLSRequired {
		t.Fatalf("INFO %q does not require TLS (%v)", line, err)
	}
	if _, err := io.WriteString(c, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPUB jetflow.in.x.start 2\r\n{}\r\nPING\r\n"); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if strings.Contains(string(rest), "PONG") {
		t.Fatalf("the server answered a plaintext client: %q", rest)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept a plaintext connection open")
	}
	// The standard client refuses too: it cannot verify the server
	// without the deployment's CA, and it never falls back to plaintext.
	if _, err := nats.Connect(d.srv.ClientURL(), nats.MaxReconnects(0)); err == nil {
		t.Fatal("a client without TLS settings connected")
	}
}

// TestEmbeddedDefaultIsLoopback: an embedded server listens on loopback
// unless its Listen says otherwise, also when the host is left out.
func TestEmbeddedDefaultIsLoopback(t *testing.T) {
	host, _, err := net.SplitHostPort(embedded.DefaultListen)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		t.Fatalf("DefaultListen %q is not loopback", embedded.DefaultListen)
	}
	srv := natstest.Server(t, natstest.WithMemoryStore(), natstest.WithConfig(func(c *embedded.Config) { c.Listen = ":0" }))
	a, ok := srv.NATS().Addr().(*net.TCPAddr)
	if !ok || !a.IP.IsLoopback() {
		t.Fatalf("an embedded server with Listen %q bound %v", ":0", srv.NATS().Addr())
	}
}

// TestDispatcherRunsTriggersWithItsRole: the generated dispatcher user,
// granted its deployment's trigger "ticks", follows the trigger bucket,
// makes the trigger's stream and consumer and starts a run per message;
// a trigger it was not granted is refused: its stream (which the
// operator's deploy made) gets no consumer, and what it holds waits.
func TestDispatcherRunsTriggersWithItsRole(t *testing.T) {
	r := startRoles(t)
	ctx := testCtx(t, 60*time.Second)
	if _, err := trigger.Store(ctx, r.op.js, r.names, "timed", []byte(`{"ticks":{"subject":"app.ticks","key":"$.data.id"},"tocks":{"subject":"app.tocks","key":"$.data.id"}}`)); err != nil {
		t.Fatal(err)
	}
	dc := r.client(t, r.disp)
	tr := trigger.NewRunner(trigger.Config{JS: r.disp.js, Names: r.names, Client: dc, Logger: quiet()})
	if err := tr.Start(ctx); err != nil {
		t.Fatalf("the trigger runner as the dispatcher: %v", err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tr.Stop(sctx)
	})
	natstest.WaitFor(t, 30*time.Second, "the ticks stream", func() error {
		_, err := r.op.js.Stream(ctx, r.names.TriggerStream("ticks"))
		return err
	})
	for _, subj := range []string{"app.ticks", "app.tocks"} {
		if err := r.op.Publish(subj, []byte(`{"id":"1"}`)); err != nil {
			t.Fatal(err)
		}
	}
	observer := r.client(t, r.observer)
	natstest.WaitFor(t, 30*time.Second, "ticks-1 is done", func() error {
		st, err := observer.Status(ctx, "ticks-1")
		if err != nil {
			return err
		}
		if st.Status != wire.StatusDone {
			return errors.New(st.Status)
		}
		return nil
	})
	tocks, err := r.op.js.Stream(ctx, r.names.TriggerStream("tocks"))
	if err != nil {
		t.Fatalf("the stream deploy made for a trigger the dispatcher was not granted: %v", err)
	}
	if _, err := tocks.Consumer(ctx, r.names.TriggerConsumer()); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("the consumer of a trigger the dispatcher was not granted: %v", err)
	}
	if info, err := tocks.Info(ctx); err != nil || info.State.Msgs != 1 {
		t.Fatalf("the message of a trigger the dispatcher was not granted: %v %+v", err, info)
	}
	if _, err := observer.Status(ctx, "tocks-1"); err == nil {
		t.Fatal("a trigger the dispatcher was not granted started a run")
	}
}
