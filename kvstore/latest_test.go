package kvstore_test

import (
	"errors"
	"testing"

	"github.com/jetflow/jetflow/kvstore"
)

func TestRegistryLatest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := registry(t, b)
	if _, err := r.Latest(b.ctx, "wf"); !errors.Is(err, kvstore.ErrWorkflowNotFound) {
		t.Fatalf("Latest of an undeployed workflow: %v", err)
	}
	var last kvstore.Deployment
	for _, rev := range []string{"r1", "r2"} {
		d, err := r.Deploy(b.ctx, "wf", workflowDoc(rev, "ship"))
		if err != nil {
			t.Fatal(err)
		}
		last = d
		ref, err := r.Latest(b.ctx, "wf")
		if err != nil || ref.Revision != rev || ref.Hash != d.Hash {
			t.Errorf("Latest after deploying %s: %+v, %v", rev, ref, err)
		}
	}
	if got, err := r.Get(b.ctx, "wf"); err != nil || got.Hash != last.Hash {
		t.Errorf("Get agrees with Latest: %+v, %v", got.Revision, err)
	}
}
