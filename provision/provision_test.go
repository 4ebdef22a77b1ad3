package provision_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

func TestProvisionCreatesStreamsAndBuckets(t *testing.T) {
	t.Parallel()
	b := setup(t)

	in, err := b.js.Stream(b.ctx, b.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	cfg := in.CachedInfo().Config
	if !slices.Equal(cfg.Subjects, []string{b.names.InputAll(), b.names.PagesAll()}) ||
		cfg.Retention != jetstream.LimitsPolicy || cfg.Discard != jetstream.DiscardOld ||
		cfg.AllowMsgSchedules || cfg.AllowRollup || cfg.AllowMsgTTL || cfg.AllowMsgCounter || cfg.AllowAtomicPublish ||
		cfg.DenyPurge || !cfg.DenyDelete || !cfg.AllowDirect ||
		cfg.Duplicates != provision.DefaultDuplicateWindow || cfg.MaxAge != 0 || cfg.Storage != jetstream.FileStorage {
		t.Errorf("input stream config = %+v", cfg)
	}
	if len(cfg.Sources) != 1 || cfg.Sources[0].Name != b.names.TimerStream() || len(cfg.Sources[0].SubjectTransforms) != 1 ||
		cfg.Sources[0].SubjectTransforms[0] != (jetstream.SubjectTransformConfig{Source: b.names.FiredAll(), Destination: b.names.FiredToTimer()}) {
		t.Errorf("input stream sources = %+v", cfg.Sources)
	}
	timers, err := b.js.Stream(b.ctx, b.names.TimerStream())
	if err != nil {
		t.Fatal(err)
	}
	if cfg := timers.CachedInfo().Config; !slices.Equal(cfg.Subjects, []string{b.names.ScheduleAll(), b.names.FiredAll(), b.names.ReapAll(), b.names.HoldAll(), b.names.ReleaseAll()}) ||
		cfg.Retention != jetstream.LimitsPolicy || cfg.Discard != jetstream.DiscardOld || cfg.MaxAge != 0 ||
		!cfg.AllowMsgSchedules || !cfg.AllowRollup || !cfg.AllowMsgTTL || cfg.DenyPurge {
		t.Errorf("timer stream config = %+v", cfg)
	}
	archive, err := b.js.Stream(b.ctx, b.names.ObjectStream(b.names.ArchiveBucket()))
	if err != nil {
		t.Fatal(err)
	}
	if cfg := archive.CachedInfo().Config; cfg.MaxAge != provision.DefaultArchiveMaxAge || cfg.Storage != jetstream.FileStorage {
		t.Errorf("archive bucket config = %+v", cfg)
	}
	tasks, err := b.js.Stream(b.ctx, b.names.TaskStream())
	if err != nil {
		t.Fatal(err)
	}
	if cfg := tasks.CachedInfo().Config; !slices.Equal(cfg.Subjects, []string{b.names.TaskAll()}) || cfg.Retention != jetstream.WorkQueuePolicy {
		t.Errorf("task stream config = %+v", cfg)
	}
	for _, bucket := range []string{b.names.RunBucket(), b.names.WorkflowBucket()} {
		kv, err := b.js.KeyValue(b.ctx, bucket)
		if err != nil {
			t.Fatalf("bucket %s: %v", bucket, err)
		}
		st, err := kv.Status(b.ctx)
		if err != nil || st.History() != 1 {
			t.Errorf("bucket %s: history %d, %v", bucket, st.History(), err)
		}
	}
}

// Provision runs twice, and concurrently from two connections, without
// error and without changing what it made.
func TestProvisionIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	b := bundle{ctx: testCtx(t, 60*time.Second), srv: natstest.Server(t), names: subjects.Must("t")}
	conns := []jetstream.JetStream{
		natstest.JetStream(t, natstest.Conn(t, b.srv)),
		natstest.JetStream(t, natstest.Conn(t, b.srv)),
	}
	for round := range 2 {
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for i := range 4 {
			wg.Go(func() { errs <- provision.Provision(b.ctx, conns[i%2], b.names, provision.ProvisionOptions{}) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	names := b.names
	lister := conns[0].StreamNames(b.ctx)
	var got []string
	for n := range lister.Name() {
		got = append(got, n)
	}
	if lister.Err() != nil {
		t.Fatal(lister.Err())
	}
	slices.Sort(got)
	want := []string{"KV_" + names.RunBucket(), "KV_" + names.WorkflowBucket(), names.InputStream(), names.TimerStream(), names.TaskStream(), "KV_" + names.JobBucket(), names.ObjectStream(names.ArchiveBucket()), names.IndexStream(), names.AuditStream(), names.ScheduleStream(), "KV_" + names.LimitsBucket(), "KV_" + names.StartKeyBucket(), "KV_" + names.SingletonBucket(), "KV_" + names.TriggerBucket(), names.ObjectStream(names.PayloadBucket()), names.QueueStream()}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("streams = %v, want %v", got, want)
	}
}

// A second Provision with other options updates the streams in place.
func TestProvisionUpdates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := b.runs(t)
	if _, err := rs.Create(b.ctx, "r1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := provision.Provision(b.ctx, b.js, b.names, provision.ProvisionOptions{MaxAge: time.Minute, RunHistory: 5}); err != nil {
		t.Fatal(err)
	}
	in, err := b.js.Stream(b.ctx, b.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	// The duplicate window is capped at MaxAge, which the server requires.
	if cfg := in.CachedInfo().Config; cfg.MaxAge != time.Minute || cfg.Duplicates != time.Minute {
		t.Errorf("MaxAge %s Duplicates %s after update", cfg.MaxAge, cfg.Duplicates)
	}
	// Timers never age out: MaxAge is the input stream's only.
	if timers, err := b.js.Stream(b.ctx, b.names.TimerStream()); err != nil || timers.CachedInfo().Config.MaxAge != 0 {
		t.Errorf("timer stream after update: %v", err)
	}
	kv, _ := b.js.KeyValue(b.ctx, b.names.RunBucket())
	if st, _ := kv.Status(b.ctx); st.History() != 5 {
		t.Errorf("run history %d after update", st.History())
	}
	if data, _, err := rs.Get(b.ctx, "r1"); err != nil || string(data) != "x" {
		t.Errorf("run after update = %q, %v", data, err)
	}
	// Storage cannot change in place: the error names the stream.
	err = provision.Provision(b.ctx, b.js, b.names, provision.ProvisionOptions{Storage: jetstream.MemoryStorage})
	if err == nil || !strings.Contains(err.Error(), b.names.TimerStream()) {
		t.Errorf("storage change = %v, want an error naming %s", err, b.names.TimerStream())
	}
}

func TestProvisionRefusesBadOptions(t *testing.T) {
	t.Parallel()
	b := bundle{ctx: testCtx(t, 10*time.Second)}
	for name, c := range map[string]struct {
		names subjects.Names
		opts  provision.ProvisionOptions
	}{
		"zero names":   {subjects.Names{}, provision.ProvisionOptions{}},
		"replicas 7":   {subjects.Must(""), provision.ProvisionOptions{Replicas: 7}},
		"negative age": {subjects.Must(""), provision.ProvisionOptions{MaxAge: -time.Second}},
		"bad storage":  {subjects.Must(""), provision.ProvisionOptions{Storage: 9}},
		"history 65":   {subjects.Must(""), provision.ProvisionOptions{RunHistory: 65}},
	} {
		// js is never reached: the options are refused first.
		if err := provision.Provision(b.ctx, nil, c.names, c.opts); err == nil || !strings.HasPrefix(err.Error(), "provision: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A new index stream is marked in the current shape, so that listings
// read it before any indexer has started; an index stream that ever held
// a message is left to its indexers, which rebuild one of another shape.
func TestProvisionMarksANewIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	idx, err := b.js.Stream(b.ctx, b.names.IndexStream())
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.GetLastMsgForSubject(b.ctx, b.names.IndexShapeMark())
	if err != nil {
		t.Fatalf("shape mark of a new index: %v", err)
	}
	var mark wire.IndexShapeMark
	if err := json.Unmarshal(m.Data, &mark); err != nil || mark.Shape != subjects.IndexShape {
		t.Fatalf("shape mark %s (%v), want shape %d", m.Data, err, subjects.IndexShape)
	}
	if err := idx.Purge(b.ctx, jetstream.WithPurgeSubject(b.names.IndexShapeMark())); err != nil {
		t.Fatal(err)
	}
	if err := provision.Provision(b.ctx, b.js, b.names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := idx.GetLastMsgForSubject(b.ctx, b.names.IndexShapeMark()); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("provisioning again marked an index that existed: %v", err)
	}
}
