package runindex

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

// TestIndexOnAClusterOfThree: with three replicas, a clustered stream
// refuses a second message that checks the head's sequence while the
// first is in flight (10164), so a writer that sent a change's entries
// and head at once lost that "race" to itself every time and indexed
// nothing. Every run is listed, in its latest state.
func TestIndexOnAClusterOfThree(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := natstest.Cluster(t, 3)
	js := natstest.JetStream(t, c.Connect())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	names := subjects.Must("")
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	none := func(string, string) (map[string]string, error) { return nil, nil }
	x := New(js, Config{Names: names, Search: none, Logger: slog.New(slog.DiscardHandler)})
	x.Start()
	defer x.Stop()
	kv, err := js.KeyValue(ctx, names.RunBucket())
	if err != nil {
		t.Fatal(err)
	}
	const runs = 20
	for i := range runs {
		r := fmt.Sprintf("r%d", i)
		for _, wf := range []string{"wf-a", "wf-b"} {
			if _, err := kv.Put(ctx, r, tombstone(r, wf)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cl, err := client.New(ctx, js, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, time.Minute, "every run listed at its latest record", func() error {
		listed, err := removedRuns(ctx, cl)
		if err != nil {
			return err
		}
		n := 0
		for _, r := range listed {
			if strings.HasSuffix(r, "@wf-b") {
				n++
			}
		}
		if n != runs {
			return fmt.Errorf("%d of %d runs listed at wf-b (%d listed)", n, runs, len(listed))
		}
		return nil
	})
}
