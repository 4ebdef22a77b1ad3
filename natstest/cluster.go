package natstest

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
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
//
// The route ports must be known before any node starts (every node lists
// every route), so they come from FreePorts, and another process may bind
// one before its node does. A node that cannot bind its route port fails
// to start; Cluster then stops the nodes already started and starts the
// whole cluster again on fresh ports and fresh stores, a few times. Each
// cluster has a name of its own, so that a route that reached another
// test's cluster in the meantime is refused rather than joined.
func Cluster(t testing.TB, n int, opts ...Option) *JSCluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("natstest: a cluster needs at least one node, got %d", n)
	}
	set := collect(opts)
	logger := set.testLogger(t)
	c := &JSCluster{t: t}
	name := fmt.Sprintf("jetflow-test-%08x", rand.Uint32())
	for attempt := 1; ; attempt++ {
		servers, err := startCluster(t, n, name, set, logger)
		if err == nil {
			c.Servers = servers
			break
		}
		if !bindFailure(err) || attempt == clusterAttempts {
			t.Fatalf("natstest: %v", err)
		}
		t.Logf("natstest: cluster %s, attempt %d of %d: %v; starting it again on fresh ports", name, attempt, clusterAttempts, err)
	}
	c.WaitReady()
	return c
}

// clusterAttempts bounds how often Cluster starts a cluster whose route
// port was taken.
const clusterAttempts = 5

// freePorts is FreePorts; tests replace it to hand out a taken port.
var freePorts = FreePorts

// startCluster creates and starts n nodes routed to each other on fresh
// route ports. On error it stops the nodes it started.
func startCluster(t testing.TB, n int, name string, set settings, logger *slog.Logger) ([]*embedded.Server, error) {
	t.Helper()
	ports, err := freePorts(n)
	if err != nil {
		return nil, err
	}
	routes := make([]string, n)
	for i, p := range ports {
		routes[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	servers := make([]*embedded.Server, 0, n)
	for i := range n {
		cfg := embedded.Config{
			Listen:     "127.0.0.1:-1",
			ServerName: fmt.Sprintf("n%d", i),
			Logger:     logger,
			Cluster: &embedded.ClusterConfig{
				Name:   name,
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
			return nil, err
		}
		servers = append(servers, s)
	}
	// After the stores' t.TempDir: cleanups run last first, and a store
	// must outlive its server. Stopping a stopped server does nothing.
	t.Cleanup(func() {
		for _, s := range servers {
			stop(t, s)
		}
	})
	for i, s := range servers {
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
		err := s.Start(ctx)
		cancel()
		if err != nil {
			for _, started := range servers[:i] {
				stop(t, started)
			}
			return nil, fmt.Errorf("start node %d (route %s): %w", i, routes[i], err)
		}
	}
	return servers, nil
}

// bindFailure reports a server that could not bind a port: nats-server
// reports it only as text (its fatal log line).
func bindFailure(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "address already in use") || strings.Contains(msg, "Only one usage of each socket address")
}

// FreePorts returns n distinct loopback ports, each free when picked, for
// servers to bind. It cannot hold them for the servers (nats-server binds
// its own listeners), so it narrows who can take one in between: the
// ports lie outside the kernel's ephemeral range, which no port-0 bind
// (every server started with a random port, in any process) and no
// outgoing connection is given, and this process never hands the same
// port out twice. Another process can still bind one on purpose before
// the server does; the server then fails to start, and a caller should
// start it again on fresh ports, as Cluster does.
func FreePorts(n int) ([]int, error) {
	lo, hi := reservable()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	handedOut.mu.Lock()
	defer handedOut.mu.Unlock()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries == 100*n+1000 {
			return nil, fmt.Errorf("natstest: no free loopback port in %d..%d after %d tries", lo, hi, tries)
		}
		addr := "127.0.0.1:0"
		if lo > 0 {
			p := lo + rand.IntN(hi-lo+1)
			if handedOut.ports[p] {
				continue
			}
			addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if lo > 0 {
				continue // taken; try another
			}
			return nil, fmt.Errorf("natstest: reserve a loopback port: %w", err)
		}
		ls = append(ls, l)
		p := l.Addr().(*net.TCPAddr).Port
		if handedOut.ports[p] {
			continue
		}
		handedOut.ports[p] = true
		ports = append(ports, p)
	}
	return ports, nil
}

// handedOut are the ports FreePorts returned in this process.
var handedOut = struct {
	mu    sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// reservable is the range FreePorts picks from: the ports from 10000 up
// to the kernel's ephemeral range (Linux: ip_local_port_range; elsewhere
// the IANA dynamic range, 49152 and up). It is 0, 0 when that range
// starts too low to leave room below it: FreePorts then asks the kernel
// for any free port.
func reservable() (lo, hi int) {
	first := 49152
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				first = v
			}
		}
	}
	const floor = 10000
	if first-floor < 1000 {
		return 0, 0
	}
	return floor, first - 1
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
