package provision_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/provision"
)

// TestAuditStream: Provision makes the audit stream with its max age;
// its entries can be neither deleted nor purged, so one leaves only by
// age.
func TestAuditStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := provision.Provision(b.ctx, b.js, b.names, provision.ProvisionOptions{AuditMaxAge: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	s, err := b.js.Stream(b.ctx, b.names.AuditStream())
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	if cfg.MaxAge != 48*time.Hour || !cfg.DenyDelete || !cfg.DenyPurge || !cfg.AllowDirect || len(cfg.Subjects) != 1 || cfg.Subjects[0] != b.names.AuditAll() {
		t.Fatalf("audit stream config: %+v", cfg)
	}
	if got := provision.AuditStreamConfig(b.names, provision.ProvisionOptions{}).MaxAge; got != provision.DefaultAuditMaxAge {
		t.Fatalf("default max age %s", got)
	}
	ack, err := b.js.Publish(b.ctx, b.names.Audit("cli", "pause"), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(b.ctx, ack.Sequence); err == nil {
		t.Fatal("an audit entry was deleted")
	}
	if err := s.Purge(b.ctx); err == nil {
		t.Fatal("the audit stream was purged")
	}
	if _, err := s.GetMsg(b.ctx, ack.Sequence); errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatal("the entry is gone")
	}
}
