package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/worker"
)

// Agent roles: what one helper process runs.
const (
	roleServer     = "server"
	roleDispatcher = "dispatcher"
	roleWorker     = "worker"
	// roleBench is this process (the load generator; in Single mode
	// everything).
	roleBench = "bench"
)

// agentReply is one line an agent writes on stdout: first when it is
// ready, then one for each command it reads on stdin.
type agentReply struct {
	Ready bool   `json:"ready,omitempty"`
	URL   string `json:"url,omitempty"`
	Error string `json:"error,omitempty"`
	Stats *stats `json:"stats,omitempty"`
}

// stats are a process's own figures, which /proc does not show.
type stats struct {
	HeapInuse    uint64 `json:"heap_inuse"`
	Goroutines   int    `json:"goroutines"`
	Conflicts    uint64 `json:"cas_conflicts"`
	Redeliveries uint64 `json:"redeliveries"`
	// Sent and Received count the NATS messages of the process's
	// connection: publishes, acknowledgements, requests and replies.
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
}

// AgentMain runs one helper process of a Processes or Cluster setup (the
// hidden `jetflow bench-agent` verb). It starts its role, writes a ready
// line on stdout, answers commands read from stdin ("stats", "profile
// FILE", "profile-stop", "heap FILE"), and stops when stdin ends or ctx is done.
// gogcSet is whether the process's GOGC environment variable is set: a
// dispatcher then leaves the collector alone (dispatcher.TuneGC).
func AgentMain(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer, gogcSet bool) error {
	fs := flag.NewFlagSet("bench-agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	role := fs.String("role", "", "server, dispatcher or worker")
	url := fs.String("url", "", "NATS URL(s) (dispatcher, worker)")
	prefix := fs.String("prefix", "", "deployment prefix (dispatcher, worker)")
	dataDir := fs.String("data-dir", "", "store directory (server)")
	name := fs.String("name", embedded.DefaultServerName, "server name (server)")
	cluster := fs.String("cluster", "", "cluster name; empty runs alone (server)")
	clusterListen := fs.String("cluster-listen", "", "route address (server)")
	routes := fs.String("routes", "", "comma-separated route addresses (server)")
	syncAlways := fs.Bool("sync-always", false, "fsync every write (server)")
	syncInterval := fs.Duration("sync-interval", 0, "fsync interval; 0 is the server's default (server)")
	concurrency := fs.Int("concurrency", 0, "dispatcher or worker concurrency (0: its default)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("bench-agent: %w", err)
	}
	log := slog.New(slog.DiscardHandler)
	reg := prometheus.NewRegistry()
	var stop func(context.Context) error
	var conn *nats.Conn
	ready := agentReply{Ready: true}
	switch *role {
	case roleServer:
		cfg := embedded.Config{
			Listen: "127.0.0.1:-1", DataDir: *dataDir, ServerName: *name, Logger: log,
			SyncAlways: *syncAlways, SyncInterval: *syncInterval,
		}
		if *cluster != "" {
			cfg.Cluster = &embedded.ClusterConfig{Name: *cluster, Listen: *clusterListen, Routes: strings.Split(*routes, ",")}
		}
		srv, err := embedded.Start(ctx, cfg)
		if err != nil {
			return fmt.Errorf("bench-agent: %w", err)
		}
		stop, ready.URL = srv.Stop, srv.ClientURL()
	case roleDispatcher:
		dispatcher.TuneGC(gogcSet) // as jetflow dispatcher does
		f, err := fleet.Start(ctx, fleet.Config{
			URL: *url, Prefix: *prefix, SkipProvision: true, Registerer: reg, Logger: log,
			Dispatcher: &dispatcher.Config{Concurrency: *concurrency, Logger: log},
		})
		if err != nil {
			return fmt.Errorf("bench-agent: dispatcher: %w", err)
		}
		stop, conn = f.Stop, f.Conn
	case roleWorker:
		w, nc, err := startWorker(ctx, *url, *prefix, *concurrency, log)
		if err != nil {
			return fmt.Errorf("bench-agent: %w", err)
		}
		stop = func(ctx context.Context) error {
			err := w.Stop(ctx)
			nc.Close()
			return err
		}
		conn = nc
	default:
		return fmt.Errorf("bench-agent: -role %q: use %s, %s or %s", *role, roleServer, roleDispatcher, roleWorker)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		defer cancel()
		_ = stop(sctx)
	}()
	enc := json.NewEncoder(stdout)
	if err := enc.Encode(ready); err != nil {
		return err
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var profile *os.File
	defer func() {
		if profile != nil {
			pprof.StopCPUProfile()
			_ = profile.Close()
		}
	}()
	for {
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
		case <-ctx.Done():
		}
		if !ok {
			return nil
		}
		var reply agentReply
		cmd, arg, _ := strings.Cut(line, " ")
		switch cmd {
		case "stats":
			reply.Stats = ownStats(reg, conn)
		case "profile":
			var err error
			if profile, err = startProfile(profile, arg); err != nil {
				reply.Error = err.Error()
			}
		case "heap":
			reply.Error = errString(writeHeapProfile(arg))
		case "profile-stop":
			if profile != nil {
				pprof.StopCPUProfile()
				reply.Error = errString(profile.Close())
				profile = nil
			}
		default:
			reply.Error = fmt.Sprintf("unknown command %q", line)
		}
		if err := enc.Encode(reply); err != nil {
			return err
		}
	}
}

// startWorker serves the echo task.
func startWorker(ctx context.Context, url, prefix string, concurrency int, log *slog.Logger) (*worker.Worker, *nats.Conn, error) {
	names, err := subjects.New(prefix)
	if err != nil {
		return nil, nil, err
	}
	nc, err := nats.Connect(url, nats.Name("jetflow-bench-worker"), nats.MaxReconnects(-1))
	if err != nil {
		return nil, nil, fmt.Errorf("worker: connect to %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err == nil {
		var w *worker.Worker
		if w, err = worker.New(js, worker.Config{Names: names, Concurrency: concurrency, Logger: log}); err == nil {
			if err = w.Register(echoTask, echoVersion, echo); err == nil {
				if err = w.Start(ctx); err == nil {
					return w, nc, nil
				}
			}
		}
	}
	nc.Close()
	return nil, nil, fmt.Errorf("worker: %w", err)
}

func startProfile(cur *os.File, path string) (*os.File, error) {
	if cur != nil {
		return cur, errors.New("a profile is already being written")
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// writeHeapProfile writes this process's heap profile (after a
// collection, so that it shows what is live) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// ownStats reads this process's heap, its dispatcher's counters and the
// message counts of nc (which may be nil).
func ownStats(g prometheus.Gatherer, nc *nats.Conn) *stats {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s := &stats{HeapInuse: m.HeapInuse, Goroutines: runtime.NumGoroutine()}
	if nc != nil {
		st := nc.Stats()
		s.Sent, s.Received = st.OutMsgs, st.InMsgs
	}
	s.Conflicts = counter(g, "jetflow_dispatcher_cas_conflicts_total")
	s.Redeliveries = counter(g, "jetflow_dispatcher_redeliveries_total")
	return s
}

// counter sums every series of a counter, 0 if it is not registered.
func counter(g prometheus.Gatherer, name string) uint64 {
	mfs, err := g.Gather()
	if err != nil {
		return 0
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			n += m.GetCounter().GetValue()
		}
	}
	return uint64(n)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
