package natstest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/embedded"
)

// globalAccount is nats-server's account for clients without accounts.
const globalAccount = "$G"

// JSCluster is a JetStream cluster of embedded servers in this process,
// each with its own name, store directory and route port, all routed to
// each other.
type JSCluster struct {
	t testing.TB
	// Servers are the nodes, n0, n1, ...; a stopped node stays in place.
	Servers []*embedded.Server
}

// Cluster starts n servers as one JetStream cluster and waits until it has
// a meta leader and every node is current. Each node has a t.TempDir()
// store (unless WithMemoryStore), a random client port and a route port
// picked now; ports and stores are kept across restarts.
func Cluster(t testing.TB, n int, opts ...Option) *JSCluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("natstest: a cluster needs at least one node, got %d", n)
	}
	set := collect(opts)
	logger := set.testLogger(t)
	ports, err := FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	routes := make([]string, n)
	for i, p := range ports {
		routes[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	c := &JSCluster{t: t}
	for i := range n {
		cfg := embedded.Config{
			Listen:     "127.0.0.1:-1",
			ServerName: fmt.Sprintf("n%d", i),
			Logger:     logger,
			Cluster: &embedded.ClusterConfig{
				Name:   "jetflow-test",
				Listen: routes[i],
				Routes: routes,
			},
		}
		if !set.memory {
			cfg.DataDir = t.TempDir()
		}
		if set.edit != nil {
			set.edit(&cfg)
		}
		s, err := embedded.New(cfg)
		if err != nil {
			t.Fatalf("natstest: %v", err)
		}
		c.Servers = append(c.Servers, s)
	}
	t.Cleanup(func() {
		for _, s := range c.Servers {
			stop(t, s)
		}
	})
	for i := range c.Servers {
		c.Start(i)
	}
	c.WaitReady()
	return c
}

// FreePorts reserves n distinct free loopback ports and releases them
// for servers to bind. Another process could take one in between; on a
// test machine that is rare enough.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("natstest: reserve a loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// URLs is the comma-separated client URLs of every node.
func (c *JSCluster) URLs() string {
	urls := make([]string, 0, len(c.Servers))
	for _, s := range c.Servers {
		if u := s.ClientURL(); u != "" {
			urls = append(urls, u)
		}
	}
	return strings.Join(urls, ",")
}

// Connect opens a TCP connection to the cluster (any node, reconnecting
// to the others), closed when the test ends.
func (c *JSCluster) Connect(opts ...nats.Option) *nats.Conn {
	c.t.Helper()
	all := append([]nats.Option{nats.ReconnectWait(20 * time.Millisecond), nats.MaxReconnects(-1)}, opts...)
	nc, err := nats.Connect(c.URLs(), all...)
	if err != nil {
		c.t.Fatalf("natstest: connect to cluster %s: %v", c.URLs(), err)
	}
	c.t.Cleanup(nc.Close)
	return nc
}

// Stop stops node i.
func (c *JSCluster) Stop(i int) {
	c.t.Helper()
	stop(c.t, c.Servers[i])
}

// Start starts node i (again) on its store and ports.
func (c *JSCluster) Start(i int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := c.Servers[i].Start(ctx); err != nil {
		c.t.Fatalf("natstest: start node %d: %v", i, err)
	}
}

// Restart stops node i, starts it again and waits for the cluster.
func (c *JSCluster) Restart(i int) {
	c.t.Helper()
	c.Stop(i)
	c.Start(i)
	c.WaitReady()
}

// Leader is the node that leads JetStream's meta group, or nil.
func (c *JSCluster) Leader() *embedded.Server {
	for _, s := range c.Servers {
		if ns := s.NATS(); ns != nil && ns.JetStreamIsLeader() {
			return s
		}
	}
	return nil
}

// StreamLeader is the node leading stream (in the default account), or
// nil while it has none.
func (c *JSCluster) StreamLeader(stream string) *embedded.Server {
	for _, s := range c.Servers {
		if ns := s.NATS(); ns != nil && ns.JetStreamIsStreamLeader(globalAccount, stream) {
			return s
		}
	}
	return nil
}

// WaitReady waits until the running nodes have a meta leader that sees
// all of them and every one of them is current.
func (c *JSCluster) WaitReady() {
	c.t.Helper()
	WaitFor(c.t, StartTimeout, "cluster ready", func() error {
		running := 0
		for _, s := range c.Servers {
			if s.Running() {
				running++
			}
		}
		leader := c.Leader()
		if leader == nil {
			return fmt.Errorf("no meta leader among %d running nodes", running)
		}
		ns := leader.NATS()
		if ns == nil {
			return fmt.Errorf("meta leader %s stopped", leader.Name())
		}
		if peers := ns.JetStreamClusterPeers(); len(peers) != running {
			return fmt.Errorf("meta leader %s sees peers %v, want %d", leader.Name(), peers, running)
		}
		for _, s := range c.Servers {
			if ns := s.NATS(); ns != nil && !ns.JetStreamIsCurrent() {
				return fmt.Errorf("node %s is not current", s.Name())
			}
		}
		return nil
	})
}

// WaitStreamLeader waits until stream has a leader and returns it.
func (c *JSCluster) WaitStreamLeader(stream string) *embedded.Server {
	c.t.Helper()
	var leader *embedded.Server
	WaitFor(c.t, StartTimeout, "leader of stream "+stream, func() error {
		if leader = c.StreamLeader(stream); leader == nil {
			return fmt.Errorf("stream %s has no leader", stream)
		}
		return nil
	})
	return leader
}
