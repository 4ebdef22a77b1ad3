package token

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

func signer(t testing.TB, b byte, previous ...[]byte) *Signer {
	t.Helper()
	s, err := New(bytes.Repeat([]byte{b}, SecretSize), previous...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerify(t *testing.T) {
	t.Parallel()
	s := signer(t, 1)
	tok := s.Sign("r1", `["r1","/states/a",1]`, "task", 1)
	cases := []struct {
		name                string
		run, act, node, tok string
		attempt             int
		want                bool
	}{
		{"the invocation's own token", "r1", `["r1","/states/a",1]`, "task", tok, 1, true},
		{"another run", "r2", `["r1","/states/a",1]`, "task", tok, 1, false},
		{"another activation", "r1", `["r1","/states/a",2]`, "task", tok, 1, false},
		{"another node", "r1", `["r1","/states/a",1]`, "other", tok, 1, false},
		{"another attempt", "r1", `["r1","/states/a",1]`, "task", tok, 2, false},
		{"empty", "r1", `["r1","/states/a",1]`, "task", "", 1, false},
		{"no version", "r1", `["r1","/states/a",1]`, "task", tok[3:], 1, false},
		{"truncated", "r1", `["r1","/states/a",1]`, "task", tok[:len(tok)-1], 1, false},
		{"padded", "r1", `["r1","/states/a",1]`, "task", tok + "=", 1, false},
		{"the old message id", "r1", `["r1","/states/a",1]`, "task", "r1/r1/1/0", 1, false},
		{"field boundaries move", "r", `1["r1","/states/a",1]`, "task", tok, 1, false},
	}
	for _, c := range cases {
		if got := s.Verify(c.run, c.act, c.node, c.attempt, c.tok); got != c.want {
			t.Errorf("%s: Verify = %v, want %v", c.name, got, c.want)
		}
	}
	if other := signer(t, 2); other.Verify("r1", `["r1","/states/a",1]`, "task", 1, tok) {
		t.Error("a token verified under another deployment's secret")
	}
}

func TestRotation(t *testing.T) {
	t.Parallel()
	old := signer(t, 1)
	rotated := signer(t, 2, bytes.Repeat([]byte{1}, SecretSize))
	tok := old.Sign("r", "a", "n", 1)
	if !rotated.Verify("r", "a", "n", 1, tok) {
		t.Error("a token of the previous secret is refused during rotation")
	}
	if rotated.Sign("r", "a", "n", 1) == tok {
		t.Error("the rotated signer still signs with the old secret")
	}
	if old.Verify("r", "a", "n", 1, rotated.Sign("r", "a", "n", 1)) {
		t.Error("the old signer accepts the new secret's token")
	}
}

func TestSecrets(t *testing.T) {
	t.Parallel()
	if _, err := New(make([]byte, MinSecretSize-1)); !errors.Is(err, ErrSecret) {
		t.Errorf("short secret: %v", err)
	}
	if _, err := New(make([]byte, SecretSize), []byte("short")); !errors.Is(err, ErrSecret) {
		t.Errorf("short previous secret: %v", err)
	}
	a, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate()
	if len(a) != SecretSize || bytes.Equal(a, b) {
		t.Fatalf("Generate: %x, %x", a, b)
	}
	for _, text := range []string{hex.EncodeToString(a), base64.StdEncoding.EncodeToString(a), base64.RawURLEncoding.EncodeToString(a), " " + hex.EncodeToString(a) + "\n"} {
		got, err := ParseSecret(text)
		if err != nil || !bytes.Equal(got, a) {
			t.Errorf("ParseSecret(%q) = %x, %v", text, got, err)
		}
	}
	// Configured secrets need SecretSize bytes, though New still accepts
	// MinSecretSize (a stored or retiring secret).
	for _, text := range []string{"", "not a secret!", hex.EncodeToString(a[:8]), hex.EncodeToString(a[:SecretSize-1]), base64.StdEncoding.EncodeToString(a[:MinSecretSize])} {
		if _, err := ParseSecret(text); !errors.Is(err, ErrSecret) {
			t.Errorf("ParseSecret(%q): %v", text, err)
		}
	}
}

func FuzzVerify(f *testing.F) {
	s := signer(f, 7)
	f.Add("r1", "a", "n", 1, s.Sign("r1", "a", "n", 1))
	f.Add("", "", "", 0, "v1.")
	f.Add("r", "a", "n", -1, "v1.AAAA")
	f.Fuzz(func(t *testing.T, run, act, node string, attempt int, tok string) {
		want := tok == s.Sign(run, act, node, attempt)
		if got := s.Verify(run, act, node, attempt, tok); got != want {
			t.Fatalf("Verify(%q,%q,%q,%d,%q) = %v, want %v", run, act, node, attempt, tok, got, want)
		}
		if !s.Verify(run, act, node, attempt, s.Sign(run, act, node, attempt)) {
			t.Fatal("a fresh token does not verify")
		}
	})
}

func TestLoadSharesOneSecret(t *testing.T) {
	t.Parallel()
	srv := natstest.Server(t, natstest.WithMemoryStore())
	js := natstest.JetStream(t, natstest.Conn(t, srv))
	names := subjects.Must("tk")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{Storage: srv.Storage()}); err != nil {
		t.Fatal(err)
	}
	// Dispatchers starting together must all end with the same secret.
	const n = 8
	signers := make([]*Signer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := Load(ctx, natstest.JetStream(t, natstest.Conn(t, srv)), names)
			if err != nil {
				t.Error(err)
			}
			signers[i] = s
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	tok := signers[0].Sign("r", "a", "n", 1)
	for i, s := range signers {
		if !s.Verify("r", "a", "n", 1, tok) {
			t.Fatalf("dispatcher %d loaded another secret", i)
		}
	}
	// An operator's configured secret replaces the generated one.
	secret := bytes.Repeat([]byte{9}, SecretSize)
	if err := Store(ctx, js, names, secret); err != nil {
		t.Fatal(err)
	}
	s, err := Load(ctx, js, names)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Verify("r", "a", "n", 1, signer(t, 9).Sign("r", "a", "n", 1)) {
		t.Fatal("Load did not return the stored secret")
	}
	if err := Store(ctx, js, names, []byte("short")); !errors.Is(err, ErrSecret) {
		t.Fatalf("Store of a short secret: %v", err)
	}
}

func TestLoadRefusesCorruptSecret(t *testing.T) {
	t.Parallel()
	srv := natstest.Server(t, natstest.WithMemoryStore())
	js := natstest.JetStream(t, natstest.Conn(t, srv))
	names := subjects.Must("tk")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{Storage: srv.Storage()}); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, names.WorkflowBucket())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, Key, []byte("!!")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ctx, js, names); !errors.Is(err, ErrSecret) {
		t.Fatalf("Load of a corrupt secret: %v", err)
	}
	if _, err := Load(ctx, js, subjects.Must("absent")); err == nil {
		t.Fatal("Load without a provisioned bucket succeeded")
	}
}
