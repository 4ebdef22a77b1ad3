package integration

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// TestRemovalSurvivesSIGKILL kills a dispatcher process (it SIGKILLs
// itself) in the middle of a removal by retention: after the tombstone
// replaced the run's record, before the run's history was purged.
// Another dispatcher gets the removal again and finishes it; a run still
// waiting, as old as the removed one, is kept and still goes forward.
func TestRemovalSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	e := setup(t, options{dispatchers: none})
	retention := time.Second
	p := e.spawnDispatcher(t, dispatcher.CrashAfterTombstone+"/"+subjects.KindExpire, crashAckWait, retentionEnv+"="+retention.String())
	e.start(t, "one", "c", 21)
	e.start(t, "approval", "w", nil)
	if st := e.wait(t, "c", 30*time.Second); st.Status != wire.StatusDone {
		t.Fatalf("run c ended %+v", st)
	}
	e.waitStatus(t, "w", wire.StatusWaiting, 30*time.Second)
	// A retention shorter than two removal buckets (10 s each) is due at
	// the end of the bucket two to three widths after settling: up to 30 s
	// before the removal begins, so 30 s of waiting was a coin toss.
	if line, want := p.next(t, 60*time.Second), "crash "+dispatcher.CrashAfterTombstone+" expire c"; line != want {
		t.Fatalf("dispatcher process said %q, want %q", line, want)
	}
	p.waitKilled(t)
	var re *runrecord.RemovedError
	if _, err := e.f.Client.Status(e.ctx, "c"); !errors.As(err, &re) || re.Removed.Status != wire.StatusDone {
		t.Fatalf("status of c after the kill: %v, want its tombstone", err)
	}
	if n := e.history(t, "c"); n == 0 {
		t.Fatal("c's history was purged before the crash point")
	}

	e.addDispatcher(dispatcher.Config{AckWait: crashAckWait})
	natstest.WaitFor(t, 30*time.Second, "c's history purged", func() error {
		if n := e.history(t, "c"); n != 0 {
			return errors.New("history left")
		}
		return nil
	})
	e.consumerSettled(t, 30*time.Second)
	if _, err := e.f.Client.Status(e.ctx, "c"); !errors.Is(err, runrecord.ErrRemoved) {
		t.Errorf("status of c: %v, want removed", err)
	}
	// The waiting run is kept, however long it waits, even when a removal
	// reaches it (as a late schedule of a revived run would): refused,
	// noted, and replayed alike.
	body, err := json.Marshal(wire.Expire{Settled: 1, Status: wire.StatusDone, Retention: 1000})
	if err != nil {
		t.Fatal(err)
	}
	fire := nats.NewMsg(e.names.Fired("w"))
	fire.Header.Set(wire.HeaderExpire, "1")
	fire.Data = body
	if _, err := e.f.JS.PublishMsg(e.ctx, fire); err != nil {
		t.Fatal(err)
	}
	rej := waitRejection(t, e, "w", func(r runrecord.Rejection) bool { return r.Kind == subjects.KindExpire })
	if !strings.Contains(rej.Reason, "is waiting: retention removes only settled runs") {
		t.Errorf("the removal of w was refused with %q", rej.Reason)
	}
	e.waitStatus(t, "w", wire.StatusWaiting, time.Second)
	checkReplay(t, e, "w")
	e.checkNoneStranded(t)
	if err := e.f.Client.SendEvent(e.ctx, "w", "approve", map[string]any{"ok": true, "amount": 2}); err != nil {
		t.Fatal(err)
	}
	if st := e.wait(t, "w", 30*time.Second); st.Status != wire.StatusDone {
		t.Errorf("w ended %+v", st)
	}
	checkReplay(t, e, "w")
}

// history is how many messages the input stream holds for the run.
func (e *env) history(t testing.TB, runID string) uint64 {
	t.Helper()
	s, err := e.f.JS.Stream(e.ctx, e.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(e.ctx, jetstream.WithSubjectFilter(e.names.RunInputs(runID)))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}
