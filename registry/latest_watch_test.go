package registry_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jetflow/jetflow/natstest"
)

// TestLatestIndexFollowsDeploys: the index knows what was deployed before
// it started and follows later deploys; names it has not seen are not
// guessed.
func TestLatestIndexFollowsDeploys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := openRegistry(t, b)
	if _, err := r.Deploy(b.ctx, "before", workflowDoc("b1", "ship")); err != nil {
		t.Fatal(err)
	}
	idx, err := r.WatchLatest(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Stop()
	want := func(name, rev string) {
		t.Helper()
		natstest.WaitFor(t, 10*time.Second, name+" at "+rev, func() error {
			if ref, ok := idx.Latest(name); !ok || ref.Revision != rev {
				return fmt.Errorf("latest %s: %+v, %v", name, ref, ok)
			}
			return nil
		})
	}
	want("before", "b1")
	for _, rev := range []string{"r1", "r2"} {
		if _, err := r.Deploy(b.ctx, "wf", workflowDoc(rev, "ship")); err != nil {
			t.Fatal(err)
		}
		want("wf", rev)
	}
	if ref, ok := idx.Latest("never"); ok {
		t.Errorf("an undeployed name: %+v", ref)
	}
	idx.Stop()
	idx.Stop() // safe twice
	if ref, ok := idx.Latest("wf"); ok {
		t.Errorf("a stopped index still answers: %+v", ref)
	}
}
