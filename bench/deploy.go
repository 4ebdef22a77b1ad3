package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/worker"
)

// benchPrefix names the deployment under test.
const benchPrefix = "bench"

// deployment is one running setup: the servers, dispatchers and workers,
// and this process's own fleet handle (registry, client, provisioning).
type deployment struct {
	setup    Setup
	cfg      Config
	dir      string
	replicas int
	url      string

	// fleet is this process's connection; in Single mode it also runs the
	// dispatcher.
	fleet *fleet.Fleet
	// Single mode only.
	server *embedded.Server
	worker *worker.Worker
	wconn  *nats.Conn
	reg    *prometheus.Registry

	procs []*agentProc
}

// deploy starts setup s and deploys every scenario's workflow.
func deploy(ctx context.Context, cfg Config, s Setup, dir string) (d *deployment, err error) {
	d = &deployment{setup: s, cfg: cfg, dir: dir, replicas: 1, reg: prometheus.NewRegistry()}
	defer func() {
		if err != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = d.stop(sctx)
			d = nil
		}
	}()
	if err := d.startServers(ctx); err != nil {
		return d, err
	}
	fc := fleet.Config{
		URL: d.url, Prefix: benchPrefix, Logger: cfg.Logger, Registerer: d.reg,
		NATSOptions: []nats.Option{nats.Name("jetflow-bench")},
		Provision:   provision.ProvisionOptions{Replicas: d.replicas, Storage: jetstream.FileStorage},
	}
	if s.Mode == Single {
		fc.Dispatcher = &dispatcher.Config{Concurrency: cfg.DispatcherConcurrency, Logger: cfg.Logger}
	}
	if d.fleet, err = fleet.Start(ctx, fc); err != nil {
		return d, fmt.Errorf("bench: %s: %w", s.Name(), err)
	}
	// Deploying creates the task consumer the workers bind. The timers
	// scenario deploys its own workflows; console-index runs none.
	for _, sc := range AllScenarios {
		w, ok := workloads[sc]
		if !ok || w.doc == "" {
			continue
		}
		if _, err := d.fleet.Deploy(ctx, w.workflow, []byte(w.doc)); err != nil {
			return d, fmt.Errorf("bench: deploy %s: %w", w.workflow, err)
		}
	}
	if s.Mode == Single {
		d.worker, d.wconn, err = startWorker(ctx, d.url, benchPrefix, cfg.WorkerConcurrency, cfg.Logger)
		return d, err
	}
	common := []string{"-url", d.url, "-prefix", benchPrefix}
	for i := range s.Dispatchers {
		args := slices.Concat(common, []string{"-concurrency", strconv.Itoa(cfg.DispatcherConcurrency)})
		p, err := startAgent(ctx, cfg, roleDispatcher, fmt.Sprintf("d%d", i), args...)
		if err != nil {
			return d, err
		}
		d.procs = append(d.procs, p)
	}
	for i := range s.Workers {
		args := slices.Concat(common, []string{"-concurrency", strconv.Itoa(cfg.WorkerConcurrency)})
		p, err := startAgent(ctx, cfg, roleWorker, fmt.Sprintf("w%d", i), args...)
		if err != nil {
			return d, err
		}
		d.procs = append(d.procs, p)
	}
	return d, nil
}

// startServers starts the embedded server (Single), one server process
// (Processes) or three clustered ones (Cluster) and sets d.url.
func (d *deployment) startServers(ctx context.Context) error {
	switch d.setup.Mode {
	case Single:
		ec := embedded.Config{Listen: "127.0.0.1:-1", DataDir: filepath.Join(d.dir, "n0"), Logger: d.cfg.Logger}
		d.setup.Durability.apply(&ec)
		srv, err := embedded.Start(ctx, ec)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		d.server, d.url = srv, srv.ClientURL()
		return nil
	case Processes:
		p, err := startAgent(ctx, d.cfg, roleServer, "n0", slices.Concat([]string{"-data-dir", filepath.Join(d.dir, "n0")}, d.setup.Durability.agentArgs())...)
		if err != nil {
			return err
		}
		d.procs, d.url = append(d.procs, p), p.url
		return nil
	}
	d.replicas = 3
	routes, err := freePorts(3)
	if err != nil {
		return err
	}
	var urls []string
	for i := range 3 {
		p, err := startAgent(ctx, d.cfg, roleServer, fmt.Sprintf("n%d", i), slices.Concat([]string{
			"-data-dir", filepath.Join(d.dir, fmt.Sprintf("n%d", i)), "-name", fmt.Sprintf("n%d", i),
			"-cluster", "jetflow-bench", "-cluster-listen", routes[i], "-routes", strings.Join(routes, ","),
		}, d.setup.Durability.agentArgs())...)
		if err != nil {
			return err
		}
		d.procs = append(d.procs, p)
		urls = append(urls, p.url)
	}
	d.url = strings.Join(urls, ",")
	return waitMetaLeader(ctx, d.url)
}

// waitMetaLeader waits until the cluster answers JetStream requests.
func waitMetaLeader(ctx context.Context, url string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return fmt.Errorf("bench: connect to the cluster %s: %w", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.AccountInfo(actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("bench: the cluster has no JetStream meta leader: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePorts reserves n loopback ports and releases them for the servers.
func freePorts(n int) ([]string, error) {
	var addrs []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("bench: reserve a route port: %w", err)
		}
		ls = append(ls, l)
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}

// pids are the processes by role; pid 0 is this process.
func (d *deployment) pids() map[string][]int {
	m := map[string][]int{roleBench: {0}}
	for _, p := range d.procs {
		m[p.role] = append(m[p.role], p.pid())
	}
	return m
}

// usage reads every process's CPU and memory, by role.
func (d *deployment) usage() map[string][]procUsage {
	out := map[string][]procUsage{}
	for role, pids := range d.pids() {
		for _, pid := range pids {
			u, _ := readUsage(pid)
			out[role] = append(out[role], u)
		}
	}
	return out
}

// resetPeaks starts every process's peak resident set afresh.
func (d *deployment) resetPeaks() {
	for _, pids := range d.pids() {
		for _, pid := range pids {
			_ = resetPeak(pid)
		}
	}
}

// roleStats sums the own figures of the processes of role (dispatcher or
// worker); in Single mode those of this process's component.
func (d *deployment) roleStats(role string) (stats, error) {
	if d.setup.Mode == Single {
		if role == roleWorker {
			return *ownStats(prometheus.NewRegistry(), d.wconn), nil
		}
		return *ownStats(d.reg, d.fleet.Conn), nil
	}
	var sum stats
	for _, p := range d.procs {
		if p.role != role {
			continue
		}
		r, err := p.call("stats")
		if err != nil {
			return sum, err
		}
		if r.Stats == nil {
			return sum, fmt.Errorf("%s %s sent no stats", p.role, p.name)
		}
		sum.HeapInuse = max(sum.HeapInuse, r.Stats.HeapInuse)
		sum.Goroutines += r.Stats.Goroutines
		sum.Conflicts += r.Stats.Conflicts
		sum.Redeliveries += r.Stats.Redeliveries
		sum.Sent += r.Stats.Sent
		sum.Received += r.Stats.Received
	}
	return sum, nil
}

// stop stops workers, dispatchers and servers in that order.
func (d *deployment) stop(ctx context.Context) error {
	var errs []error
	if d.worker != nil {
		errs = append(errs, d.worker.Stop(ctx))
		d.wconn.Close()
	}
	for _, role := range []string{roleWorker, roleDispatcher} {
		for _, p := range d.procs {
			if p.role == role {
				errs = append(errs, p.stop(ctx))
			}
		}
	}
	if d.fleet != nil {
		errs = append(errs, d.fleet.Stop(ctx))
	}
	for _, p := range d.procs {
		if p.role == roleServer {
			errs = append(errs, p.stop(ctx))
		}
	}
	if d.server != nil {
		errs = append(errs, d.server.Stop(ctx))
	}
	if d.dir != "" {
		errs = append(errs, os.RemoveAll(d.dir))
	}
	return errors.Join(errs...)
}
