//go:build compatgen

// Command gen writes one stored-state fixture set: it runs the
// scenarios of package fixture on an embedded nats-server with a file
// store, with the code of the release it is compiled in, stops everything
// cleanly and writes the store as a compressed tarball beside a manifest
// of every run. It is compiled inside the tree of the release the set
// is for, never in the current one: generate.sh copies this directory and
// ../fixture into that release's tree and runs it there.
//
//	go run -tags compatgen ./integration/compat/gen -release 6707540 -out DIR
//
// It uses only the public APIs (fleet, worker, client, embedded, policy),
// so that the same generator builds in the next release's tree.
package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/integration/compat/fixture"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// shortTimers is the longest delay of a timer the store holds that must
// fire on restore (nap's after, flaky's retry backoff); the store must be
// taken before the earliest of them (fan-overdue's 30 s deadline) is due.
const (
	shortTimers  = time.Minute
	earliestDue  = 30 * time.Second
	phaseTimeout = 30 * time.Second
)

func main() {
	release := flag.String("release", "", "the commit this tree is (names the fixture set)")
	out := flag.String("out", "", "the fixture set's directory (testdata/<release>)")
	flag.Parse()
	if *release == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: gen -release COMMIT -out DIR")
		os.Exit(2)
	}
	if err := generate(*release, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func generate(release, out string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	data, err := os.MkdirTemp("", "jetflow-compat-store-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(data) }()

	srv, err := fleet.Start(ctx, fleet.Config{
		Embedded: embedded.Config{Listen: "127.0.0.1:-1", DataDir: data, Logger: log},
		// Unpartitioned, as every store made before partitions: the
		// phases below count the shared consumer's deliveries.
		Provision: provision.ProvisionOptions{Partitions: -1},
		Logger:    log,
	})
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop(context.Background()) }()
	g := &gen{ctx: ctx, srv: srv, log: log}
	var names []string
	for _, w := range fixture.Workflows {
		var p *policy.Policy
		if w.Policy != "" {
			if p, err = policy.Parse([]byte(w.Policy)); err != nil {
				return fmt.Errorf("policy of %s: %w", w.Name, err)
			}
		}
		if _, err := srv.DeployWith(ctx, w.Name, []byte(w.Doc), fleet.DeployOptions{Policy: p}); err != nil {
			return fmt.Errorf("deploy %s: %w", w.Name, err)
		}
		names = append(names, w.Name)
	}
	disp, err := fleet.Start(ctx, fleet.Config{
		URL: srv.URL(), Prefix: srv.Names.Prefix(), SkipProvision: true,
		Dispatcher: &dispatcher.Config{Logger: log}, Logger: log,
	})
	if err != nil {
		return err
	}
	defer func() { _ = disp.Stop(context.Background()) }()

	// Phase 1: every task served.
	w, err := g.worker(fixture.Tasks())
	if err != nil {
		return err
	}
	if err := g.phase(fixture.PhaseAll); err != nil {
		return err
	}
	if err := w.stop(); err != nil {
		return err
	}
	// Phase 2: "square" not served; its invocations stay owed.
	partial := time.Now()
	w, err = g.worker(fixture.Only(fixture.PartialTasks...))
	if err != nil {
		return err
	}
	if err := g.phase(fixture.PhasePartial); err != nil {
		return err
	}
	if err := w.stop(); err != nil {
		return err
	}
	if err := g.drained(srv.Names.InputStream(), srv.Names.DispatcherConsumer(), 0); err != nil {
		return err
	}
	if err := disp.Stop(ctx); err != nil {
		return fmt.Errorf("stop the dispatcher: %w", err)
	}
	// Phase 3: no dispatcher; these inputs stay in the input stream.
	queued := 0
	for _, sc := range fixture.Scenarios {
		if sc.Phase == fixture.PhaseQueued {
			if err := g.start(sc); err != nil {
				return err
			}
			queued += 1 + len(sc.Drive)
		}
		for _, a := range sc.Queued {
			if err := g.send(sc.ID, a); err != nil {
				return err
			}
			queued++
		}
	}
	if err := g.drained(srv.Names.InputStream(), srv.Names.DispatcherConsumer(), queued); err != nil {
		return err
	}
	owed := 0
	for _, sc := range fixture.Scenarios {
		owed += sc.Owed
	}
	if err := g.drained(srv.Names.TaskStream(), srv.Names.TaskConsumer("square", fixture.TaskVersion), owed); err != nil {
		return err
	}
	m := fixture.Manifest{Release: release, Prefix: srv.Names.Prefix(), Workflows: names}
	for _, sc := range fixture.Scenarios {
		if sc.Phase != fixture.PhaseFresh {
			if err := g.check(sc, true); err != nil {
				return err
			}
		}
		m.Runs = append(m.Runs, sc.Run)
	}
	if err := srv.Stop(ctx); err != nil {
		return fmt.Errorf("stop the server: %w", err)
	}
	taken := time.Now()
	if taken.Sub(partial) >= earliestDue {
		return fmt.Errorf("took %s from the first partly served run to the store, more than its %s deadline: a timer may have fired before the store was taken; run again on a less busy machine",
			taken.Sub(partial).Round(time.Millisecond), earliestDue)
	}
	m.Generated = taken.UTC().Truncate(time.Millisecond)
	m.DueBy = taken.Add(shortTimers + 5*time.Second).UTC().Truncate(time.Second)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := writeTarball(filepath.Join(out, fixture.StoreFile), data); err != nil {
		return err
	}
	js, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, fixture.ManifestFile), append(js, '\n'), 0o644)
}

type gen struct {
	ctx context.Context
	srv *fleet.Fleet
	log *slog.Logger
}

// phase starts and drives the runs of one phase, then waits until each
// is as its manifest entry says it is in the store.
func (g *gen) phase(phase int) error {
	for _, sc := range fixture.Scenarios {
		if sc.Phase == phase {
			if err := g.start(sc); err != nil {
				return err
			}
		}
	}
	for _, sc := range fixture.Scenarios {
		if sc.Phase != phase {
			continue
		}
		deadline := time.Now().Add(phaseTimeout)
		for {
			err := g.check(sc, false)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return err
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

func (g *gen) start(sc fixture.Scenario) error {
	if err := g.srv.Client.StartRun(g.ctx, sc.Workflow, sc.ID, sc.Input); err != nil {
		return fmt.Errorf("start %s: %w", sc.ID, err)
	}
	for _, a := range sc.Drive {
		if err := g.send(sc.ID, a); err != nil {
			return err
		}
	}
	return nil
}

func (g *gen) send(runID string, a fixture.Action) error {
	var err error
	switch a.Kind {
	case fixture.ActionEvent:
		err = g.srv.Client.SendEvent(g.ctx, runID, a.Event, a.Payload)
	case fixture.ActionCancel:
		err = g.srv.Client.Cancel(g.ctx, runID, a.Reason)
	default:
		err = fmt.Errorf("unknown action %q", a.Kind)
	}
	if err != nil {
		return fmt.Errorf("%s to %s: %w", a.Kind, runID, err)
	}
	return nil
}

// check compares a run's record with the scenario's Before. final: the
// store is about to be taken (queued runs have no record yet).
func (g *gen) check(sc fixture.Scenario, final bool) error {
	st, err := g.srv.Client.Status(g.ctx, sc.ID)
	if sc.Before.Status == "" {
		if !final || errors.Is(err, client.ErrRunNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("run %s: want no record yet: %w", sc.ID, err)
		}
		return fmt.Errorf("run %s: status %+v, want no record yet", sc.ID, st)
	}
	if err != nil {
		return fmt.Errorf("run %s: %w", sc.ID, err)
	}
	if err := same(st, sc.Before); err != nil {
		return fmt.Errorf("run %s: %w", sc.ID, err)
	}
	if sc.Applied == 0 {
		return nil
	}
	kv, err := g.srv.JS.KeyValue(g.ctx, g.srv.Names.RunBucket())
	if err != nil {
		return err
	}
	e, err := kv.Get(g.ctx, sc.ID)
	if err != nil {
		return err
	}
	var rec struct {
		Applied []uint64 `json:"applied"`
	}
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return fmt.Errorf("run %s: record: %w", sc.ID, err)
	}
	if len(rec.Applied) != sc.Applied {
		return fmt.Errorf("run %s: %d inputs applied, want %d", sc.ID, len(rec.Applied), sc.Applied)
	}
	return nil
}

// same compares a status with an outcome.
func same(st *wire.Status, want fixture.Outcome) error {
	code := ""
	if st.Error != nil {
		code = st.Error.Code
	}
	got := fixture.Outcome{Status: st.Status, State: st.State, Result: st.Result, ErrorCode: code}
	if got.Status != want.Status || got.State != want.State || got.ErrorCode != want.ErrorCode || canonical(got.Result) != canonical(want.Result) {
		return fmt.Errorf("is %s in %s with result %s, error %+v; want %+v with result %s",
			got.Status, got.State, got.Result, st.Error, want, want.Result)
	}
	return nil
}

func canonical(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "invalid: " + string(raw)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// drained waits until a consumer has nothing acknowledged-pending and
// exactly pending messages not yet delivered.
func (g *gen) drained(stream, consumer string, pending int) error {
	deadline := time.Now().Add(phaseTimeout)
	for {
		c, err := g.srv.JS.Consumer(g.ctx, stream, consumer)
		if err != nil {
			return err
		}
		info, err := c.Info(g.ctx)
		if err != nil {
			return err
		}
		if info.NumAckPending == 0 && info.NumPending == uint64(pending) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("consumer %s: %d pending, %d unacknowledged; want %d and 0", consumer, info.NumPending, info.NumAckPending, pending)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type runningWorker struct {
	w  *worker.Worker
	nc *nats.Conn
}

func (g *gen) worker(tasks map[string]worker.Handler) (*runningWorker, error) {
	nc, err := nats.Connect(g.srv.URL())
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	w, err := worker.New(js, worker.Config{Names: g.srv.Names, PollWait: 500 * time.Millisecond, Logger: g.log})
	if err != nil {
		nc.Close()
		return nil, err
	}
	for name, h := range tasks {
		if err := w.Register(name, fixture.TaskVersion, h); err != nil {
			nc.Close()
			return nil, err
		}
	}
	if err := w.Start(g.ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return &runningWorker{w: w, nc: nc}, nil
}

func (r *runningWorker) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := r.w.Stop(ctx)
	r.nc.Close()
	return err
}

// writeTarball writes dir's files, in name order, without the embedded
// server's lock file, as a gzip-compressed tarball.
func writeTarball(path, dir string) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && d.Name() != embedded.LockFileName {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(files)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	for _, p := range files {
		if err := addFile(tw, dir, p); err != nil {
			return err
		}
	}
	if err := errors.Join(tw.Close(), zw.Close()); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func addFile(tw *tar.Writer, dir, p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return err
	}
	hdr, err := tar.FileInfoHeader(fi, "")
	if err != nil {
		return err
	}
	hdr.Name = filepath.ToSlash(rel)
	hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
	if fi.IsDir() {
		hdr.Name += "/"
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	_, err = io.Copy(tw, f)
	return err
}
