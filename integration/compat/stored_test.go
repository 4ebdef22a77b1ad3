package compat

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/integration/compat/fixture"
	"github.com/jetflow/jetflow/natstest"
)

// maxDueWait is how long a test waits for a fixture set taken so
// recently that its short timers are not due yet.
const maxDueWait = 2 * time.Minute

// TestStoredState restores every fixture set under testdata/ (a
// JetStream store written by an older release, see README.md) into an
// embedded nats-server of this build, with this build's dispatcher and
// workers. Every stored record must read as it was stored; every
// unsettled run must continue to the end its manifest gives (due timers
// fire at once, owed tasks are served, queued inputs are consumed, the
// events the runs wait for are sent, timers a century away do not fire);
// settled runs must be left byte for byte as they were; every input must
// apply once; and every run must replay equal.
func TestStoredState(t *testing.T) {
	t.Parallel()
	sets, err := filepath.Glob(filepath.Join("testdata", "*", fixture.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) == 0 {
		t.Fatal("no fixture set under testdata/")
	}
	for _, path := range sets {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			testStoredSet(t, dir)
		})
	}
}

func testStoredSet(t *testing.T, dir string) {
	m := readManifest(t, filepath.Join(dir, fixture.ManifestFile))
	if wait := time.Until(m.DueBy); wait > 0 {
		if wait > maxDueWait {
			t.Fatalf("fixture set %s is due at %s, %s from now: the clock of this machine or of the one that made it is wrong", m.Release, m.DueBy, wait.Round(time.Second))
		}
		t.Logf("fixture set %s was taken %s ago; waiting %s for its timers to be due", m.Release, time.Since(m.Generated).Round(time.Second), wait.Round(time.Second))
		time.Sleep(wait)
	}
	data := filepath.Join(t.TempDir(), "store")
	unpackStore(t, filepath.Join(dir, fixture.StoreFile), data)

	ctx, logs := testContext(t)
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded: embedded.Config{
			Listen: "127.0.0.1:-1", DataDir: data, Logger: logs.logger("nats-server"),
			ReadyTimeout: natstest.StartTimeout,
		},
		Prefix:      m.Prefix,
		NATSOptions: []nats.Option{nats.ReconnectWait(50 * time.Millisecond)},
		Logger:      logs.logger("fleet"),
	})
	if err != nil {
		t.Fatalf("start this build on the store of %s: %v", m.Release, err)
	}
	d := newDeployment(t, ctx, f, logs)

	// Before any dispatcher of this build runs: every record reads as
	// the release stored it, and the bucket holds no other.
	var want []string
	stored := map[string]*storedRecord{}
	for _, r := range m.Runs {
		if r.Fresh {
			continue
		}
		if r.Before.Status != "" {
			want = append(want, r.ID)
		}
		if why := sameOutcome(outcomeOf(d.status(t, r.ID)), r.Before); why != "" {
			t.Errorf("stored run %s (%s) %s", r.ID, r.Note, why)
		}
		stored[r.ID] = d.record(t, r.ID)
	}
	slices.Sort(want)
	if got := d.runIDs(t); !slices.Equal(got, want) {
		t.Errorf("the run bucket holds %v, want %v", got, want)
	}
	if t.Failed() {
		t.FailNow()
	}

	d.addDispatcher("dispatcher", 0)
	d.addWorker("worker", fixture.Tasks())

	// Runs without actions: due timers, owed tasks, queued inputs.
	checkEnds(t, d, m.Runs, func(r fixture.Run) bool { return !r.Fresh && len(r.Actions) == 0 })
	// Now everything the store held has been consumed: the runs that
	// wait for an event still do, their century-long timers unfired.
	for _, r := range m.Runs {
		if !r.Fresh && len(r.Actions) > 0 {
			if why := sameOutcome(outcomeOf(d.status(t, r.ID)), r.Before); why != "" {
				t.Errorf("run %s (%s) moved without its actions: %s", r.ID, r.Note, why)
			}
		}
	}
	for _, r := range m.Runs {
		if r.Fresh {
			if err := f.Client.StartRun(ctx, r.Workflow, r.ID, r.Input); err != nil {
				t.Fatalf("start fresh run %s of stored workflow %s: %v", r.ID, r.Workflow, err)
			}
		}
		for _, a := range r.Actions {
			d.send(t, r.ID, a)
		}
	}
	checkEnds(t, d, m.Runs, func(r fixture.Run) bool { return r.Fresh || len(r.Actions) > 0 })
	d.consumerSettled(t, 30*time.Second)

	var all, reran []string
	for _, r := range m.Runs {
		all = append(all, r.ID)
		before := stored[r.ID]
		if fixture.Terminal(r.Before.Status) {
			now := d.record(t, r.ID)
			if now == nil || now.Revision != before.Revision || string(now.Value) != string(before.Value) {
				t.Errorf("settled run %s (%s): its record changed", r.ID, r.Note)
			}
		}
		d.checkOnce(t, r.ID, before.refused())
		// A record read from the store publishes its outbox again before
		// its next input applies (a dispatcher cannot know that another
		// process published it), and the task stream's duplicate window
		// (2 minutes) is long over: an invocation the stored outbox holds
		// is stored and run a second time. Its result is not applied
		// twice (checkOnce): tasks run at least once (docs/ARCHITECTURE.md,
		// "A worker dies mid-task"). Anything more is a fault.
		rep, most := d.tasks.repeated(r.ID)
		switch {
		case most > 2 || (most == 2 && !before.owesInvocation()):
			t.Errorf("run %s: task attempts repeated: %v", r.ID, rep)
		case most == 2:
			reran = append(reran, fmt.Sprintf("%s: %v", r.ID, rep))
		}
	}
	if len(reran) > 0 {
		t.Logf("invocations the stored outboxes held, published again past the duplicate window and run twice: %v", reran)
	}
	d.checkReplays(t, all)
	checkNoSchedules(t, d)
	t.Logf("fixture set %s (taken %s ago): %d stored runs (%d queued starts among them) read, continued and replayed; %d fresh runs on its registry",
		m.Release, time.Since(m.Generated).Round(time.Minute), len(stored), len(stored)-len(want), len(m.Runs)-len(stored))
}

// checkEnds waits for each run that which selects to settle, all at
// once, and compares its end with the manifest's.
func checkEnds(t *testing.T, d *deployment, runs []fixture.Run, which func(fixture.Run) bool) {
	t.Helper()
	var wg sync.WaitGroup
	for _, r := range runs {
		if !which(r) {
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(d.ctx, time.Minute)
			defer cancel()
			st, err := d.f.Client.Wait(ctx, r.ID)
			if err != nil {
				now, serr := d.f.Client.Status(d.ctx, r.ID)
				t.Errorf("run %s (%s) did not settle: %v (status %+v, %v)", r.ID, r.Note, err, now, serr)
				return
			}
			if why := sameOutcome(outcomeOf(st), r.After); why != "" {
				t.Errorf("run %s (%s) %s", r.ID, r.Note, why)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// checkNoSchedules checks that the timer stream holds no pending timer
// schedule: every run has settled, and a settled run purges its own
// (those a century away included).
func checkNoSchedules(t *testing.T, d *deployment) {
	t.Helper()
	natstest.WaitFor(t, 10*time.Second, "no timer schedules left", func() error {
		s, err := d.f.JS.Stream(d.ctx, d.names.TimerStream())
		if err != nil {
			return err
		}
		info, err := s.Info(d.ctx, jetstream.WithSubjectFilter(d.names.ScheduleAll()))
		if err != nil {
			return err
		}
		left := map[string]uint64{}
		for subj, n := range info.State.Subjects {
			// A settled run's removal schedule (retention) stays until due.
			if run, ok := strings.CutPrefix(subj, d.names.Prefix()+".sched."); ok && !strings.Contains(run, ".") && subj == d.names.Expiry(run) {
				continue
			}
			left[subj] = n
		}
		if len(left) > 0 {
			return fmt.Errorf("schedules left: %v", left)
		}
		return nil
	})
}

func readManifest(t *testing.T, path string) fixture.Manifest {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m fixture.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if m.Release == "" || len(m.Runs) == 0 {
		t.Fatalf("%s names no release or no run", path)
	}
	return m
}

// unpackStore unpacks a fixture set's store tarball into dir.
func unpackStore(t *testing.T, tarball, dir string) {
	t.Helper()
	f, err := os.Open(tarball)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", tarball, err)
	}
	if err := extract(zr, dir); err != nil {
		t.Fatalf("%s: %v", tarball, err)
	}
}

// extract writes the files of a tar stream under dir: directories,
// regular files and symbolic links, none outside dir.
func extract(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.FromSlash(hdr.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("tar entry %q leaves the directory", hdr.Name)
		}
		path := filepath.Join(dir, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			err = writeFile(path, tr, hdr.FileInfo().Mode().Perm())
		case tar.TypeSymlink:
			if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
				err = os.Symlink(hdr.Linkname, path)
			}
		case tar.TypeXGlobalHeader:
		default:
			err = fmt.Errorf("tar entry %q has type %q, not a directory, file or link", hdr.Name, hdr.Typeflag)
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(path string, r io.Reader, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm|0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
