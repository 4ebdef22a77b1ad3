package registry_test

import (
	"errors"
	"testing"

	"github.com/jetflow/jetflow/registry"
)

func TestRegistryLatest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := openRegistry(t, b)
	if _, err := r.Latest(b.ctx, "wf"); !errors.Is(err, registry.ErrWorkflowNotFound) {
		t.Fatalf("Latest of an undeployed workflow: %v", err)
	}
	var last registry.Deployment
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
