package payload_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/payload"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

func setup(t testing.TB, cfg payload.Config) (*payload.Store, jetstream.JetStream) {
	t.Helper()
	s := natstest.Server(t)
	js := natstest.JetStream(t, natstest.Conn(t, s))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names := subjects.Must("")
	if _, err := js.CreateObjectStore(ctx, provision.PayloadBucketConfig(names, provision.ProvisionOptions{})); err != nil {
		t.Fatal(err)
	}
	cfg.Names = names
	ps, err := payload.Open(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ps, js
}

// TestSendAndBody: a body over the threshold leaves as a reference and
// comes back whole; one at the threshold stays inline.
func TestSendAndBody(t *testing.T) {
	t.Parallel()
	ps, _ := setup(t, payload.Config{Threshold: 1024})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	small := nats.NewMsg("x")
	small.Data = bytes.Repeat([]byte("s"), 1024)
	if sent, err := ps.Send(ctx, small, "r1", payload.KindEvent); err != nil || sent || len(small.Data) != 1024 {
		t.Fatalf("a body at the threshold: sent %v, err %v", sent, err)
	}
	big := nats.NewMsg("x")
	body := bytes.Repeat([]byte("b"), 3<<20)
	big.Data = bytes.Clone(body)
	if sent, err := ps.Send(ctx, big, "r1", payload.KindEvent); err != nil || !sent || len(big.Data) != 0 {
		t.Fatalf("a body over the threshold: sent %v, err %v, data %d bytes", sent, err, len(big.Data))
	}
	got, ref, err := ps.Body(ctx, big.Header, big.Data)
	if err != nil || !bytes.Equal(got, body) || ref == nil || ref.Size != int64(len(body)) {
		t.Fatalf("Body: %d bytes, ref %+v, err %v", len(got), ref, err)
	}
	if n, err := ps.RemoveRun(ctx, "r2"); err != nil || n != 0 {
		t.Fatalf("RemoveRun(r2) = %d, %v; want nothing of r1 removed", n, err)
	}
	if n, err := ps.RemoveRun(ctx, "r1"); err != nil || n != 1 {
		t.Fatalf("RemoveRun(r1) = %d, %v; want 1", n, err)
	}
	if _, _, err := ps.Body(ctx, big.Header, nil); !errors.Is(err, payload.ErrMissing) {
		t.Fatalf("Body after removal: %v, want ErrMissing", err)
	}
}

// TestRemoveRunLeavesNothing: removing a run's objects leaves no message
// of them in the bucket's stream, not even the mark of a deletion: the
// bucket has no TTL, so a mark per object of every removed run would stay
// for ever and be read by every listing.
func TestRemoveRunLeavesNothing(t *testing.T) {
	t.Parallel()
	ps, js := setup(t, payload.Config{Threshold: 1024})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kept := nats.NewMsg("x")
	kept.Data = bytes.Repeat([]byte("k"), 4096)
	if _, err := ps.Send(ctx, kept, "kept", payload.KindStart); err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, subjects.Must("").ObjectStream(subjects.Must("").PayloadBucket()))
	if err != nil {
		t.Fatal(err)
	}
	state := func() jetstream.StreamState {
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State
	}
	before := state()
	for _, kind := range []string{payload.KindStart, payload.KindInvoke, payload.KindResult} {
		m := nats.NewMsg("x")
		m.Data = bytes.Repeat([]byte(kind), 300<<10)
		if _, err := ps.Send(ctx, m, "gone", kind); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := ps.RemoveRun(ctx, "gone"); err != nil || n != 3 {
		t.Fatalf("RemoveRun(gone) = %d, %v; want 3", n, err)
	}
	if after := state(); after.Msgs != before.Msgs || after.Bytes != before.Bytes {
		t.Errorf("after the removal the bucket holds %d messages, %d bytes; want what it held before the run, %d messages, %d bytes",
			after.Msgs, after.Bytes, before.Msgs, before.Bytes)
	}
	// Deleting again, or an object never there, is no error.
	if err := ps.Delete(ctx, payload.Name("gone", payload.KindStart, "none")); err != nil {
		t.Errorf("delete of a missing object: %v", err)
	}
	if got, _, err := ps.Body(ctx, kept.Header, nil); err != nil || len(got) != 4096 {
		t.Errorf("the other run's object: %d bytes, %v", len(got), err)
	}
}

// TestBadReferences: every way a reference can be wrong is refused with
// an error wrapping ErrBadRef that names the object.
func TestBadReferences(t *testing.T) {
	t.Parallel()
	ps, js := setup(t, payload.Config{MaxBytes: 1 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	body := []byte(`{"a":1}`)
	ref, err := ps.Put(ctx, "r/event/ok", body)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.ObjectStore(ctx, subjects.Must("").PayloadBucket())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.PutBytes(ctx, "r/event/other", []byte(`{"a":2}`)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		header nats.Header
		data   []byte
		want   error
	}{
		{"missing", hdr(payload.Ref{Name: "r/event/none", Size: ref.Size, Digest: ref.Digest}), nil, payload.ErrMissing},
		{"other content", hdr(payload.Ref{Name: "r/event/other", Size: ref.Size, Digest: ref.Digest}), nil, payload.ErrDigest},
		{"wrong size", hdr(payload.Ref{Name: "r/event/ok", Size: ref.Size + 1, Digest: ref.Digest}), nil, payload.ErrDigest},
		{"oversize", hdr(payload.Ref{Name: "r/event/ok", Size: 2 << 20, Digest: ref.Digest}), nil, payload.ErrOversize},
		{"body too", hdr(ref), []byte(`{}`), payload.ErrBadRef},
		{"no size", nats.Header{payload.HeaderName: {"r/event/ok"}, payload.HeaderDigest: {ref.Digest}}, nil, payload.ErrBadRef},
		{"bad digest form", nats.Header{payload.HeaderName: {"r/event/ok"}, payload.HeaderSize: {"7"}, payload.HeaderDigest: {"md5=x"}}, nil, payload.ErrBadRef},
	} {
		_, _, err := ps.Body(ctx, c.header, c.data)
		if !errors.Is(err, c.want) || !errors.Is(err, payload.ErrBadRef) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if got, _, err := ps.Body(ctx, hdr(ref), nil); err != nil || !bytes.Equal(got, body) {
		t.Errorf("the good reference: %s, %v", got, err)
	}
}

func hdr(r payload.Ref) nats.Header {
	h := nats.Header{}
	r.Set(h)
	return h
}

// BenchmarkRoundTrip50MB puts a 50 MB body in the payload bucket and
// reads it back with its checks, as a client and a dispatcher do: the
// bytes per second it reports are one leg of a payload's journey.
func BenchmarkRoundTrip50MB(b *testing.B) {
	ps, _ := setup(b, payload.Config{})
	ctx := context.Background()
	body := bytes.Repeat([]byte("0123456789abcdef"), 50<<20/16)
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for i := range b.N {
		m := nats.NewMsg("x")
		m.Data = body
		body[0] = byte(i) // a new object each round
		if _, err := ps.Send(ctx, m, "bench", payload.KindStart); err != nil {
			b.Fatal(err)
		}
		if _, _, err := ps.Body(ctx, m.Header, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRemoveRun prices a retention removal of a run with large
// values: a listing of the bucket (RemoveRun's, as a batch of removals
// makes once) and the deletion of the run's objects, with one other run's
// objects in the bucket. Every round removes a new run, so whatever a
// deletion leaves behind accumulates over the rounds (-benchtime=Nx).
func BenchmarkRemoveRun(b *testing.B) {
	ps, _ := setup(b, payload.Config{Threshold: 1024})
	ctx := context.Background()
	body := bytes.Repeat([]byte("r"), 4096)
	put := func(run string) {
		for _, kind := range []string{payload.KindStart, payload.KindInvoke, payload.KindResult} {
			m := nats.NewMsg("x")
			m.Data = body
			if _, err := ps.Send(ctx, m, run, kind); err != nil {
				b.Fatal(err)
			}
		}
	}
	put("kept")
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		run := fmt.Sprintf("gone-%d", i)
		put(run)
		b.StartTimer()
		if n, err := ps.RemoveRun(ctx, run); err != nil || n != 3 {
			b.Fatalf("RemoveRun(%s) = %d, %v", run, n, err)
		}
	}
}

// TestListingPurgesMarksOfEarlierDeletes: an earlier release deleted
// objects with the Object Store's own delete, which leaves a mark for
// ever; the listing that removals make purges such marks, and lists
// neither them nor fewer of the live objects.
func TestListingPurgesMarksOfEarlierDeletes(t *testing.T) {
	t.Parallel()
	ps, js := setup(t, payload.Config{Threshold: 1024})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, run := range []string{"kept", "gone"} {
		m := nats.NewMsg("x")
		m.Data = bytes.Repeat([]byte(run), 1024)
		if _, err := ps.Send(ctx, m, run, payload.KindStart); err != nil {
			t.Fatal(err)
		}
	}
	names := subjects.Must("")
	obs, err := js.ObjectStore(ctx, names.PayloadBucket())
	if err != nil {
		t.Fatal(err)
	}
	gone, err := ps.ByRun(ctx)
	if err != nil || len(gone["gone"]) != 1 {
		t.Fatalf("listing before the delete: %v, %v", gone, err)
	}
	if err := obs.Delete(ctx, gone["gone"][0]); err != nil { // as earlier releases deleted
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, names.ObjectStream(names.PayloadBucket()))
	if err != nil {
		t.Fatal(err)
	}
	msgs := func() uint64 {
		t.Helper()
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
	if n := msgs(); n != 3 { // kept's chunk and info, gone's mark
		t.Fatalf("before the listing the bucket holds %d messages, want 3", n)
	}
	byRun, err := ps.ByRun(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(byRun) != 1 || len(byRun["kept"]) != 1 {
		t.Errorf("listed %v, want kept's one object", byRun)
	}
	if n := msgs(); n != 2 {
		t.Errorf("after the listing the bucket holds %d messages, want 2 (the mark purged)", n)
	}
}
