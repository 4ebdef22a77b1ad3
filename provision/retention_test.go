package provision_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

// TestProvisionKeepsAnInputStreamThatDeniesPurges: an input stream made
// before retention denies purges, which the server refuses to undo, so
// Provision keeps the setting (instead of failing) and says so; the
// source of removals and the bucket's per-key TTLs are added in place.
func TestProvisionKeepsAnInputStreamThatDeniesPurges(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 60*time.Second)
	js := natstest.JetStream(t, natstest.Conn(t, natstest.Server(t)))
	n := subjects.Must("old")
	opts := provision.ProvisionOptions{}
	// The layout of the previous release: purges denied, a run bucket
	// without per-key TTLs.
	timers := provision.TimerStreamConfig(n, opts)
	input := provision.InputStreamConfig(n, opts)
	input.DenyPurge = true
	runs := provision.RunBucketConfig(n, opts)
	runs.LimitMarkerTTL = 0
	for _, cfg := range []jetstream.StreamConfig{timers, input} {
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateKeyValue(ctx, runs); err != nil {
		t.Fatal(err)
	}
	fire(ctx, t, js, n, "r1")
	if deny, err := provision.KeepsDeniedPurge(ctx, js, n, time.Second); err != nil || !deny {
		t.Fatalf("KeepsDeniedPurge = %v, %v; want true", deny, err)
	}
	if err := provision.Provision(ctx, js, n, opts); err != nil {
		t.Fatalf("provision over a stream that denies purges: %v", err)
	}
	in, err := js.Stream(ctx, n.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	if cfg := in.CachedInfo().Config; !cfg.DenyPurge {
		t.Errorf("input stream after provision = deny purge %v", cfg.DenyPurge)
	}
	// The timers' source is the one it was: a changed one would copy the
	// fire made before provisioning again, ahead of the one made after.
	fire(ctx, t, js, n, "r2")
	if info, err := in.Info(ctx, jetstream.WithSubjectFilter(stored(n, n.Timer("r1")))); err != nil || info.State.Subjects[stored(n, n.Timer("r1"))] != 1 {
		t.Errorf("the fire made before provisioning is in the input stream %v (%v), want once", info.State.Subjects, err)
	}
	kv, err := js.Stream(ctx, n.KVStream(n.RunBucket()))
	if err != nil {
		t.Fatal(err)
	}
	if cfg := kv.CachedInfo().Config; !cfg.AllowMsgTTL || cfg.SubjectDeleteMarkerTTL != provision.TombstoneMarkerTTL {
		t.Errorf("run bucket after provision: TTLs %v, marker TTL %s", cfg.AllowMsgTTL, cfg.SubjectDeleteMarkerTTL)
	}
	// A fresh deployment's stream allows purges (to the API, not to headers).
	if deny, err := provision.KeepsDeniedPurge(ctx, js, subjects.Must("none"), time.Second); err != nil || deny {
		t.Errorf("KeepsDeniedPurge of a missing stream = %v, %v", deny, err)
	}
}

// fire publishes a fired timer of run in the timer stream and waits until
// the input stream has copied it.
func fire(ctx context.Context, t *testing.T, js jetstream.JetStream, n subjects.Names, run string) {
	t.Helper()
	if _, err := js.Publish(ctx, n.Fired(run), []byte(`{"timer":"t1","deadline":1}`)); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 10*time.Second, "the fire of "+run+" copied", func() error {
		in, err := js.Stream(ctx, n.InputStream())
		if err != nil {
			return err
		}
		info, err := in.Info(ctx, jetstream.WithSubjectFilter(stored(n, n.Timer(run))))
		if err != nil {
			return err
		}
		if info.State.Subjects[stored(n, n.Timer(run))] == 0 {
			return errors.New("not yet")
		}
		return nil
	})
}
