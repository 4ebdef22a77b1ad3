package integration

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// fanChildren is how many child runs the fan-out test's parent starts.
const fanChildren = 100

// fanDoc is a DAG of fanChildren nodes of task spawn@1 (bound to the
// workflow "one", which doubles its input) joined into one object.
func fanDoc() string {
	var nodes, edges, join []string
	for i := range fanChildren {
		n := fmt.Sprintf("c%03d", i)
		nodes = append(nodes, fmt.Sprintf(`%q:{"kind":"task","run":"spawn","version":"1"}`, n))
		edges = append(edges, fmt.Sprintf(`{"from":"in","to":%q},{"from":%q,"to":"join","port":%q}`, n, n, n))
		join = append(join, fmt.Sprintf(`%q:"$.%s"`, n, n))
	}
	return `{"$workflow":"0.2","revision":"fan100/1","initial":"fan","states":{
		"fan":{"work":{"dag":{"$dag":"0.1","nodes":{"in":{"kind":"input"},` + strings.Join(nodes, ",") +
		`,"join":{"kind":"query","query":{` + strings.Join(join, ",") + `}},"out":{"kind":"output"}},
		"edges":[` + strings.Join(edges, ",") + `,{"from":"join","to":"out"}]}},"then":"done"},
		"done":{"final":true}}}`
}

// childWorkflows are deployed, in order, by the child run tests: a
// three-level chain (top starts middle, which starts one), the fan-out,
// and a parent whose child holds until released (holder).
var childWorkflows = []struct{ name, doc, policy string }{
	{
		"middle", `{"$workflow":"0.2","revision":"middle/1","initial":"a","states":{
		"a":{"work":{"task":"leaf","version":"1"},"then":"done"},"done":{"final":true}}}`,
		`{"$children":{"leaf@1":{"workflow":"one"}}}`,
	},
	{
		"top", `{"$workflow":"0.2","revision":"top/1","initial":"a","states":{
		"a":{"work":{"task":"mid","version":"1"},"then":"done"},"done":{"final":true}}}`,
		`{"$children":{"mid@1":{"workflow":"middle"}}}`,
	},
	{"fan100", fanDoc(), `{"$children":{"spawn@1":{"workflow":"one"}}}`},
	{"holder", `{"$workflow":"0.2","revision":"holder/1","initial":"a","states":{
		"a":{"work":{"task":"hold","version":"1"},"then":"done"},"done":{"final":true}}}`, `{}`},
	{
		"parent", `{"$workflow":"0.2","revision":"parent/1","initial":"a","states":{
		"a":{"work":{"task":"sub","version":"1"},"then":"done"},"done":{"final":true}}}`,
		`{"$children":{"sub@1":{"workflow":"holder"}}}`,
	},
	{
		"detached", `{"$workflow":"0.2","revision":"detached/1","initial":"a","states":{
		"a":{"work":{"task":"sub","version":"1"},"then":"done"},"done":{"final":true}}}`,
		`{"$children":{"sub@1":{"workflow":"holder","cascade":false}}}`,
	},
	{
		"impatient", `{"$workflow":"0.2","revision":"impatient/1","initial":"a","states":{
		"a":{"work":{"task":"sub","version":"1"},"then":"done"},"done":{"final":true}}}`,
		`{"$children":{"sub@1":{"workflow":"holder"}},"sub@1":{"attemptTimeout":"1s","maxAttempts":1}}`,
	},
}

// deployChildren deploys childWorkflows.
func (e *env) deployChildren(t *testing.T) {
	t.Helper()
	for _, w := range childWorkflows {
		p, err := policy.Parse([]byte(w.policy))
		if err != nil {
			t.Fatalf("policy of %s: %v", w.name, err)
		}
		if _, err := e.f.DeployWith(e.ctx, w.name, []byte(w.doc), fleet.DeployOptions{Policy: p}); err != nil {
			t.Fatalf("deploy %s: %v", w.name, err)
		}
	}
}

// childrenOf reads the records of every run whose parent is runID.
func (e *env) childrenOf(t testing.TB, runID string) map[string]*runrecord.Record {
	t.Helper()
	entries, err := e.f.Runs.List(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*runrecord.Record{}
	for _, en := range entries {
		rec, err := runrecord.Decode(en.Data)
		if err != nil {
			continue
		}
		if rec.Parent != nil && rec.Parent.Run == runID {
			out[en.RunID] = rec
		}
	}
	return out
}

// checkChildren checks that run parent linked want children, each a run
// started once whose record links back, that ran its one task once, and
// that each replays to its record.
func (e *env) checkChildren(t *testing.T, parent string, want int, replays int) []string {
	t.Helper()
	rec := e.checkRecord(t, parent, 0)
	if len(rec.Children) != want {
		t.Fatalf("run %s links %d children, want %d", parent, len(rec.Children), want)
	}
	kids := e.childrenOf(t, parent)
	if len(kids) != want {
		t.Fatalf("%d runs name %s as their parent, want %d", len(kids), parent, want)
	}
	var ids []string
	for i, c := range rec.Children {
		k := kids[c.Run]
		if k == nil {
			t.Fatalf("child %s of %s has no record", c.Run, parent)
		}
		if k.Parent.Node != c.Node || k.Parent.Attempt != c.Attempt || k.Parent.Activation != c.Activation {
			t.Errorf("child %s links back to %+v, the parent links %+v", c.Run, k.Parent, c)
		}
		e.checkRecord(t, c.Run, 0) // a second start would be a rejection
		if i < replays {
			checkReplay(t, e, c.Run)
		}
		ids = append(ids, c.Run)
	}
	checkReplay(t, e, parent)
	return ids
}

// TestChildFanOut starts a parent whose DAG starts 100 child runs, with a
// dispatcher killed in the middle: in process right after it saved the
// parent's step that starts them (before publishing the starts), and as
// a process SIGKILLed after saving the step of a child that settled
// (before publishing its result to the parent). Every child starts once,
// the parent gets every child's result, and parent and children replay.
func TestChildFanOut(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, e *env) {
		st := e.wait(t, "p", 2*time.Minute)
		if st.Status != wire.StatusDone {
			t.Fatalf("parent: %+v, want done", st)
		}
		var want []string
		for i := range fanChildren {
			want = append(want, fmt.Sprintf(`"c%03d":42`, i))
		}
		if got, w := canonical(t, string(st.Result)), canonical(t, "{"+strings.Join(want, ",")+"}"); got != w {
			t.Fatalf("parent result %s, want %s", got, w)
		}
		e.consumerSettled(t, time.Minute)
		ids := e.checkChildren(t, "p", fanChildren, 10)
		for _, id := range ids {
			if n := len(e.tasks.invocations(id)); n != 1 {
				t.Errorf("child %s ran its task %d times, want once", id, n)
			}
		}
		if got := e.lastSeq(t, e.names.TaskStream()); got != fanChildren {
			t.Errorf("%d invocations stored, want %d (one per child; none for the bound task)", got, fanChildren)
		}
	}
	t.Run("in process", func(t *testing.T) {
		t.Parallel()
		e := setup(t, options{dispatchers: none, workers: 2})
		e.deployChildren(t)
		e.crashOnce(t, func(p, runID, kind string) bool {
			return p == dispatcher.CrashAfterSave && runID == "p" && kind == subjects.KindStart
		}, func() { e.start(t, "fan100", "p", 21) })
		check(t, e)
	})
	t.Run("process", func(t *testing.T) {
		t.Parallel()
		e := setup(t, options{dispatchers: none, workers: 2})
		e.deployChildren(t)
		p := e.spawnDispatcher(t, dispatcher.CrashAfterSave+"/"+subjects.KindResult, crashAckWait)
		e.start(t, "fan100", "p", 21)
		line := p.next(t, time.Minute)
		if !strings.HasPrefix(line, "crash "+dispatcher.CrashAfterSave+" result p--") {
			t.Fatalf("dispatcher process said %q, want a crash at a child's result", line)
		}
		p.waitKilled(t)
		e.spawnDispatcher(t, "", crashAckWait)
		check(t, e)
	})
}

// TestChildChain runs a three-level chain (top starts middle, which
// starts one) with a dispatcher killed after saving the middle child's
// settlement, before its result reached the top.
func TestChildChain(t *testing.T) {
	t.Parallel()
	e := setup(t, options{dispatchers: none})
	e.deployChildren(t)
	e.crashOnce(t, func(p, runID, kind string) bool {
		return p == dispatcher.CrashAfterSave && kind == subjects.KindResult && strings.HasPrefix(runID, "t--") && strings.Count(runID, "--") == 1
	}, func() { e.start(t, "top", "t", 21) })
	st := e.wait(t, "t", time.Minute)
	if st.Status != wire.StatusDone || string(st.Result) != "42" {
		t.Fatalf("top: %+v, want done with 42", st)
	}
	e.consumerSettled(t, time.Minute)
	mid := e.checkChildren(t, "t", 1, 1)
	leaf := e.checkChildren(t, mid[0], 1, 1)
	if n := len(e.tasks.invocations(leaf[0])); n != 1 {
		t.Errorf("the leaf ran its task %d times, want once", n)
	}
	if got := e.lastSeq(t, e.names.TaskStream()); got != 1 {
		t.Errorf("%d invocations stored, want 1 (the leaf's)", got)
	}
	tree, err := e.f.Client.Tree(e.ctx, e.record(t, "t"), client.MaxTreeDepth)
	if err != nil || len(tree) != 1 || tree[0].Run != mid[0] || tree[0].Status != wire.StatusDone ||
		len(tree[0].Children) != 1 || tree[0].Children[0].Run != leaf[0] || tree[0].Children[0].Status != wire.StatusDone {
		t.Errorf("tree of t: %+v %v, want %s and below it %s, both done", tree, err, mid[0], leaf[0])
	}
}

// heldChild starts run id of workflow and waits for its child's hold task
// to start; it returns the child's id.
func heldChild(t *testing.T, e *env, workflow, id string) string {
	t.Helper()
	e.start(t, workflow, id, 1)
	select {
	case got := <-e.tasks.held:
		if !strings.HasPrefix(got, id+"--") {
			t.Fatalf("held run %s, want a child of %s", got, id)
		}
		return got
	case <-time.After(time.Minute):
		t.Fatalf("the child of %s never started its task", id)
	}
	return ""
}

// TestChildCascade: the parent's pause, resume and cancel reach its child;
// terminate too; a detached child (cascade false) outlives its cancelled
// parent; a child whose attempt's deadline passes is cancelled.
func TestChildCascade(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.deployChildren(t)
	c := e.f.Client

	kid := heldChild(t, e, "parent", "pc")
	if err := c.Pause(e.ctx, "pc", "maintenance", "ops"); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, kid, wire.StatusPaused, time.Minute)
	if err := c.Resume(e.ctx, "pc", "", "ops"); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, kid, wire.StatusRunning, time.Minute)
	if err := c.Cancel(e.ctx, "pc", "not needed"); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, kid, wire.StatusCancelled, time.Minute)
	e.waitStatus(t, "pc", wire.StatusCancelled, time.Minute)
	e.tasks.unhold(kid)

	kid = heldChild(t, e, "parent", "pt")
	if err := c.Terminate(e.ctx, "pt", "duplicate", "ops"); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, kid, wire.StatusTerminated, time.Minute)
	e.tasks.unhold(kid)

	kid = heldChild(t, e, "detached", "pd")
	if err := c.Cancel(e.ctx, "pd", "not needed"); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, "pd", wire.StatusCancelled, time.Minute)
	e.tasks.unhold(kid)
	if st := e.wait(t, kid, time.Minute); st.Status != wire.StatusDone {
		t.Errorf("detached child: %+v, want done after its parent's cancel", st)
	}

	kid = heldChild(t, e, "impatient", "pi")
	if st := e.wait(t, "pi", time.Minute); st.Status != wire.StatusFailed {
		t.Errorf("impatient parent: %+v, want failed on its attempt's deadline", st)
	}
	e.waitStatus(t, kid, wire.StatusCancelled, time.Minute)
	e.tasks.unhold(kid)

	e.consumerSettled(t, time.Minute)
	for _, id := range []string{"pc", "pt", "pd", "pi"} {
		checkReplay(t, e, id)
	}
}

// TestChildBindingRefused: a binding to a workflow that is not deployed,
// or of a task the document never invokes, is refused at deploy with the
// pointer to the binding.
func TestChildBindingRefused(t *testing.T) {
	t.Parallel()
	e := setup(t, options{dispatchers: none, workers: none})
	doc := []byte(`{"$workflow":"0.2","revision":"r/1","initial":"a","states":{
		"a":{"work":{"task":"sub","version":"1"},"then":"done"},"done":{"final":true}}}`)
	for _, tc := range []struct{ policy, pointer, reason string }{
		{`{"$children":{"sub@1":{"workflow":"nowhere"}}}`, "/$children/sub@1/workflow", `workflow "nowhere" is not deployed`},
		{`{"$children":{"other@1":{"workflow":"one"}}}`, "/$children/other@1", "the document invokes no task other@1"},
	} {
		p, err := policy.Parse([]byte(tc.policy))
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.f.DeployWith(e.ctx, "refused", doc, fleet.DeployOptions{Policy: p})
		var pe *policy.Error
		if !errors.As(err, &pe) || pe.Pointer != tc.pointer || !strings.Contains(pe.Reason, tc.reason) {
			t.Errorf("deploy with %s: %v, want a policy error at %s saying %q", tc.policy, err, tc.pointer, tc.reason)
		}
	}
}
