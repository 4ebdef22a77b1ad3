package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/worker"
)

// A worker process is configured through the environment.
const (
	urlsEnv    = "JETFLOW_CHAOS_URLS"
	prefixEnv  = "JETFLOW_CHAOS_PREFIX"
	execLogEnv = "JETFLOW_CHAOS_EXEC_LOG"
	nameEnv    = "JETFLOW_CHAOS_NAME"
	// seedEnv and shareEnv choose the protocol worker's misbehaviours.
	seedEnv  = "JETFLOW_CHAOS_SEED"
	shareEnv = "JETFLOW_CHAOS_MISBEHAVE"
)

// execution is one line of a worker's execution log: a handler began to
// run one attempt of one task execution, or, with Misbehave set, the
// protocol worker misbehaved on one delivery of it instead.
type execution struct {
	Worker     string `json:"worker"`
	PID        int    `json:"pid"`
	Run        string `json:"run"`
	Activation string `json:"activation"`
	Node       string `json:"node"`
	Task       string `json:"task"`
	Attempt    int    `json:"attempt"`
	Delivery   uint64 `json:"delivery"`
	// Misbehave is one of misKinds; empty when the handler ran.
	Misbehave string `json:"misbehave,omitempty"`
}

// attemptKey names one attempt of one task execution of a run.
type attemptKey struct {
	run, activation, node string
	attempt               int
}

func (e execution) key() attemptKey { return attemptKey{e.Run, e.Activation, e.Node, e.Attempt} }

// execLog appends executions to a file and syncs each before the handler
// goes on, so that a SIGKILL after the handler's result went out cannot
// lose the line saying it ran.
type execLog struct {
	mu   sync.Mutex
	f    *os.File
	name string
}

// recordRun logs that a handler of the SDK worker runs inv.
func (l *execLog) recordRun(inv worker.Invocation) error {
	return l.record(execution{
		Run: inv.Run, Activation: inv.Activation, Node: inv.Node,
		Task: inv.Task, Attempt: inv.Attempt, Delivery: inv.Delivery,
	})
}

// record appends e, with this worker's name and pid.
func (l *execLog) record(e execution) error {
	e.Worker, e.PID = l.name, os.Getpid()
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return err
	}
	return l.f.Sync()
}

// workerProcess is the main of a worker process: the Go SDK serving the
// tasks of workflows_test.go but rawTasks, which the protocol worker
// serves (and misbehaves on), each execution logged first. It prints
// "ready" once both serve and drains on SIGTERM.
func workerProcess() int {
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	name := os.Getenv(nameEnv)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	nc, err := nats.Connect(os.Getenv(urlsEnv), nats.Name("chaos-"+name),
		nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	if err != nil {
		log.Error("worker: connect", "error", err)
		return 1
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Error("worker: jetstream", "error", err)
		return 1
	}
	f, err := os.OpenFile(os.Getenv(execLogEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		log.Error("worker: execution log", "error", err)
		return 1
	}
	// The execution log is what the checks read: a lost write must show.
	defer func() {
		if err := f.Close(); err != nil {
			log.Error("worker: close the execution log", "error", err)
		}
	}()
	rec := &execLog{f: f, name: name}
	w, err := worker.New(js, worker.Config{
		Names: subjects.Must(os.Getenv(prefixEnv)), Concurrency: 8, PollWait: time.Second, Logger: log,
	})
	if err != nil {
		log.Error("worker: new", "error", err)
		return 1
	}
	raw := map[string]worker.Handler{}
	for task, h := range taskHandlers() {
		if rawTasks[task] {
			raw[task] = h
			continue
		}
		err := w.Register(task, "1", func(ctx context.Context, inv worker.Invocation) (any, error) {
			if err := rec.recordRun(inv); err != nil {
				return nil, fmt.Errorf("execution log: %w", err)
			}
			// Some work widens the window in which a kill finds a task in
			// flight.
			if err := pause(ctx, time.Duration(20+rand.IntN(180))*time.Millisecond); err != nil {
				return nil, err
			}
			return h(ctx, inv)
		})
		if err != nil {
			log.Error("worker: register", "task", task, "error", err)
			return 1
		}
	}
	if err := w.Start(context.Background()); err != nil {
		log.Error("worker: start", "error", err)
		return 1
	}
	seed, _ := strconv.ParseUint(os.Getenv(seedEnv), 10, 64)
	share, _ := strconv.ParseFloat(os.Getenv(shareEnv), 64)
	pull, stopPulls := context.WithCancel(context.Background())
	defer stopPulls()
	work, hardStop := context.WithCancel(context.Background())
	defer hardStop()
	rw := &rawWorker{
		js: js, names: subjects.Must(os.Getenv(prefixEnv)), log: log, rec: rec,
		mis: misbehaviour{seed: seed, share: share}, concurrency: 8, pull: pull, work: work,
	}
	if err := rw.start(ctx, raw); err != nil {
		log.Error("worker: start the protocol worker", "error", err)
		return 1
	}
	fmt.Println("ready")
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	stopPulls()
	drained := make(chan struct{})
	go func() { rw.wait(); close(drained) }()
	status := 0
	if err := w.Stop(stopCtx); err != nil {
		log.Error("worker: stop", "error", err)
		status = 1
	}
	select {
	case <-drained:
	case <-stopCtx.Done():
		log.Error("worker: the protocol worker did not drain in time")
		hardStop()
		<-drained
		status = 1
	}
	return status
}

func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// taskHandlers are the tasks the workflows of workflows_test.go invoke,
// all at version "1". Each output is a function of the input alone, so a
// task run twice returns the same result.
func taskHandlers() map[string]worker.Handler {
	number := func(f func(float64) float64) worker.Handler {
		return func(_ context.Context, inv worker.Invocation) (any, error) {
			var n float64
			if err := inv.DecodeInput(&n); err != nil {
				return nil, worker.NonRetryable(err)
			}
			return f(n), nil
		}
	}
	return map[string]worker.Handler{
		"double": number(func(n float64) float64 { return 2 * n }),
		"square": number(func(n float64) float64 { return n * n }),
		"neg":    number(func(n float64) float64 { return -n }),
		// inc adds one to the input's n and keeps its other members.
		"inc": func(_ context.Context, inv worker.Invocation) (any, error) {
			var in map[string]any
			if err := inv.DecodeInput(&in); err != nil {
				return nil, worker.NonRetryable(err)
			}
			n, _ := in["n"].(float64)
			in["n"] = n + 1
			return in, nil
		},
		"fail": func(context.Context, worker.Invocation) (any, error) {
			return nil, errors.New("boom: the gateway is down")
		},
		// once fails its first attempt for good; a redrive's attempts
		// are numbered above it (docs/OPERATIONS.md#redrive).
		"once": func(_ context.Context, inv worker.Invocation) (any, error) {
			if inv.Attempt == 1 {
				return nil, worker.NonRetryable(errors.New("first attempt fails"))
			}
			return number(func(n float64) float64 { return n + 1 })(context.Background(), inv)
		},
	}
}

// readExecutions reads every worker's execution log in dir.
func readExecutions(dir string) ([]execution, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.exec"))
	if err != nil {
		return nil, err
	}
	var out []execution
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var e execution
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				_ = f.Close() // read only
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			out = append(out, e)
		}
		_ = f.Close() // read only
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
