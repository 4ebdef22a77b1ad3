package kvstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
)

// A replicated stream that lost its leader has each replica answer
// STREAM.INFO with its own state, which may lag or lack messages the
// leader held; SubjectCounts, LeaderInfo and BindLeader take no such
// answer. With the leader and another node stopped, the follower left
// answers with no leader: they wait and return ErrNoLeader; with the
// nodes back, the whole count and state.
func TestSubjectCountsWaitsForALeader(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := natstest.Cluster(t, 3)
	ctx := testCtx(t, 3*time.Minute)
	js := natstest.JetStream(t, c.Connect())
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := js.Publish(ctx, "s.a", nil); err != nil {
			t.Fatal(err)
		}
	}
	// Keep a follower, whose answer is never a leader's.
	leader := c.WaitStreamLeader("S")
	left := 0
	if c.Servers[left] == leader {
		left = 1
	}
	js = natstest.JetStream(t, natstest.Conn(t, c.Servers[left]))
	stream, err := js.Stream(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Servers {
		if i != left {
			c.Stop(i)
		}
	}
	// The node left takes the group for leaderless some seconds on, and
	// answers from then on; until then nothing answers, or the node left
	// answers as the leader a stopping one handed the group to.
	natstest.WaitFor(t, time.Minute, "the node left to answer with no leader", func() error {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		// Led before or after the request: it may have answered as the
		// leader and stepped down since (CI under heavy load).
		led := c.StreamLeader("S") == c.Servers[left]
		counts, _, err := kvstore.SubjectCounts(rctx, js, "S", "s.>", 0)
		switch {
		case errors.Is(err, kvstore.ErrNoLeader):
		case err == nil && (led || c.StreamLeader("S") == c.Servers[left]):
			// The stopped leader handed the group to the node left, which
			// leads it until it sees it has no quorum: a leader's answer.
			return errors.New("the node left still leads the stream")
		case err == nil:
			t.Fatalf("SubjectCounts took the answer of a stream with no leader: %v", counts)
		default:
			return err
		}
		// Each must say there is no leader; a request that got no answer
		// in time (a loaded machine) is asked again.
		ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if info, err := kvstore.LeaderInfo(ictx, stream); unanswered(err) {
			return fmt.Errorf("LeaderInfo: %w", err)
		} else if !errors.Is(err, kvstore.ErrNoLeader) {
			t.Fatalf("LeaderInfo with no leader: %+v, %v; want ErrNoLeader", info, err)
		}
		bctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if s, err := kvstore.BindLeader(bctx, js, "S"); unanswered(err) {
			return fmt.Errorf("BindLeader: %w", err)
		} else if !errors.Is(err, kvstore.ErrNoLeader) {
			t.Fatalf("BindLeader with no leader: %v, %v; want ErrNoLeader", s, err)
		}
		return nil
	})
	for i := range c.Servers {
		if i != left {
			c.Start(i)
		}
	}
	c.WaitStreamLeader("S")
	counts, last, err := kvstore.SubjectCounts(ctx, js, "S", "s.>", 0)
	if err != nil || last != 3 || counts["s.a"] != 3 {
		t.Fatalf("with a leader again: %v, last %d, %v; want s.a:3, last 3", counts, last, err)
	}
	if info, err := kvstore.LeaderInfo(ctx, stream); err != nil || info.State.LastSeq != 3 || info.Cluster.Leader == "" {
		t.Fatalf("LeaderInfo with a leader again: %+v, %v", info, err)
	}
	if s, err := kvstore.BindLeader(ctx, js, "S"); err != nil || s.CachedInfo().Cluster.Leader == "" {
		t.Fatalf("BindLeader with a leader again: %v", err)
	}
}

// unanswered: err is a deadline with no answer of the stream in it.
func unanswered(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, kvstore.ErrNoLeader)
}
