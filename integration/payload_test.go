package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/dispatcher"
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
	// A listing that begins while a removal purges the bucket's last
	// objects waits for ever for an info the purge took (nats.go's List
	// found the bucket not empty, then its watcher gets nothing): each
	// try gets its own deadline, and one that runs out is tried again.
	var infos []*jetstream.ObjectInfo
	for {
		ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
		infos, err = obs.List(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || e.ctx.Err() != nil {
			break
		}
	}
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

// largeRun runs a blob run of a size-byte input through a Go worker that
// returns a result one byte longer, and checks what crossed: the input
// reached the worker whole, the result reached the run's status whole,
// the start, invocation, result and the record's values went through the
// payload bucket, the run bucket holds a small record whose large values
// are references, and replay rebuilds the run exactly. It returns the
// time from start to the end of the run.
func largeRun(t *testing.T, e *env, runID string, size int, within time.Duration) time.Duration {
	t.Helper()
	blob := strings.Repeat("0123456789abcdef", size/16)
	began := time.Now()
	e.start(t, "blob", runID, map[string]any{"blob": blob})
	st := e.wait(t, runID, within)
	took := time.Since(began)
	if st.Status != wire.StatusDone {
		t.Fatalf("run %s ended %+v", runID, st.Error)
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
	kinds := map[string]int{}
	for _, name := range e.objects(t, runID) {
		kinds[strings.Split(name, "/")[1]]++
	}
	for _, k := range []string{payload.KindStart, payload.KindInvoke, payload.KindResult} {
		if kinds[k] == 0 {
			t.Errorf("no %s object of run %s in the payload bucket (it has %v)", k, runID, kinds)
		}
	}
	// The record's values: a few distinct ones (the input, the result),
	// each once however many saves and copies held them, never one per
	// save of the record.
	if n := kinds[payload.KindValue]; n < 2 || n > 3 {
		t.Errorf("%d value objects of run %s, want the input, the result and at most one more: %v", n, runID, e.objects(t, runID))
	}
	kv, err := e.f.JS.KeyValue(e.ctx, e.names.RunBucket())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := kv.Get(e.ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if !payload.HasRefs(raw.Value()) || len(raw.Value()) > 64<<10 {
		t.Errorf("the run bucket holds %d bytes for run %s, want a small record with references: %.300s", len(raw.Value()), runID, raw.Value())
	}
	checkReplayWithin(t, e, runID, 3*time.Minute)
	return took
}

// TestLargeInputAndResultByReference: a 4 MB run input reaches a Go
// worker and its 4 MB result reaches the run's status, by reference
// (largeRun); the 50 MB case is in payload_norace_test.go.
func TestLargeInputAndResultByReference(t *testing.T) {
	t.Parallel()
	e := setup(t, options{timeout: 6 * time.Minute})
	largeRun(t, e, "big4", 4<<20, 5*time.Minute)
}

// TestExecPayloadsByReference: a 3 MB input reaches a program served by
// worker exec, and the program's 3 MB answer (the request it read) comes
// back by reference.
func TestExecPayloadsByReference(t *testing.T) {
	t.Parallel()
	e := setup(t, options{timeout: 6 * time.Minute})
	blob := strings.Repeat("e", 3<<20)
	e.start(t, "blobexec", "ex", map[string]any{"blob": blob})
	st := e.wait(t, "ex", 5*time.Minute)
	if st.Status != wire.StatusDone {
		t.Fatalf("run ex ended %s: %+v", st.Status, st.Error)
	}
	var out struct {
		Run   string
		Input struct{ Blob string }
	}
	if err := json.Unmarshal(st.Result, &out); err != nil || out.Run != "ex" || out.Input.Blob != blob {
		t.Fatalf("the program answered for run %q with %d bytes of blob (%v), want run ex and %d bytes", out.Run, len(out.Input.Blob), err, len(blob))
	}
	kinds := map[string]int{}
	for _, name := range e.objects(t, "ex") {
		kinds[strings.Split(name, "/")[1]]++
	}
	if kinds[payload.KindInvoke] == 0 || kinds[payload.KindResult] == 0 {
		t.Errorf("objects of run ex: %v, want an invocation and a result", e.objects(t, "ex"))
	}
	checkReplayWithin(t, e, "ex", 3*time.Minute)
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
	checkReplayWithin(t, e, "ev", 3*time.Minute)
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
