package integration

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// TestMigrationJobSurvivesDispatcherKill: the dispatcher process holding
// a migration job is SIGKILLed after sending a batch of migrations it had
// not recorded yet; another takes the job over and finishes it. Every run
// is migrated once or not at all: one migration input stored per run at
// most, every run still waiting is on the new revision, and each
// replays to its saved state.
func TestMigrationJobSurvivesDispatcherKill(t *testing.T) {
	t.Parallel()
	const runs, batch = 100, 20
	e := setup(t, options{dispatchers: none})
	lease := []string{jobBatchEnv + "=" + strconv.Itoa(batch), jobLeaseEnv + "=2s"}
	victim := e.spawnDispatcher(t, "", crashAckWait, append(lease, jobCrashEnv+"=3")...)
	ids := startWaiting(t, e, "m", runs)
	next := strings.Replace(workflows["approval"], `"revision":"approval/1"`, `"revision":"approval/2"`, 1)
	if _, err := e.f.Deploy(e.ctx, "approval", []byte(next)); err != nil {
		t.Fatal(err)
	}
	job, err := e.f.Client.SubmitJob(e.ctx, client.JobSpec{Operation: client.OpMigrate, Revision: "approval/2", Filter: wire.RunFilter{Workflow: "approval"}})
	if err != nil {
		t.Fatal(err)
	}
	if line := victim.next(t, 60*time.Second); line != "jobcrash 3" {
		t.Fatalf("the victim said %q, want jobcrash 3", line)
	}
	victim.waitKilled(t)
	e.spawnDispatcher(t, "", crashAckWait, lease...)
	j := watchJob(t, e, job.ID, 2*time.Minute)
	if j.State != wire.JobDone || j.Takeovers != 1 || j.Errors != 0 {
		t.Fatalf("job ended %+v; want done after one takeover, no errors", j)
	}
	e.consumerSettled(t, 60*time.Second)
	migrations := e.inputsPerRun(t, subjects.KindMigrate)
	moved := 0
	src := replay.Source{JS: e.f.JS, Names: e.names, Registry: e.f.Registry, Runs: e.f.Runs}
	for _, id := range ids {
		n := migrations[id]
		st, err := e.f.Client.Status(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case n > 1:
			t.Errorf("run %s: %d migration inputs stored, want at most 1", id, n)
		case st.Status == wire.StatusWaiting && (st.Revision != "approval/2" || n != 1):
			t.Errorf("run %s still waiting on %s with %d migrations stored: the job left it behind", id, st.Revision, n)
		case st.Revision == "approval/2":
			moved++
		}
		rec := e.checkRecord(t, id, 0)
		if len(rec.Applied) > 0 && n == 1 && st.Revision != "approval/2" {
			t.Errorf("run %s: a migration stored but the run is on %s", id, st.Revision)
		}
		rep, err := replay.Check(e.ctx, src, id)
		if err != nil || !rep.Equal {
			t.Errorf("run %s: replay after the migration: %v, differs at %q", id, err, rep.Divergence)
		}
	}
	t.Logf("killed the holder after sending batch 3 of %d; the next holder finished: %d of %d runs moved once, sent %d, skipped %d", runs/batch, moved, runs, j.Sent, j.Skipped)
}
