package natstest

import (
	"net"
	"strconv"
	"testing"
)

// FreePorts hands out distinct ports outside the ephemeral range, each
// bindable, and never the same one twice in a process.
func TestFreePorts(t *testing.T) {
	t.Parallel()
	lo, hi := reservable()
	seen := map[int]bool{}
	for range 3 {
		ports, err := FreePorts(4)
		if err != nil {
			t.Fatal(err)
		}
		if len(ports) != 4 {
			t.Fatalf("FreePorts(4) = %v", ports)
		}
		for _, p := range ports {
			if seen[p] {
				t.Errorf("port %d handed out twice", p)
			}
			seen[p] = true
			if lo > 0 && (p < lo || p > hi) {
				t.Errorf("port %d outside %d..%d", p, lo, hi)
			}
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				t.Errorf("port %d is not free: %v", p, err)
				continue
			}
			_ = l.Close()
		}
	}
}

// A route port taken before its node binds it makes Cluster start the
// whole cluster again on fresh ports. Not parallel: it replaces
// freePorts, which parallel tests read.
func TestClusterStartsAgainWhenARoutePortIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	port := taken.Addr().(*net.TCPAddr).Port
	calls := 0
	freePorts = func(n int) ([]int, error) {
		calls++
		ports, err := FreePorts(n)
		if err == nil && calls == 1 {
			ports[n-1] = port // the last node's, so that the others start first
		}
		return ports, err
	}
	t.Cleanup(func() { freePorts = FreePorts })
	c := Cluster(t, 3, WithMemoryStore())
	if calls != 2 {
		t.Errorf("ports picked %d times, want 2", calls)
	}
	for _, s := range c.Servers {
		if _, p, _ := net.SplitHostPort(s.ClusterAddr()); p == strconv.Itoa(port) {
			t.Errorf("node %s routes on the taken port %d", s.Name(), port)
		}
	}
	if c.Leader() == nil {
		t.Error("no meta leader")
	}
}
