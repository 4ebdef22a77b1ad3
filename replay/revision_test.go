package replay_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// migBase is the workflow the revision tests change: a task, a guard it
// passes (8 > 5), then a wait for either of two events or a long timer.
const migBase = `{"$workflow":"0.2","revision":"mig-1","initial":"check","states":{
 "check":{"work":{"task":"double","version":"1"},"then":"gate"},
 "gate":{"choose":[{"guard":{"$gt":["$.context.data",5]},"to":"wait"}],"otherwise":"done"},
 "wait":{"on":[{"event":"go","to":"done"},{"event":"stop","to":"done"}],"after":{"ms":600000,"to":"done"}},
 "done":{"final":true}}}`

// slowBase waits on a task no worker serves: its invocation stays in
// flight.
const slowBase = `{"$workflow":"0.2","revision":"slow-1","initial":"hold","states":{
 "hold":{"work":{"task":"slow","version":"1"},"then":"done"},"done":{"final":true}}}`

// revise is base with each pair of replacements made, as revision rev.
func revise(base, rev string, pairs ...string) string {
	r := strings.NewReplacer(pairs...)
	old := base[strings.Index(base, `"revision":"`)+len(`"revision":"`):]
	old = old[:strings.Index(old, `"`)]
	return strings.Replace(r.Replace(base), `"revision":"`+old+`"`, `"revision":"`+rev+`"`, 1)
}

// revisionBundle is setup's deployment with the revision tests' runs:
// mig-w waits in state wait, slow-f has its task in flight.
type revisionBundle struct {
	*bundle
	ctx context.Context
}

func setupRevisions(t *testing.T) *revisionBundle {
	t.Helper()
	b := setup(t, provision.ProvisionOptions{}, 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	rb := &revisionBundle{bundle: b, ctx: ctx}
	for name, doc := range map[string]string{"mig": migBase, "slow": slowBase} {
		if _, err := b.f.Deploy(ctx, name, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.f.Client.StartRun(ctx, "mig", "mig-w", 4); err != nil {
		t.Fatal(err)
	}
	if err := b.f.Client.StartRun(ctx, "slow", "slow-f", 1); err != nil {
		t.Fatal(err)
	}
	rb.waitState(t, "mig-w", wire.StatusWaiting, "")
	rb.waitState(t, "slow-f", wire.StatusRunning, "")
	b.settled(t)
	return rb
}

func (b *revisionBundle) waitState(t *testing.T, id, status, revision string) *wire.Status {
	t.Helper()
	var last *wire.Status
	defer func() {
		if t.Failed() {
			data, _, _ := b.f.Runs.Get(b.ctx, id)
			t.Logf("record of %s: %s", id, data)
		}
	}()
	natstest.WaitFor(t, 3*time.Minute, id+" "+status, func() error {
		st, err := b.f.Client.Status(b.ctx, id)
		if err != nil {
			return err
		}
		if st.Status != status || revision != "" && st.Revision != revision {
			return fmt.Errorf("status %s revision %s", st.Status, st.Revision)
		}
		last = st
		return nil
	})
	return last
}

func (b *revisionBundle) check(t *testing.T, name, doc string, ids ...string) []replay.RunCheck {
	t.Helper()
	cand, err := replay.Candidate(b.ctx, b.f.Registry, runOptions, name, []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := replay.CheckRevision(b.ctx, b.src, cand, ids)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestCheckRevisionEdgeCases replays real histories (a run waiting for an
// event, a run with a task in flight) under changed revisions: what the
// run has not reached may change, what it did or waits for may not.
func TestCheckRevisionEdgeCases(t *testing.T) {
	t.Parallel()
	b := setupRevisions(t)
	cases := []struct {
		name, doc, run string
		want           string
		what           string // the divergence's What
	}{
		{"same document under a new revision", revise(migBase, "mig-2"), "mig-w", replay.CheckSame, ""},
		{"added state after the current one", revise(migBase, "mig-2", `{"event":"go","to":"done"}`, `{"event":"go","to":"extra"}`, `"done":{"final":true}`, `"extra":{"work":{"task":"double","version":"1"},"then":"done"},"done":{"final":true}`), "mig-w", replay.CheckSame, ""},
		{"renamed state", revise(migBase, "mig-2", `"wait"`, `"hold"`), "mig-w", replay.CheckDiverges, "state"},
		{"changed guard already passed, same branch", revise(migBase, "mig-2", `"$.context.data",5`, `"$.context.data",6`), "mig-w", replay.CheckSame, ""},
		{"changed guard already passed, other branch", revise(migBase, "mig-2", `"$.context.data",5`, `"$.context.data",100`), "mig-w", replay.CheckDiverges, "state"},
		{"changed guard not yet reached", revise(migBase, "mig-2", `{"event":"go","to":"done"}`, `{"event":"go","to":"done","guard":{"$gt":["$.context.data",1000]}}`), "mig-w", replay.CheckSame, ""},
		{"changed task version", revise(migBase, "mig-2", `"version":"1"`, `"version":"2"`), "mig-w", replay.CheckDiverges, "state"},
		{"changed duration of an armed timer", revise(migBase, "mig-2", `"ms":600000`, `"ms":300000`), "mig-w", replay.CheckDiverges, "state"},
		{"removed event branch the run waits on", revise(migBase, "mig-2", `,{"event":"stop","to":"done"}`, ``), "mig-w", replay.CheckDiverges, "waits"},
		{"task in flight, step added after it", revise(slowBase, "slow-2", `"then":"done"},"done"`, `"then":"more"},"more":{"work":{"task":"slow","version":"1"},"then":"done"},"done"`), "slow-f", replay.CheckSame, ""},
		{"task in flight, its version changed", revise(slowBase, "slow-2", `"version":"1"`, `"version":"2"`), "slow-f", replay.CheckDiverges, "state"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := strings.SplitN(c.run, "-", 2)[0]
			got := b.check(t, name, c.doc, c.run)[0]
			if got.Verdict != c.want {
				t.Fatalf("verdict %s, want %s: %+v %+v", got.Verdict, c.want, got, got.Divergence)
			}
			if c.want == replay.CheckDiverges {
				d := got.Divergence
				if d.What != c.what {
					t.Fatalf("divergence %s, want %s: %s", d.What, c.what, d.Text())
				}
				t.Log(d.Text())
			}
			if c.want == replay.CheckSame && got.Proof == "" {
				t.Fatal("a run found the same carries no proof")
			}
		})
	}
}

// TestCheckRevisionNamesDivergedInvocations: a changed task version is
// reported at the start, with both invocations.
func TestCheckRevisionNamesDivergedInvocations(t *testing.T) {
	t.Parallel()
	b := setupRevisions(t)
	got := b.check(t, "mig", revise(migBase, "mig-2", `"version":"1"`, `"version":"2"`), "mig-w", "no-such-run")
	d := got[0].Divergence
	if got[0].Verdict != replay.CheckDiverges || d.Input != 1 || d.Kind != "start" || len(d.Invocations) != 1 ||
		!strings.HasPrefix(d.Invocations[0].Old, "double@1 ") || !strings.HasPrefix(d.Invocations[0].New, "double@2 ") {
		t.Fatalf("got %+v %+v", got[0], d)
	}
	if got[1].Verdict != replay.CheckFails || !strings.Contains(got[1].Error, "no record") {
		t.Fatalf("a run that does not exist: %+v", got[1])
	}
}

// TestMigrateJob moves a waiting run and a run with a task in flight
// onto revisions that add a step after them, as a bulk job; the moved
// runs then take the new step, replay rebuilds them exactly, and a
// migration the history disproves is refused where status shows it.
func TestMigrateJob(t *testing.T) {
	t.Parallel()
	b := setupRevisions(t)
	added := revise(migBase, "mig-2", `{"event":"go","to":"done"}`, `{"event":"go","to":"extra"}`, `"done":{"final":true}`, `"extra":{"work":{"task":"square","version":"1"},"then":"done"},"done":{"final":true}`)
	slow2 := revise(slowBase, "slow-2", `"then":"done"},"done"`, `"then":"more"},"more":{"work":{"task":"double","version":"1"},"then":"done"},"done"`)
	for name, doc := range map[string]string{"mig": added, "slow": slow2} {
		if _, err := b.f.Deploy(b.ctx, name, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	for name, to := range map[string]string{"mig": "mig-2", "slow": "slow-2"} {
		j, err := b.f.Client.SubmitJob(b.ctx, client.JobSpec{Operation: client.OpMigrate, Revision: to, Filter: wire.RunFilter{Workflow: name}})
		if err != nil {
			t.Fatal(err)
		}
		done, err := b.f.Client.WatchJob(b.ctx, j.ID, func(*wire.Job) bool { return true })
		if err != nil || done.State != wire.JobDone || done.Sent != 1 || done.Errors != 0 {
			t.Fatalf("job %s: %+v, %v", name, done, err)
		}
	}
	b.waitState(t, "mig-w", wire.StatusWaiting, "mig-2")
	b.waitState(t, "slow-f", wire.StatusRunning, "slow-2")
	b.settled(t)
	b.checkEqual(t, "mig-w")
	b.checkEqual(t, "slow-f")

	// The moved run takes the step its new revision added: 8 squared.
	b.send(t, "mig-w", "go", nil)
	st := b.waitState(t, "mig-w", wire.StatusDone, "mig-2")
	if string(st.Result) != "64" {
		t.Fatalf("result %s, want 64 (the added step)", st.Result)
	}
	b.settled(t)
	b.checkEqual(t, "mig-w")

	// A renamed state disproves the move: refused, and the record says why.
	if err := b.f.Client.StartRun(b.ctx, "mig", "mig-r", 4); err != nil {
		t.Fatal(err)
	}
	b.waitState(t, "mig-r", wire.StatusWaiting, "mig-2")
	renamed := revise(added, "mig-3", `"wait"`, `"hold"`)
	if _, err := b.f.Deploy(b.ctx, "mig", []byte(renamed)); err != nil {
		t.Fatal(err)
	}
	j, err := b.f.Client.SubmitJob(b.ctx, client.JobSpec{Operation: client.OpMigrate, Revision: "mig-3", Filter: wire.RunFilter{Workflow: "mig", Status: wire.StatusWaiting}})
	if err != nil {
		t.Fatal(err)
	}
	if done, err := b.f.Client.WatchJob(b.ctx, j.ID, func(*wire.Job) bool { return true }); err != nil || done.State != wire.JobDone {
		t.Fatalf("job: %+v, %v", done, err)
	}
	natstest.WaitFor(t, 3*time.Minute, "the refusal recorded", func() error {
		data, _, err := b.f.Runs.Get(b.ctx, "mig-r")
		if err != nil {
			return err
		}
		rec, err := runrecord.Decode(data)
		if err != nil {
			return err
		}
		for _, r := range rec.Rejected {
			if r.Kind == "migrate" && strings.Contains(r.Reason, "diverges at input") {
				return nil
			}
		}
		return errors.New("no refused migration yet")
	})
	if st := b.waitState(t, "mig-r", wire.StatusWaiting, ""); st.Revision != "mig-2" {
		t.Fatalf("refused run moved to %s", st.Revision)
	}
	b.settled(t)
	b.checkEqual(t, "mig-r")
}
