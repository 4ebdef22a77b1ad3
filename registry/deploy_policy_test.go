package registry_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/registry"
)

func mustPolicy(t *testing.T, s string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func canonHash(t *testing.T, doc []byte) (string, string) {
	t.Helper()
	v, err := value.Decode(doc, value.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	canon := value.MustCanonical(v)
	sum := sha256.Sum256([]byte(canon))
	return canon, hex.EncodeToString(sum[:])
}

// A policy is stored with its revision, read back by every getter, and
// covered by the content address; no policy keeps the old address.
func TestRegistryStoresPolicy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := openRegistry(t, b)
	doc := workflowDoc("1", "prepare")
	canon, plain := canonHash(t, doc)
	pol := mustPolicy(t, `{"charge@2":{"maxAttempts":5,"startToClose":"30s"},"*":{"initialInterval":"100ms"}}`)

	d, err := r.DeployWithPolicy(b.ctx, "orders", doc, pol)
	if err != nil {
		t.Fatal(err)
	}
	if d.Hash == plain || d.Hash != registry.ContentHash([]byte(canon), pol) || string(d.Policy.Canonical()) != string(pol.Canonical()) {
		t.Fatalf("deployment with a policy: hash %s (document alone %s), policy %s", d.Hash, plain, d.Policy.Canonical())
	}
	latest := func() (registry.Document, error) { dep, err := r.Get(b.ctx, "orders"); return dep.Document, err }
	pinned := func() (registry.Document, error) {
		dep, err := r.GetRevision(b.ctx, "orders", "1")
		return dep.Document, err
	}
	byHash := func() (registry.Document, error) { return r.GetByHash(b.ctx, d.Hash) }
	for name, get := range map[string]func() (registry.Document, error){"Get": latest, "GetRevision": pinned, "GetByHash": byHash} {
		got, err := get()
		if err != nil || got.Hash != d.Hash || got.Policy == nil || string(got.Policy.Canonical()) != string(pol.Canonical()) {
			t.Errorf("%s = %+v, %v", name, got, err)
			continue
		}
		if got.Policy.Retry("charge", "2").MaxAttempts != 5 || got.Policy.StartToClose("charge", "2").String() != "30s" {
			t.Errorf("%s: the policy read back resolves differently", name)
		}
	}

	// Without a policy, or with an empty one, the address is the
	// document's alone and the policy is nil (the defaults).
	for i, p := range []*policy.Policy{nil, mustPolicy(t, `{}`)} {
		name := fmt.Sprintf("plain%d", i)
		d, err := r.DeployWithPolicy(b.ctx, name, doc, p)
		if err != nil || d.Hash != plain || d.Policy != nil {
			t.Fatalf("deploy %s: hash %s, policy %v, %v; want %s and no policy", name, d.Hash, d.Policy, err, plain)
		}
		if got, err := r.Get(b.ctx, name); err != nil || got.Policy != nil {
			t.Fatalf("Get %s: policy %v, %v", name, got.Policy, err)
		}
	}
}

// A revision's policy never changes; the same policy again is a no-op.
func TestRegistryPolicyIsPartOfTheRevision(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := openRegistry(t, b)
	doc := workflowDoc("1", "prepare")
	pol := mustPolicy(t, `{"*":{"maxAttempts":2}}`)
	first, err := r.DeployWithPolicy(b.ctx, "orders", doc, pol)
	if err != nil {
		t.Fatal(err)
	}
	// Written differently, the same policy is the same deployment.
	again, err := r.DeployWithPolicy(b.ctx, "orders", doc, mustPolicy(t, `{ "*" : { "maxAttempts" : 2.0 } }`))
	if err != nil || !sameDeployment(again, first) {
		t.Fatalf("redeploy with the same policy = %+v, %v", again, err)
	}
	for _, other := range []*policy.Policy{nil, mustPolicy(t, `{"*":{"maxAttempts":3}}`)} {
		_, err := r.DeployWithPolicy(b.ctx, "orders", doc, other)
		if !errors.Is(err, registry.ErrRevisionImmutable) || !strings.Contains(err.Error(), first.Hash) || !strings.Contains(err.Error(), "policy") {
			t.Errorf("revision 1 with policy %s = %v, want ErrRevisionImmutable naming %s", other.Canonical(), err, first.Hash)
		}
	}
	// A new revision may carry a new policy.
	if _, err := r.DeployWithPolicy(b.ctx, "orders", workflowDoc("2", "prepare"), mustPolicy(t, `{"*":{"maxAttempts":3}}`)); err != nil {
		t.Fatal(err)
	}
}

// Records written before policies existed, and damaged ones, are read as
// such.
func TestRegistryReadsRecordsWithoutPolicy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := openRegistry(t, b)
	kv, err := b.js.KeyValue(b.ctx, b.names.WorkflowBucket())
	if err != nil {
		t.Fatal(err)
	}
	canon, hash := canonHash(t, workflowDoc("1", "prepare"))
	old := fmt.Sprintf(`{"revision":"1","tasks":[{"task":"prepare","version":"1.0"}],"doc":%s}`, canon)
	if _, err := kv.Put(b.ctx, "doc."+hash, []byte(old)); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(b.ctx, "name.legacy", fmt.Appendf(nil, `{"name":"legacy","revisions":[{"revision":"1","hash":%q,"deployed":"2026-01-01T00:00:00Z"}]}`, hash)); err != nil {
		t.Fatal(err)
	}
	d, err := r.GetRevision(b.ctx, "legacy", "1")
	if err != nil || d.Hash != hash || d.Policy != nil || len(d.Tasks) != 1 {
		t.Fatalf("a record without a policy: %+v, %v", d, err)
	}
	// Redeploying it without a policy finds it unchanged.
	if again, err := r.Deploy(b.ctx, "legacy", workflowDoc("1", "prepare")); err != nil || again.Hash != hash {
		t.Fatalf("redeploy of a legacy revision: %+v, %v", again, err)
	}

	pol := mustPolicy(t, `{"*":{"maxAttempts":2}}`)
	withPolicy := registry.ContentHash([]byte(canon), pol)
	for _, c := range []struct{ name, policy, want string }{
		{"invalid policy", `{"*":{"maxAttempts":0}}`, "corrupt document record: policy /*/maxAttempts"},
		{"another policy", `{"*":{"maxAttempts":3}}`, "does not match its hash"},
	} {
		rec := fmt.Sprintf(`{"revision":"1","tasks":[],"doc":%s,"policy":%s}`, canon, c.policy)
		if _, err := kv.Put(b.ctx, "doc."+withPolicy, []byte(rec)); err != nil {
			t.Fatal(err)
		}
		if _, err := r.GetByHash(b.ctx, withPolicy); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: GetByHash = %v, want %q", c.name, err, c.want)
		}
	}
}
