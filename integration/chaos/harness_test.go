package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

// prefix names the deployment's subjects, streams and buckets.
const prefix = "chaos"

// taskAckWait is the task consumers' AckWait (TaskPolicy.StartToClose):
// how soon an invocation a killed worker held goes to another worker.
const taskAckWait = 5 * time.Second

// startTimeout bounds the start of one process.
const startTimeout = 90 * time.Second

// harness is the deployment under test and everything the test learns
// about it.
type harness struct {
	t    *testing.T
	m    mode
	dir  string
	logs *os.File // the harness's own log
	log  *slog.Logger
	rng  *rand.Rand // used by the fault loop only
	seed uint64

	lab         *netlab // nil: nodes on loopback, no partitions
	nodes       []*node
	dispatchers []*proc
	workers     []*proc
	urls        string

	f      *fleet.Fleet
	names  subjects.Names
	client *client.Client
	// watch follows the run bucket's records (retention_test.go).
	watch *watcher

	began time.Time
	// restarts tracks the restarts and heals still to come.
	restarts sync.WaitGroup

	mu     sync.Mutex
	faults []*fault
	// natsBusy: a NATS node is down or cut off; no second one may be.
	natsBusy bool
	// taskPaused: a task version is paused; no second one is.
	taskPaused bool
	// failedStarts counts restarts that failed and were tried again.
	failedStarts int
	// errs are failures of the background restarts.
	errs []error
}

// fault is one injected fault.
type fault struct {
	kind   string // kindDispatcher, kindWorker, kindNATS, faultPartition or faultTaskPause
	target string
	// at is when the fault began, back when its target served again.
	at, back time.Time
}

// faultPartition is a NATS node cut off from the other nodes.
const faultPartition = "partition"

func (h *harness) logf(format string, args ...any) {
	h.log.Info(fmt.Sprintf(format, args...))
}

// newHarness lays out the deployment in a fresh directory; nothing runs
// yet. Every process is stopped and every namespace removed when the test
// ends.
func newHarness(t *testing.T, m mode, seed uint64, partitions bool) *harness {
	dir := os.Getenv("JETFLOW_CHAOS_DIR")
	if dir == "" {
		dir = t.TempDir()
		// Runs before the directory is removed, after every process
		// stopped and the harness's log closed.
		t.Cleanup(func() { keepLogs(t, dir, seed) })
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	logs, err := os.OpenFile(filepath.Join(dir, "harness.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := logs.Close(); err != nil {
			t.Errorf("close the harness log: %v", err)
		}
	})
	h := &harness{
		t: t, m: m, dir: dir, logs: logs, rng: rand.New(rand.NewPCG(seed, 2)), seed: seed,
		log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	if partitions {
		if h.lab, err = newNetlab(3); err != nil {
			t.Fatalf("network namespaces: %v", err)
		}
		t.Cleanup(h.lab.close)
	}
	if h.nodes, err = newNodes(dir, h.lab); err != nil {
		t.Fatal(err)
	}
	urls := make([]string, len(h.nodes))
	for i, n := range h.nodes {
		urls[i] = n.url()
	}
	h.urls = strings.Join(urls, ",")
	h.names = subjects.Must(prefix)
	// Registered after the namespaces' cleanup, so it runs before it.
	t.Cleanup(h.stopAll)
	return h
}

// keepLogs copies the processes' logs and the workers' execution logs of
// a failed test out of its temporary directory, so that a failure seen
// once can be read (the NATS stores stay behind; set JETFLOW_CHAOS_DIR to
// keep everything).
func keepLogs(t *testing.T, dir string, seed uint64) {
	if !t.Failed() {
		return
	}
	dst := filepath.Join(os.TempDir(), fmt.Sprintf("jetflow-chaos-%d", seed))
	var paths []string
	for _, pattern := range []string{"*.log", "*.exec"} {
		ps, _ := filepath.Glob(filepath.Join(dir, pattern))
		paths = append(paths, ps...)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Logf("keeping the logs: %v", err)
		return
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err == nil {
			err = os.WriteFile(filepath.Join(dst, filepath.Base(p)), data, 0o644)
		}
		if err != nil {
			t.Logf("keeping the logs: %v", err)
			return
		}
	}
	t.Logf("kept the logs of the failed test in %s", dst)
}

// buildJetflow builds the jetflow command the dispatchers run.
func (h *harness) buildJetflow() string {
	h.t.Helper()
	bin := filepath.Join(h.dir, "jetflow")
	args := []string{"build", "-o", bin}
	if *flagRaceBinary {
		args = append(args, "-race")
	}
	args = append(args, "github.com/jetflow/jetflow/cmd/jetflow")
	began := time.Now()
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		h.t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	h.t.Logf("built the jetflow command (race %v) in %s", *flagRaceBinary, time.Since(began).Round(time.Millisecond))
	return bin
}

// startCluster starts the three NATS nodes and connects the harness:
// streams and buckets with three replicas, every workflow deployed with
// harnessPolicy (retainedPolicy for those it removes).
func (h *harness) startCluster(ctx context.Context) {
	h.t.Helper()
	h.began = time.Now()
	h.startAll(h.nodeProcs())
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	f, err := fleet.Start(cctx, fleet.Config{
		URL:    h.urls,
		Prefix: prefix,
		NATSOptions: []nats.Option{
			nats.Name("chaos-harness"), nats.ReconnectWait(100 * time.Millisecond),
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { h.logf("harness disconnected: %v", err) }),
			nats.ReconnectHandler(func(nc *nats.Conn) { h.logf("harness reconnected to %s", nc.ConnectedUrl()) }),
		},
		Provision:  provision.ProvisionOptions{Replicas: 3, RetryFor: time.Minute},
		TaskPolicy: provision.TaskPolicy{StartToClose: taskAckWait},
		Logger:     h.log,
	})
	if err != nil {
		h.t.Fatalf("provision on the cluster: %v", err)
	}
	h.f = f
	h.logf("harness connected to %s", f.Conn.ConnectedUrl())
	h.t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = f.Stop(sctx)
	})
	for _, wf := range workflows {
		if err := retryFor(cctx, func(ctx context.Context) error {
			_, err := f.DeployWith(ctx, wf.name, []byte(wf.doc), fleet.DeployOptions{Policy: policyOf(wf)})
			return err
		}); err != nil {
			h.t.Fatalf("deploy %s: %v", wf.name, err)
		}
	}
	h.client, err = client.New(cctx, f.JS, client.Config{
		Names: h.names, RecheckInterval: 100 * time.Millisecond, MaxRecheckInterval: time.Second,
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// startServices starts the dispatchers (the real command) and workers.
func (h *harness) startServices(jetflow string) {
	h.t.Helper()
	for i := range 3 {
		name := fmt.Sprintf("d%d", i+1)
		h.dispatchers = append(h.dispatchers, &proc{
			kind: kindDispatcher, name: name,
			argv: []string{
				jetflow, "dispatcher", "--nats", h.urls, "--prefix", prefix,
				"--http", "off", "--log-format", "json",
			},
			isReady: func(line string) bool { return strings.HasPrefix(line, "nats: ") },
			logPath: filepath.Join(h.dir, name+".log"),
		})
		name = fmt.Sprintf("w%d", i+1)
		h.workers = append(h.workers, &proc{
			kind: kindWorker, name: name,
			argv: []string{os.Args[0], "-test.run=^$"},
			env: []string{
				roleEnv + "=" + roleWorker, urlsEnv + "=" + h.urls, prefixEnv + "=" + prefix,
				nameEnv + "=" + name, execLogEnv + "=" + filepath.Join(h.dir, name+".exec"),
				seedEnv + "=" + strconv.FormatUint(h.seed, 10), shareEnv + "=" + strconv.FormatFloat(*flagMisbehave, 'f', -1, 64),
			},
			isReady: func(line string) bool { return line == "ready" },
			logPath: filepath.Join(h.dir, name+".log"),
		})
	}
	h.startAll(h.dispatchers)
	h.startAll(h.workers)
}

func (h *harness) nodeProcs() []*proc {
	out := make([]*proc, len(h.nodes))
	for i, n := range h.nodes {
		out[i] = n.proc
	}
	return out
}

// startAll starts processes at once and fails the test if one cannot.
func (h *harness) startAll(ps []*proc) {
	h.t.Helper()
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { errs[i] = h.startRetrying(p) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		h.t.Fatal(err)
	}
}

// startRetrying starts p, trying again while it exits before it is ready
// (a dispatcher finding no JetStream leader yet, say), for up to a minute.
func (h *harness) startRetrying(p *proc) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := p.start(startTimeout)
		if err == nil {
			return nil
		}
		h.mu.Lock()
		h.failedStarts++
		h.mu.Unlock()
		h.logf("start of %s failed: %v", p.name, err)
		if !errors.Is(err, errExited) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Second)
	}
}

// stopAll drains every process still running: services first, then the
// nodes.
func (h *harness) stopAll() {
	var wg sync.WaitGroup
	for _, group := range [][]*proc{append(append([]*proc(nil), h.dispatchers...), h.workers...), h.nodeProcs()} {
		for _, p := range group {
			wg.Go(func() {
				if !p.stop(40 * time.Second) {
					h.logf("%s did not stop gracefully", p.name)
				}
			})
		}
		wg.Wait()
	}
}

// retryFor calls f until it succeeds or ctx ends.
func retryFor(ctx context.Context, f func(context.Context) error) error {
	for {
		callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := f(callCtx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		if err := pause(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

// healthy says why the cluster is not fit to lose a node, or nil: every
// node runs and every stream and consumer of the deployment has a leader
// and two current followers.
func (h *harness) healthy(ctx context.Context) error {
	for _, n := range h.nodes {
		if !n.running() {
			return fmt.Errorf("node %s is down", n.name)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	check := func(what string, ci *jetstream.ClusterInfo) error {
		if ci == nil || ci.Leader == "" {
			return fmt.Errorf("%s has no leader", what)
		}
		if len(ci.Replicas) != 2 {
			return fmt.Errorf("%s has %d followers", what, len(ci.Replicas))
		}
		for _, r := range ci.Replicas {
			if !r.Current || r.Offline {
				return fmt.Errorf("%s: follower %s is not current (lag %d)", what, r.Name, r.Lag)
			}
		}
		return nil
	}
	// The harness's own server must see a meta leader (a server cut off
	// from the others answers 503).
	if _, err := h.f.JS.AccountInfo(ctx); err != nil {
		return fmt.Errorf("JetStream: %w", err)
	}
	streams := []string{h.names.InputStream(), h.names.TimerStream(), h.names.TaskStream(), "KV_" + h.names.RunBucket(), "KV_" + h.names.WorkflowBucket()}
	for _, name := range streams {
		s, err := h.f.JS.Stream(ctx, name)
		if err != nil {
			return fmt.Errorf("stream %s: %w", name, err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			return fmt.Errorf("stream %s: %w", name, err)
		}
		if err := check("stream "+name, info.Cluster); err != nil {
			return err
		}
	}
	for _, c := range h.consumers() {
		info, err := h.consumerInfo(ctx, c)
		if err != nil {
			return err
		}
		if err := check("consumer "+c[1], info.Cluster); err != nil {
			return err
		}
	}
	return nil
}

// partitions is the input stream's partition count (0: unpartitioned).
func (h *harness) partitions(ctx context.Context) int {
	in, err := h.f.JS.Stream(ctx, h.names.InputStream())
	if err != nil {
		return 0
	}
	return provision.Partitions(in.CachedInfo().Config)
}

// inputConsumer is the dispatchers' consumer that hands out runID's
// inputs: its partition's, or the shared one.
func (h *harness) inputConsumer(ctx context.Context, runID string) [2]string {
	if p := h.partitions(ctx); p > 0 {
		return [2]string{h.names.InputStream(), h.names.PartitionConsumer(subjects.Partition(runID, p))}
	}
	return [2]string{h.names.InputStream(), h.names.DispatcherConsumer()}
}

// consumers lists the deployment's durable consumers as stream, name:
// the dispatchers' (one per partition, or the shared one) and the tasks'.
func (h *harness) consumers() [][2]string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := [][2]string{{h.names.InputStream(), h.names.DispatcherConsumer()}}
	if p := h.partitions(ctx); p > 0 {
		out = out[:0]
		for i := range p {
			out = append(out, [2]string{h.names.InputStream(), h.names.PartitionConsumer(i)})
		}
	}
	for task := range taskHandlers() {
		out = append(out, [2]string{h.names.TaskStream(), h.names.TaskConsumer(task, "1")})
	}
	return out
}

func (h *harness) consumerInfo(ctx context.Context, c [2]string) (*jetstream.ConsumerInfo, error) {
	cons, err := h.f.JS.Consumer(ctx, c[0], c[1])
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", c[1], err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", c[1], err)
	}
	return info, nil
}

// waitFor calls cond until it returns nil or timeout passes, and returns
// its last error.
func waitFor(ctx context.Context, timeout time.Duration, cond func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		if pause(ctx, 250*time.Millisecond) != nil {
			return err
		}
	}
}
