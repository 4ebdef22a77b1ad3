package provision_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

// A new input stream is partitioned by default: the server stores each
// input in its run's partition, exactly where subjects.Partition says
// (readers compute it without asking), fired timers included; a
// partition's filter matches its runs' inputs only, and a run's history
// filter still matches all of them.
func TestPartitionsRouteByRunID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	n := b.names
	in, err := b.js.Stream(b.ctx, n.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	if got := provision.Partitions(in.CachedInfo().Config); got != provision.DefaultPartitions {
		t.Fatalf("a new input stream records %d partitions, want %d", got, provision.DefaultPartitions)
	}
	const runs = 64
	var published []string
	for i := range runs {
		run := fmt.Sprintf("run-%d", i)
		published = append(published, n.Start(run), n.Event(run, "paid"), n.Result(run))
	}
	for _, s := range published {
		if _, err := b.js.Publish(b.ctx, s, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range published {
		m, err := in.GetMsg(b.ctx, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		if want := n.StoredInput(s, provision.DefaultPartitions); m.Subject != want {
			t.Errorf("published on %s, stored on %s; want %s", s, m.Subject, want)
		}
		run, kind, _, err := n.ParseInput(m.Subject)
		if pub, pkind, _, _ := n.ParseInput(s); err != nil || run != pub || kind != pkind {
			t.Errorf("ParseInput(%s) = %s %s %v; want %s %s", m.Subject, run, kind, err, pub, pkind)
		}
	}
	used := map[int]bool{}
	for p := range provision.DefaultPartitions {
		info, err := in.Info(b.ctx, jetstream.WithSubjectFilter(n.PartitionInputs(p)))
		if err != nil {
			t.Fatal(err)
		}
		for s := range info.State.Subjects {
			run, _, _, _ := n.ParseInput(s)
			if subjects.Partition(run, provision.DefaultPartitions) != p {
				t.Errorf("partition %d holds %s of run %s, whose partition is %d", p, s, run, subjects.Partition(run, provision.DefaultPartitions))
			}
			used[p] = true
		}
	}
	if len(used) < provision.DefaultPartitions/2 {
		t.Errorf("%d runs used %d of %d partitions", runs, len(used), provision.DefaultPartitions)
	}
	if got := matching(t, b, in, n.RunInputs("run-7")); got != 3 {
		t.Errorf("the history filter of run-7 matches %d messages, want 3", got)
	}
	scheduleTimer(b.ctx, t, b.js, n, "run-7", "t1", time.Now())
	fired := nextTimer(b.ctx, t, b.js, n, "run-7", 30*time.Second)
	if want := n.StoredInput(n.Timer("run-7"), provision.DefaultPartitions); fired.Subject() != want {
		t.Errorf("a fired timer is stored on %s, want %s", fired.Subject(), want)
	}
}

// The partition count is fixed once recorded: provisioning again keeps
// it, another count is refused naming both, and an unpartitioned stream
// stays so unless migrated.
func TestPartitionsAreFixed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := provision.Provision(b.ctx, b.js, b.names, provision.ProvisionOptions{Partitions: 8}); !errors.Is(err, provision.ErrPartitions) {
		t.Errorf("provision with 8 partitions over 16 = %v, want ErrPartitions", err)
	}
	if err := provision.Provision(b.ctx, b.js, b.names, provision.ProvisionOptions{Partitions: provision.DefaultPartitions}); err != nil {
		t.Errorf("provision with the recorded count: %v", err)
	}
	if err := provision.Provision(b.ctx, b.js, b.names, provision.ProvisionOptions{Partitions: -1}); !errors.Is(err, provision.ErrPartitions) {
		t.Errorf("provision unpartitioned over 16 = %v, want ErrPartitions", err)
	}

	old := unpartitioned(t)
	if err := provision.Provision(old.ctx, old.js, old.names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := partitionsOf(t, old); p != 0 {
		t.Errorf("provision without a count partitioned an unpartitioned stream into %d", p)
	}
	if err := provision.Provision(old.ctx, old.js, old.names, provision.ProvisionOptions{Partitions: 4}); !errors.Is(err, provision.ErrPartitions) {
		t.Errorf("provision with 4 partitions over an unpartitioned stream = %v, want ErrPartitions", err)
	}
}

func unpartitioned(t *testing.T) bundle {
	t.Helper()
	b := bundle{ctx: testCtx(t, 2*time.Minute), srv: natstest.Server(t), names: subjects.Must("u")}
	b.nc = natstest.Conn(t, b.srv)
	b.js = natstest.JetStream(t, b.nc)
	if err := provision.Provision(b.ctx, b.js, b.names, provision.ProvisionOptions{Partitions: -1}); err != nil {
		t.Fatal(err)
	}
	return b
}

func partitionsOf(t *testing.T, b bundle) int {
	t.Helper()
	in, err := b.js.Stream(b.ctx, b.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	return provision.Partitions(in.CachedInfo().Config)
}

// MigratePartitions partitions an unpartitioned deployment in place:
// refused while a dispatcher holds inputs; afterwards the shared consumer
// keeps its place and hands out the inputs stored before (and nothing
// after), new inputs land in their partitions, and a run's history
// filter matches both layouts. A migration cut short after narrowing the
// consumer loses nothing, and running it again finishes it.
func TestMigratePartitions(t *testing.T) {
	t.Parallel()
	b := unpartitioned(t)
	n := b.names
	shared, err := b.js.CreateOrUpdateConsumer(b.ctx, n.InputStream(), provision.DispatcherConsumerConfig(n, time.Minute, 100))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{n.Start("r1"), n.Event("r1", "paid")} {
		if _, err := b.js.Publish(b.ctx, s, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	first, err := shared.Next(jetstream.FetchMaxWait(30 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provision.MigratePartitions(b.ctx, b.js, n, provision.ProvisionOptions{Partitions: 4}); err == nil {
		t.Fatal("migrated while an input was delivered and not acknowledged")
	}
	if err := first.DoubleAck(b.ctx); err != nil {
		t.Fatal(err)
	}

	// The crash window: the consumer narrowed, the stream not yet
	// partitioned. An input published then is still handed out.
	if _, err := b.js.UpdateConsumer(b.ctx, n.InputStream(), provision.UnpartitionedConsumerConfig(n, time.Minute, 100)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.js.Publish(b.ctx, n.Cancel("r2"), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}

	m, err := provision.MigratePartitions(b.ctx, b.js, n, provision.ProvisionOptions{Partitions: 4})
	if err != nil || !m.Migrated || m.Partitions != 4 || m.Unpartitioned != 2 {
		t.Fatalf("migration = %+v, %v; want 4 partitions and 2 inputs left to the shared consumer", m, err)
	}
	if p := partitionsOf(t, b); p != 4 {
		t.Fatalf("the stream records %d partitions after the migration, want 4", p)
	}
	for _, s := range []string{n.Event("r1", "late"), n.Start("r3")} {
		if _, err := b.js.Publish(b.ctx, s, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for range 2 {
		msg, err := shared.Next(jetstream.FetchMaxWait(30 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msg.Subject())
		if err := msg.DoubleAck(b.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{n.Event("r1", "paid"), n.Cancel("r2")}; !slices.Equal(got, want) {
		t.Errorf("the shared consumer handed out %v after the migration, want %v", got, want)
	}
	if info, err := shared.Info(b.ctx); err != nil || info.NumPending != 0 {
		t.Errorf("the shared consumer has %+v pending (%v), want nothing: new inputs are the partitions'", info, err)
	}
	p := subjects.Partition("r3", 4)
	part, err := b.js.CreateOrUpdateConsumer(b.ctx, n.InputStream(), provision.PartitionConsumerConfig(n, p, time.Minute, 100))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := part.Next(jetstream.FetchMaxWait(30 * time.Second))
	if err != nil || msg.Subject() != n.StoredInput(n.Start("r3"), 4) {
		t.Fatalf("partition %d handed out %v (%v), want r3's start", p, msg, err)
	}
	in, err := b.js.Stream(b.ctx, n.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	if got := matching(t, b, in, n.RunInputs("r1")); got != 3 {
		t.Errorf("r1's history filter matches %d messages, want its 3 of both layouts", got)
	}
	if again, err := provision.MigratePartitions(b.ctx, b.js, n, provision.ProvisionOptions{}); err != nil || again.Migrated || again.Partitions != 4 {
		t.Errorf("a second migration = %+v, %v; want nothing done, 4 partitions", again, err)
	}
}

// matching counts the messages of in on subjects matching filter.
func matching(t *testing.T, b bundle, in jetstream.Stream, filter string) uint64 {
	t.Helper()
	info, err := in.Info(b.ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}
