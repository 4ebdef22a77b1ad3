package token

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

// claimSetup is a provisioned deployment and its workflow bucket.
func claimSetup(t *testing.T) (context.Context, jetstream.JetStream, subjects.Names, jetstream.KeyValue) {
	t.Helper()
	srv := natstest.Server(t, natstest.WithMemoryStore())
	js := natstest.JetStream(t, natstest.Conn(t, srv))
	names := subjects.Must("tk")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{Storage: srv.Storage()}); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, names.WorkflowBucket())
	if err != nil {
		t.Fatal(err)
	}
	return ctx, js, names, kv
}

// TestClaimRefusesDisagreement walks a deployment through configured
// secrets: the first claim records a fingerprint (never the secret), a
// dispatcher that loads from the bucket or holds another secret is
// refused with ErrDisagree, and a rotation that names the old secret as
// previous moves the deployment on.
func TestClaimRefusesDisagreement(t *testing.T) {
	t.Parallel()
	ctx, js, names, kv := claimSetup(t)
	s, other := signer(t, 1), signer(t, 2)
	step := func(what string, err error, wantDisagree bool, wantText string) {
		t.Helper()
		switch {
		case !wantDisagree && err != nil:
			t.Fatalf("%s: %v", what, err)
		case wantDisagree && !errors.Is(err, ErrDisagree):
			t.Fatalf("%s: %v, want ErrDisagree", what, err)
		case wantDisagree && !strings.Contains(err.Error(), wantText):
			t.Fatalf("%s: %v, want it to say %q", what, err, wantText)
		}
	}
	step("first claim", Claim(ctx, js, names, s), false, "")
	e, err := kv.Get(ctx, Key)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(e.Value()), markerPrefix+s.Fingerprint(); got != want {
		t.Fatalf("stored %q, want the fingerprint %q", got, want)
	}
	if bytes.Contains(e.Value(), []byte(hex.EncodeToString(s.keys[0]))) || bytes.Contains(e.Value(), []byte(base64.StdEncoding.EncodeToString(s.keys[0]))) {
		t.Fatal("the bucket holds the configured secret")
	}
	step("the same secret again", Claim(ctx, js, names, s), false, "")
	_, err = Load(ctx, js, names)
	step("a dispatcher loading from the bucket", err, true, "configured with a secret (fingerprint "+s.Fingerprint()+")")
	step("another secret", Claim(ctx, js, names, other), true, "configured with another secret (fingerprint "+s.Fingerprint())

	rotated, err := New(other.keys[0], s.keys[0])
	if err != nil {
		t.Fatal(err)
	}
	step("rotation to the other secret", Claim(ctx, js, names, rotated), false, "")
	step("the retired secret alone", Claim(ctx, js, names, s), true, "fingerprint "+other.Fingerprint())
	step("the new secret alone", Claim(ctx, js, names, other), false, "")
}

// TestClaimAgainstTheBucketSecret: a deployment whose dispatchers use the
// generated secret refuses a configured one until the operator names the
// bucket's secret as previous; then the bucket no longer holds it.
func TestClaimAgainstTheBucketSecret(t *testing.T) {
	t.Parallel()
	ctx, js, names, kv := claimSetup(t)
	loaded, err := Load(ctx, js, names)
	if err != nil {
		t.Fatal(err)
	}
	s := signer(t, 3)
	if err := Claim(ctx, js, names, s); !errors.Is(err, ErrDisagree) || !strings.Contains(err.Error(), "the bucket holds another secret") {
		t.Fatalf("claim over the generated secret: %v", err)
	}
	if _, err := Load(ctx, js, names); err != nil {
		t.Fatalf("a refused claim changed the bucket: %v", err)
	}
	moving, err := New(s.keys[0], loaded.keys[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := Claim(ctx, js, names, moving); err != nil {
		t.Fatalf("claim naming the bucket's secret as previous: %v", err)
	}
	e, err := kv.Get(ctx, Key)
	if err != nil {
		t.Fatal(err)
	}
	if string(e.Value()) != markerPrefix+s.Fingerprint() {
		t.Fatalf("bucket holds %q after the move, want the fingerprint", e.Value())
	}
	if _, err := Load(ctx, js, names); !errors.Is(err, ErrDisagree) {
		t.Fatalf("Load after the move: %v", err)
	}

	// A secret the operator installed with Store is the deployment's: it
	// is accepted as it is and stays loadable.
	installed := signer(t, 4)
	if err := Store(ctx, js, names, installed.keys[0]); err != nil {
		t.Fatal(err)
	}
	if err := Claim(ctx, js, names, installed); err != nil {
		t.Fatalf("claim of the stored secret: %v", err)
	}
	if _, err := Load(ctx, js, names); err != nil {
		t.Fatalf("Load of the stored secret after a claim: %v", err)
	}
	if _, err := kv.Put(ctx, Key, []byte("!!")); err != nil {
		t.Fatal(err)
	}
	if err := Claim(ctx, js, names, installed); !errors.Is(err, ErrSecret) {
		t.Fatalf("claim over a corrupt value: %v", err)
	}
}

// TestClaimAndLoadRace starts configured and loading dispatchers at once
// on an empty bucket: whichever writes first, one side starts and the
// other is refused, never both.
func TestClaimAndLoadRace(t *testing.T) {
	t.Parallel()
	ctx, js, names, _ := claimSetup(t)
	s := signer(t, 5)
	const n = 4
	var wg sync.WaitGroup
	claims, loads := make([]error, n), make([]error, n)
	for i := range n {
		wg.Go(func() { claims[i] = Claim(ctx, js, names, s) })
		wg.Go(func() { _, loads[i] = Load(ctx, js, names) })
	}
	wg.Wait()
	claimed := claims[0] == nil
	for i := range n {
		if (claims[i] == nil) != claimed || (loads[i] == nil) == claimed {
			t.Fatalf("claims %v, loads %v: want one side to start and the other refused", claims, loads)
		}
		if err := claims[i]; err == nil {
			err = loads[i]
			if !errors.Is(err, ErrDisagree) {
				t.Errorf("refusal %v does not wrap ErrDisagree", err)
			}
		} else if !errors.Is(err, ErrDisagree) {
			t.Errorf("refusal %v does not wrap ErrDisagree", err)
		}
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	a, b := signer(t, 1), signer(t, 2)
	if a.Fingerprint() != signer(t, 1).Fingerprint() || a.Fingerprint() == b.Fingerprint() || len(a.Fingerprint()) != 32 {
		t.Fatalf("fingerprints %q, %q", a.Fingerprint(), b.Fingerprint())
	}
	if strings.Contains(a.Fingerprint(), hex.EncodeToString(a.keys[0][:4])) {
		t.Fatal("the fingerprint shows the secret")
	}
	// A token and a fingerprint never share a MAC input.
	if strings.Contains(a.Sign(fingerprintDomain, "", "", 0), a.Fingerprint()) {
		t.Fatal("a token equals a fingerprint")
	}
}
