package provision_test

import (
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/provision"
)

// TestQueueStream: the queue stream of priority and fairness takes
// every queued subject, keeps messages until a dispatcher deletes them
// (limits retention), and takes per-message TTLs; a deployment
// provisioned before it existed gains it when provisioned again.
func TestQueueStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	qs, err := b.js.Stream(b.ctx, b.names.QueueStream())
	if err != nil {
		t.Fatal(err)
	}
	if cfg := qs.CachedInfo().Config; !slices.Equal(cfg.Subjects, []string{b.names.QueueAll()}) ||
		cfg.Retention != jetstream.LimitsPolicy || !cfg.AllowMsgTTL || cfg.MaxAge != 0 || cfg.DenyDelete {
		t.Errorf("queue stream config = %+v", cfg)
	}
	// An old deployment: every stream but the queue.
	if err := b.js.DeleteStream(b.ctx, b.names.QueueStream()); err != nil {
		t.Fatal(err)
	}
	if err := provision.Provision(b.ctx, b.js, b.names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.js.Stream(b.ctx, b.names.QueueStream()); err != nil {
		t.Fatalf("provisioned again, the deployment has no queue stream: %v", err)
	}
}
