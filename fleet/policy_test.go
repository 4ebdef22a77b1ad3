package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// catching runs task@1 and ends in "ok" with its output or in "caught"
// with its failure.
func catching(task, revision string) []byte {
	return fmt.Appendf(nil, `{"$workflow":"0.2","revision":%q,"initial":"a","states":{
 "a":{"work":{"task":%q,"version":"1"},"then":"ok","catch":"caught"},
 "ok":{"final":true},"caught":{"final":true}}}`, revision, task)
}

func mustPolicy(t testing.TB, s string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// attempts records the attempts each run's task saw.
type attempts struct {
	mu  sync.Mutex
	got map[string][]int
}

func (a *attempts) add(inv worker.Invocation) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.got == nil {
		a.got = map[string][]int{}
	}
	a.got[inv.Run] = append(a.got[inv.Run], inv.Attempt)
}

func (a *attempts) of(run string) []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.got[run])
}

func startFleet(t testing.TB, ctx context.Context) *Fleet {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	f, err := Start(ctx, Config{
		Embedded:   embedded.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir(), Logger: quiet},
		Dispatcher: &dispatcher.Config{},
		Logger:     quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop(context.Background()) })
	return f
}

func startWorker(t testing.TB, ctx context.Context, js jetstream.JetStream, f *Fleet, handlers map[string]worker.Handler) {
	t.Helper()
	w, err := worker.New(js, worker.Config{Names: f.Names, PollWait: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for task, h := range handlers {
		if err := w.Register(task, "1", h); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
}

// TestDeployedPolicyRetries runs real retries on embedded NATS under the
// policies deployed with each workflow: the same failing task succeeds
// under one, is caught under another, and codes a policy names are not
// retried.
func TestDeployedPolicyRetries(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := startFleet(t, ctx)

	fast := `"initialInterval":"50ms","maxInterval":"200ms"`
	deploys := []struct{ name, doc, policy string }{
		{"generous", string(catching("flaky", "g1")), `{"flaky@1":{"maxAttempts":3,` + fast + `}}`},
		{"stingy", string(catching("flaky", "s1")), `{"*":{"maxAttempts":2,` + fast + `}}`},
		{"picky", string(catching("coded", "p1")), `{"coded":{"maxAttempts":4,` + fast + `,"nonRetryableCodes":["DECLINED"]}}`},
	}
	for _, d := range deploys {
		if _, err := f.DeployWith(ctx, d.name, []byte(d.doc), DeployOptions{Policy: mustPolicy(t, d.policy)}); err != nil {
			t.Fatalf("deploy %s: %v", d.name, err)
		}
	}
	var seen attempts
	startWorker(t, ctx, f.JS, f, map[string]worker.Handler{
		// flaky fails its first two attempts.
		"flaky": func(_ context.Context, inv worker.Invocation) (any, error) {
			seen.add(inv)
			if inv.Attempt < 3 {
				return nil, fmt.Errorf("attempt %d fails", inv.Attempt)
			}
			return map[string]any{"attempt": inv.Attempt}, nil
		},
		// coded fails with the code its input names.
		"coded": func(_ context.Context, inv worker.Invocation) (any, error) {
			seen.add(inv)
			var code string
			if err := inv.DecodeInput(&code); err != nil {
				return nil, err
			}
			return nil, worker.WithCode(code, errors.New("card refused"))
		},
	})

	cases := []struct {
		workflow, run string
		input         any
		state         string
		attempts      []int
	}{
		{"generous", "g-1", nil, "/states/ok", []int{1, 2, 3}},
		{"stingy", "s-1", nil, "/states/caught", []int{1, 2}},
		{"picky", "p-declined", "DECLINED", "/states/caught", []int{1}},
		{"picky", "p-busy", "BUSY", "/states/caught", []int{1, 2, 3, 4}},
	}
	for _, c := range cases {
		if err := f.Client.StartRun(ctx, c.workflow, c.run, c.input); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		st, err := f.Client.Wait(ctx, c.run)
		if err != nil {
			t.Fatalf("run %s: %v", c.run, err)
		}
		if st.Status != wire.StatusDone || st.State != c.state {
			t.Errorf("run %s of %s ended %s in %s (result %s), want done in %s", c.run, c.workflow, st.Status, st.State, st.Result, c.state)
		}
		if got := seen.of(c.run); !slices.Equal(got, c.attempts) {
			t.Errorf("run %s of %s: attempts %v, want %v", c.run, c.workflow, got, c.attempts)
		}
	}
}

// TestStartToCloseIsTheConsumersAckWait deploys a task's startToClose,
// lets a worker take an invocation and die (its connection closes with
// the invocation unacknowledged), and sees another worker get it again
// once that AckWait is over.
func TestStartToCloseIsTheConsumersAckWait(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := startFleet(t, ctx)
	if _, err := f.DeployWith(ctx, "slow", catching("slow", "v1"), DeployOptions{Policy: mustPolicy(t, `{"slow@1":{"startToClose":"2s"}}`)}); err != nil {
		t.Fatal(err)
	}
	consumer := f.Names.TaskConsumer("slow", "1")
	c, err := f.JS.Consumer(ctx, f.Names.TaskStream(), consumer)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.CachedInfo().Config.AckWait; got != 2*time.Second {
		t.Fatalf("consumer %s AckWait %v, want the policy's 2s", consumer, got)
	}

	if err := f.Client.StartRun(ctx, "slow", "slow-1", nil); err != nil {
		t.Fatal(err)
	}
	// The doomed worker: its own connection, which it loses mid-task.
	nc, err := nats.Connect(f.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := js.Consumer(ctx, f.Names.TaskStream(), consumer)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := dc.Fetch(1, jetstream.FetchMaxWait(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	for range batch.Messages() {
		taken++
	}
	if taken != 1 {
		t.Fatalf("the doomed worker fetched %d invocations (%v)", taken, batch.Error())
	}
	nc.Close()

	deliveries := make(chan uint64, 4)
	startWorker(t, ctx, f.JS, f, map[string]worker.Handler{
		"slow": func(_ context.Context, inv worker.Invocation) (any, error) {
			deliveries <- inv.Delivery
			return "survived", nil
		},
	})
	st, err := f.Client.Wait(ctx, "slow-1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != wire.StatusDone || st.State != "/states/ok" || string(st.Result) != `"survived"` {
		t.Fatalf("run ended %+v", st)
	}
	if d := <-deliveries; d != 2 {
		t.Errorf("the surviving worker got delivery %d, want 2 (a redelivery)", d)
	}
}

// TestLatestDeployWinsTheAckWait: two deployments disagreeing on one task
// version's startToClose leave the consumer with the latest, and the
// deploy that changed it says so.
func TestLatestDeployWinsTheAckWait(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := startFleet(t, ctx)
	ackWait := func() time.Duration {
		t.Helper()
		c, err := f.JS.Consumer(ctx, f.Names.TaskStream(), f.Names.TaskConsumer("ship", "1"))
		if err != nil {
			t.Fatal(err)
		}
		return c.CachedInfo().Config.AckWait
	}
	steps := []struct {
		name, revision, policy string
		want                   time.Duration
		count                  int
		notes                  []string
	}{
		{"a", "a1", `{"ship":{"startToClose":"30s"}}`, 30 * time.Second, 0, nil},
		{"b", "b1", `{"*":{"startToClose":"30s"}}`, 30 * time.Second, 0, nil},
		{"c", "c1", `{"ship@1":{"startToClose":"10s"}}`, 10 * time.Second, 1, []string{
			`task ship@1: consumer task_ship_1 now redelivers after 10s instead of 30s (startToClose of workflow "c" revision "c1"; the latest deploy wins`,
			"running workers follow within their ConsumerRefresh (default 5s), and their invocations that started before may be redelivered once",
		}},
		{"d", "d1", `{}`, provision.DefaultStartToClose, 1, []string{"now redelivers after 1m0s instead of 10s ("}},
		{"e", "e1", `{"shp@1":{"maxAttempts":2},"ship@2":{},"ship":{}}`, provision.DefaultStartToClose, 2, []string{
			`policy entry "ship@2" matches no task of workflow "e" revision "e1"`,
			`policy entry "shp@1" matches no task`,
		}},
	}
	for _, s := range steps {
		d, err := f.DeployWith(ctx, s.name, catching("ship", s.revision), DeployOptions{Policy: mustPolicy(t, s.policy)})
		if err != nil {
			t.Fatal(err)
		}
		if got := ackWait(); got != s.want {
			t.Errorf("after deploying %s: AckWait %v, want %v", s.name, got, s.want)
		}
		all := strings.Join(d.Notes, "\n")
		if len(d.Notes) != s.count {
			t.Errorf("deploying %s noted %q, want %q", s.name, d.Notes, s.notes)
		}
		for _, want := range s.notes {
			if !strings.Contains(all, want) {
				t.Errorf("deploying %s noted %q, want %q", s.name, d.Notes, want)
			}
		}
	}
}
