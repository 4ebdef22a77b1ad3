package integration

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// TestChildKeptUntilParentSettles: a child run whose retention ends while
// its parent still runs is kept (its removal deferred, with the reason in
// the log); once the parent settles the child is removed, and the
// parent's tree shows it removed by retention at the tombstone's time,
// then still removed (not starting) once the tombstone is gone too.
func TestChildKeptUntilParentSettles(t *testing.T) {
	t.Parallel()
	e := setup(t, options{dispatcher: dispatcher.Config{Retention: time.Second, RemovalBucket: time.Second}})
	e.deployWith(t, "keepkid", `{"$workflow":"0.2","revision":"keepkid/1","initial":"a","states":{
		"a":{"work":{"task":"pick","version":"1"},"then":"b"},
		"b":{"work":{"task":"hold","version":"1"},"then":"done"},
		"done":{"final":true}}}`, `{"$children":{"pick@1":{"workflow":"one"}},"$run":{"retention":"off"}}`)
	e.start(t, "keepkid", "kp", 21)
	select {
	case got := <-e.tasks.held:
		if got != "kp" {
			t.Fatalf("held run %s, want kp", got)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the parent never reached its held task")
	}
	kid := e.record(t, "kp").Children[0].Run
	if st := e.wait(t, kid, time.Minute); st.Status != wire.StatusDone {
		t.Fatalf("child: %+v, want done", st)
	}
	// Its retention (1s) has passed once its removal is deferred.
	natstest.WaitFor(t, 2*time.Minute, "the child's removal deferred", func() error {
		if len(e.logs.lines("removal deferred", "its parent run kp is running", kid)) == 0 {
			return errors.New("not yet")
		}
		return nil
	})
	if _, err := e.f.Client.Status(e.ctx, kid); err != nil {
		t.Fatalf("the child of a running parent: %v, want kept", err)
	}
	e.tasks.unhold("kp")
	if st := e.wait(t, "kp", time.Minute); st.Status != wire.StatusDone || string(st.Result) != `"released"` {
		t.Fatalf("parent: %+v, want done", st)
	}
	var re *runrecord.RemovedError
	natstest.WaitFor(t, 2*time.Minute, "the child removed after its parent settled", func() error {
		if _, err := e.f.Client.Status(e.ctx, kid); !errors.As(err, &re) {
			return fmt.Errorf("status: %w", err)
		}
		return nil
	})
	parent, err := e.f.Client.Record(e.ctx, "kp") // kept for ever: its policy's retention is off
	if err != nil {
		t.Fatal(err)
	}
	tree, err := e.f.Client.Tree(e.ctx, parent, 1)
	if err != nil || len(tree) != 1 || tree[0].Status != client.ChildRemoved || tree[0].RemovedAt != re.Removed.At {
		t.Fatalf("tree of kp: %+v %v, want %s removed at %v", tree, err, kid, re.Removed.At)
	}
	// The tombstone gone (its TTL), the child is still removed, not starting.
	kv, err := e.f.JS.KeyValue(e.ctx, e.names.RunBucket())
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(e.ctx, kid); err != nil {
		t.Fatal(err)
	}
	tree, err = e.f.Client.Tree(e.ctx, parent, 1)
	if err != nil || len(tree) != 1 || tree[0].Status != client.ChildRemoved || tree[0].RemovedAt != 0 {
		t.Fatalf("tree of kp with the child's tombstone gone: %+v %v, want it removed", tree, err)
	}
}
