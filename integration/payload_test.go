package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/payload"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// objects lists the payload bucket's objects of a run.
func (e *env) objects(t testing.TB, runID string) []string {
	t.Helper()
	obs, err := e.f.JS.ObjectStore(e.ctx, e.names.PayloadBucket())
	if err != nil {
		t.Fatal(err)
	}
	infos, err := obs.List(e.ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, i := range infos {
		if strings.HasPrefix(i.Name, runID+"/") {
			out = append(out, i.Name)
		}
	}
	return out
}

// TestFiftyMegabytesByReference: a 50 MB run input reaches a Go worker
// and its 50 MB result reaches the run's status, through the payload
// bucket: the input, the invocation, the result and the run record travel
// by reference, the run bucket holds a small stub, and replay rebuilds the
// run exactly from the references.
func TestFiftyMegabytesByReference(t *testing.T) {
	t.Parallel()
	e := setup(t, options{timeout: 6 * time.Minute})
	blob := strings.Repeat("0123456789abcdef", 50<<20/16)
	e.start(t, "blob", "big", map[string]any{"blob": blob})
	st := e.wait(t, "big", 5*time.Minute)
	if st.Status != wire.StatusDone {
		t.Fatalf("run big ended %+v", st.Error)
	}
	var out struct {
		Blob string
		Got  int
	}
	if err := json.Unmarshal(st.Result, &out); err != nil {
		t.Fatal(err)
	}
	if out.Got != len(blob) || out.Blob != blob+"!" {
		t.Fatalf("the worker got %d bytes of input (want %d) and the result holds %d bytes (want %d)", out.Got, len(blob), len(out.Blob), len(blob)+1)
	}
	kinds := map[string]bool{}
	for _, name := range e.objects(t, "big") {
		kinds[strings.Split(name, "/")[1]] = true
	}
	for _, k := range []string{payload.KindStart, payload.KindInvoke, payload.KindResult, payload.KindRecord} {
		if !kinds[k] {
			t.Errorf("no %s object of run big in the payload bucket (it has %v)", k, kinds)
		}
	}
	kv, err := e.f.JS.KeyValue(e.ctx, e.names.RunBucket())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := kv.Get(e.ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if !kvstore.IsStub(raw.Value()) || len(raw.Value()) > 1024 {
		t.Errorf("the run bucket holds %d bytes for run big, want a stub: %.200s", len(raw.Value()), raw.Value())
	}
	checkReplay(t, e, "big")
}

// TestEventByReference: an event whose payload is larger than the
// threshold travels by reference and moves its run as an inline one does.
func TestEventByReference(t *testing.T) {
	t.Parallel()
	e := setup(t, options{timeout: 6 * time.Minute})
	e.start(t, "approval", "ev", nil)
	e.waitStatus(t, "ev", wire.StatusWaiting, time.Minute)
	pad := strings.Repeat("p", 3<<20)
	if err := e.f.Client.SendEvent(e.ctx, "ev", "approve", map[string]any{"ok": true, "amount": 21, "pad": pad}); err != nil {
		t.Fatal(err)
	}
	st := e.wait(t, "ev", 5*time.Minute)
	if st.Status != wire.StatusDone || string(st.Result) != "42" {
		t.Fatalf("run ev ended %s with %s, want done with 42", st.Status, st.Result)
	}
	events := 0
	for _, name := range e.objects(t, "ev") {
		if strings.HasPrefix(name, "ev/"+payload.KindEvent+"/") {
			events++
		}
	}
	if events != 1 {
		t.Errorf("objects of run ev: %v, want one event", e.objects(t, "ev"))
	}
	checkReplay(t, e, "ev")
}

// TestBadReferenceIsRefusedVisibly: an event naming a missing object, or
// an object whose digest differs, is refused and the refusal is in the
// run's record (status and history show it); the run is unmoved.
func TestBadReferenceIsRefusedVisibly(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.start(t, "approval", "bad", nil)
	e.waitStatus(t, "bad", wire.StatusWaiting, time.Minute)
	body := []byte(`{"ok":true,"amount":1}`)
	obs, err := e.f.JS.ObjectStore(e.ctx, e.names.PayloadBucket())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.PutBytes(e.ctx, "bad/event/tampered", []byte(`{"ok":true,"amount":1000}`)); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		ref  payload.Ref
		says string
	}{
		{payload.Ref{Name: "bad/event/missing", Size: int64(len(body)), Digest: payload.Digest(body)}, "object not found"},
		{payload.Ref{Name: "bad/event/tampered", Size: int64(len(body)), Digest: payload.Digest(body)}, "digest mismatch"},
		{payload.Ref{Name: "bad/event/huge", Size: 1 << 40, Digest: payload.Digest(body)}, "larger than the payload limit"},
	} {
		m := nats.NewMsg(e.names.Event("bad", "approve"))
		c.ref.Set(m.Header)
		m.Header.Set(wire.HeaderMsgID, fmt.Sprintf("bad-ref-%d", i))
		if _, err := e.f.JS.PublishMsg(e.ctx, m); err != nil {
			t.Fatal(err)
		}
		rej := waitRejection(t, e, "bad", func(r runrecord.Rejection) bool {
			return r.Kind == subjects.KindEvent && strings.Contains(r.Reason, c.says)
		})
		if !strings.Contains(rej.Reason, c.ref.Name) {
			t.Errorf("refusal %q does not name object %q", rej.Reason, c.ref.Name)
		}
	}
	if st := e.waitStatus(t, "bad", wire.StatusWaiting, time.Second); st.State != "/states/wait" {
		t.Errorf("run bad moved to %s on a bad reference", st.State)
	}
	checkReplay(t, e, "bad")
}

// TestRetentionRemovesPayloads: when retention removes a settled run, its
// objects in the payload bucket go with it; another run's stay.
func TestRetentionRemovesPayloads(t *testing.T) {
	t.Parallel()
	e := setup(t, options{dispatchers: none, timeout: 6 * time.Minute})
	e.addDispatcher(dispatcher.Config{Retention: 2 * time.Second})
	blob := strings.Repeat("r", 2<<20)
	e.start(t, "blob", "gone", map[string]any{"blob": blob})
	// A run that never settles, with a large input.
	e.start(t, "forever", "kept", map[string]any{"blob": blob})
	natstest.WaitFor(t, 2*time.Minute, "objects of kept and gone", func() error {
		if len(e.objects(t, "kept")) == 0 || len(e.objects(t, "gone")) == 0 {
			return errors.New("not yet")
		}
		return nil
	})
	natstest.WaitFor(t, 4*time.Minute, "run gone removed with its objects", func() error {
		if _, err := e.f.Client.Status(e.ctx, "gone"); !errors.Is(err, runrecord.ErrRemoved) {
			return fmt.Errorf("status: %w", err)
		}
		if left := e.objects(t, "gone"); len(left) > 0 {
			return fmt.Errorf("objects left: %v", left)
		}
		return nil
	})
	if len(e.objects(t, "kept")) == 0 {
		t.Error("the waiting run's event object was removed with another run")
	}
}

// TestPayloadDigestFormat: the digest header is the Object Store's own
// form, so that a client may compare it with the object's info.
func TestPayloadDigestFormat(t *testing.T) {
	t.Parallel()
	// The Object Store's own digest of "hello", as nats.go writes it.
	if got, want := payload.Digest([]byte("hello")), "SHA-256=LPJNul-wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="; got != want {
		t.Errorf("Digest(hello) = %s, want %s", got, want)
	}
	if !bytes.Equal([]byte(payload.HeaderName), []byte(wire.HeaderPayload)) {
		t.Error("payload and wire disagree on the header")
	}
}
