package runindex_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/runindex"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

func TestMain(m *testing.M) {
	runindex.VerifyBuild()
	goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...)
}

// gate waits for the event go, then ends.
const gate = `{"$workflow": "0.2", "revision": "g1", "initial": "gate", "states": {
	"gate": {"on": [{"event": "go", "to": "end"}]},
	"end": {"final": true}}}`

type bundle struct {
	ctx   context.Context
	js    jetstream.JetStream
	names subjects.Names
	c     *client.Client
}

// setup starts a server, deploys gate with the search attribute customer
// (/input/customer), and runs a dispatcher, its indexer on unless
// indexOff.
func setup(t *testing.T, indexOff bool) *bundle {
	t.Helper()
	srv := natstest.Server(t)
	js := natstest.JetStream(t, natstest.Conn(t, srv))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	names := subjects.Must("")
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.OpenRegistry(ctx, js, names, registry.RegistryConfig{Validate: func(doc any) (registry.Info, error) {
		_, err := workflow.Compile(doc, workflow.Options{})
		return registry.Info{}, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte(`{"$run": {"search": {"customer": "/input/customer", "tier": "/input/tier"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.DeployWithPolicy(ctx, "gate", []byte(gate), pol); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	d, err := dispatcher.New(js, nil, reg, dispatcher.Config{Logger: quiet, Index: runindex.Config{Off: indexOff}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	c, err := client.New(ctx, js, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{ctx: ctx, js: js, names: names, c: c}
}

// start starts n runs idx-0… with customers c-0 and c-1 in turn, and
// sends go to the first done of them; it waits until each is settled
// in its record.
func (b *bundle) start(t *testing.T, n, done int) {
	t.Helper()
	for i := range n {
		in := map[string]any{"customer": fmt.Sprintf("c-%d", i%2), "tier": "gold tier"}
		if err := b.c.StartRun(b.ctx, "gate", fmt.Sprintf("idx-%d", i), in); err != nil {
			t.Fatal(err)
		}
	}
	b.settled(t, n, 0)
	// Every start indexed before the first event: the runs that end
	// change last in the index too.
	if _, err := b.c.ListRuns(b.ctx, client.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range done {
		if err := b.c.SendEvent(b.ctx, fmt.Sprintf("idx-%d", i), "go", nil); err != nil {
			t.Fatal(err)
		}
	}
	b.settled(t, n, done)
}

// settled waits until runs idx-0… are done (the first done of them) or
// waiting.
func (b *bundle) settled(t *testing.T, n, done int) {
	t.Helper()
	for i := range n {
		want := wire.StatusWaiting
		if i < done {
			want = wire.StatusDone
		}
		natstest.WaitFor(t, 30*time.Second, "run settled", func() error {
			st, err := b.c.Status(b.ctx, fmt.Sprintf("idx-%d", i))
			if err != nil {
				return err
			}
			if st.Status != want {
				return fmt.Errorf("run idx-%d is %s, want %s", i, st.Status, want)
			}
			return nil
		})
	}
}

// ids lists with opts and returns "run:status" for each run, in order.
func (b *bundle) ids(t *testing.T, opts client.ListOptions) (string, *client.RunPage) {
	t.Helper()
	page, err := b.c.ListRuns(b.ctx, opts)
	if err != nil {
		t.Fatalf("ListRuns %+v: %v", opts, err)
	}
	if page.Scanned {
		t.Fatalf("ListRuns %+v scanned the records, want the index", opts)
	}
	var out []string
	for _, r := range page.Runs {
		out = append(out, r.Status.Run+":"+r.Status.Status)
	}
	return strings.Join(out, " "), page
}

func TestListAnswersFromTheIndex(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.start(t, 6, 2)
	for _, c := range []struct {
		name string
		opts client.ListOptions
		want string
	}{
		{"status", client.ListOptions{Filter: wire.RunFilter{Status: wire.StatusWaiting}}, "idx-2:waiting idx-3:waiting idx-4:waiting idx-5:waiting"},
		{"workflow and status", client.ListOptions{Filter: wire.RunFilter{Workflow: "gate", Status: wire.StatusDone}}, "idx-0:done idx-1:done"},
		{"where", client.ListOptions{Filter: wire.RunFilter{Where: map[string]string{"customer": "c-1"}}}, "idx-1:done idx-3:waiting idx-5:waiting"},
		{"where and status", client.ListOptions{Filter: wire.RunFilter{Status: wire.StatusDone, Where: map[string]string{"customer": "c-0"}}}, "idx-0:done"},
		{"two wheres", client.ListOptions{Filter: wire.RunFilter{Where: map[string]string{"tier": "gold tier", "customer": "c-0"}}}, "idx-0:done idx-2:waiting idx-4:waiting"},
		{"where no run has", client.ListOptions{Filter: wire.RunFilter{Where: map[string]string{"customer": "c-9"}}}, ""},
		{"state", client.ListOptions{Filter: wire.RunFilter{State: "end"}}, "idx-0:done idx-1:done"},
		{"revision", client.ListOptions{Filter: wire.RunFilter{Revision: "g0"}}, ""},
		{"match", client.ListOptions{Filter: wire.RunFilter{Match: []byte(`{"$eq":["$.input.customer","c-1"]}`), Status: wire.StatusWaiting}}, "idx-3:waiting idx-5:waiting"},
		{"start order", client.ListOptions{Sort: client.SortStart, Filter: wire.RunFilter{Status: wire.StatusWaiting}}, "idx-5:waiting idx-4:waiting idx-3:waiting idx-2:waiting"},
	} {
		if got, _ := b.ids(t, c.opts); got != c.want {
			t.Errorf("%s: listed %q, want %q", c.name, got, c.want)
		}
	}
	// Most recently changed first: the two runs that ended last changed
	// after every start; pages by cursor cover each run once.
	var pages []string
	cursor := ""
	for range 10 {
		got, page := b.ids(t, client.ListOptions{Sort: client.SortUpdate, Limit: 4, Cursor: cursor})
		pages = append(pages, got)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	all := strings.Fields(strings.Join(pages, " "))
	if len(pages) != 2 || len(all) != 6 || !slices.Contains(all[:2], "idx-0:done") || !slices.Contains(all[:2], "idx-1:done") {
		t.Errorf("pages by update time: %q", pages)
	}
	slices.Sort(all)
	if got := strings.Join(all, " "); got != "idx-0:done idx-1:done idx-2:waiting idx-3:waiting idx-4:waiting idx-5:waiting" {
		t.Errorf("pages by update time cover %q", got)
	}
}

func TestIndexBackfillsAnExistingDeployment(t *testing.T) {
	t.Parallel()
	b := setup(t, true) // runs made while no dispatcher keeps the index
	b.start(t, 4, 1)
	// The dispatcher with its index off left the off mark: a listing
	// reads the records and says why.
	if off, err := client.ReadIndexOff(b.ctx, b.js, b.names); err != nil || off == nil || off.Since == "" {
		t.Fatalf("off mark of a dispatcher with its index off: %+v, %v", off, err)
	}
	page, err := b.c.ListRuns(b.ctx, client.ListOptions{Filter: wire.RunFilter{Status: wire.StatusWaiting}})
	if err != nil || !page.Scanned || page.IndexOff == nil || len(page.Runs) != 3 {
		t.Fatalf("listing with the index off: %+v, %v; want the 3 waiting runs, scanned, with the off mark", page, err)
	}
	x := runindex.New(b.js, runindex.Config{Logger: slog.New(slog.DiscardHandler)})
	x.Start()
	defer x.Stop()
	natstest.WaitFor(t, 30*time.Second, "the off mark removed by an indexer", func() error {
		if off, err := client.ReadIndexOff(b.ctx, b.js, b.names); err != nil || off != nil {
			return fmt.Errorf("off mark %+v: %w", off, err)
		}
		return nil
	})
	natstest.WaitFor(t, 30*time.Second, "backfilled index", func() error {
		got, _ := b.ids(t, client.ListOptions{Filter: wire.RunFilter{Where: map[string]string{"customer": "c-0"}}, Wait: -1})
		if got != "idx-0:done idx-2:waiting" {
			return fmt.Errorf("listed %q", got)
		}
		return nil
	})
}

func TestIndexFollowsRemovalAndDeletion(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.start(t, 2, 1)
	kv, err := b.js.KeyValue(b.ctx, b.names.RunBucket())
	if err != nil {
		t.Fatal(err)
	}
	// A tombstone, as retention writes it.
	tomb := fmt.Appendf(nil, `{"removed":{"run":"idx-0","at":1,"workflow":"gate","revision":"g1","status":"done","settled":1,"until":2}}`)
	if _, err := kv.Put(b.ctx, "idx-0", tomb); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.ids(t, client.ListOptions{Filter: wire.RunFilter{Status: wire.StatusRemoved}}); got != "idx-0:removed" {
		t.Errorf("--status removed listed %q", got)
	}
	if got, _ := b.ids(t, client.ListOptions{}); got != "idx-1:waiting" {
		t.Errorf("listing without a status showed %q, want removed runs left out", got)
	}
	if got, _ := b.ids(t, client.ListOptions{Filter: wire.RunFilter{Where: map[string]string{"customer": "c-0"}}}); got != "" {
		t.Errorf("a removed run keeps its search attributes: %q", got)
	}
	// The tombstone expires (or the record is deleted): the run is gone.
	if err := kv.Delete(b.ctx, "idx-0"); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.ids(t, client.ListOptions{Filter: wire.RunFilter{Status: wire.StatusRemoved}}); got != "" {
		t.Errorf("a deleted run is still listed: %q", got)
	}
	var left []string
	if _, err := kvstoreDirect(b, func(s string) { left = append(left, s) }); err != nil {
		t.Fatal(err)
	}
	for _, s := range left {
		if strings.HasSuffix(s, ".idx-0") && !strings.Contains(s, ".idx.h.") {
			t.Errorf("the index keeps %q for a deleted run", s)
		}
	}
}

// kvstoreDirect lists the subjects the index stream holds.
func kvstoreDirect(b *bundle, fn func(string)) (int, error) {
	s, err := b.js.Stream(b.ctx, b.names.IndexStream())
	if err != nil {
		return 0, err
	}
	info, err := s.Info(b.ctx, jetstream.WithSubjectFilter(b.names.IndexAll()))
	if err != nil {
		return 0, err
	}
	for subj := range info.State.Subjects {
		fn(subj)
	}
	return len(info.State.Subjects), nil
}
