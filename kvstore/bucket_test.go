package kvstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/subjects"
)

func TestOpenBeforeProvision(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	js := natstest.JetStream(t, natstest.Conn(t, natstest.Server(t)))
	names := subjects.Must("t")
	if _, err := kvstore.OpenRunStore(ctx, js, names); !errors.Is(err, kvstore.ErrNotProvisioned) || !strings.Contains(err.Error(), names.RunBucket()) {
		t.Errorf("OpenRunStore = %v", err)
	}
	if _, err := kvstore.BindBucket(ctx, js, names, names.WorkflowBucket()); !errors.Is(err, kvstore.ErrNotProvisioned) {
		t.Errorf("BindBucket = %v", err)
	}
}
