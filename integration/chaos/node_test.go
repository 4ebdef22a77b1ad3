package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/natstest"
)

// A NATS node process is configured through the environment.
const (
	nodeNameEnv   = "JETFLOW_CHAOS_NODE"
	nodeListenEnv = "JETFLOW_CHAOS_LISTEN"
	nodeRouteEnv  = "JETFLOW_CHAOS_ROUTE"
	nodeRoutesEnv = "JETFLOW_CHAOS_ROUTES"
	nodeDataEnv   = "JETFLOW_CHAOS_DATA"
)

// clusterName is the NATS cluster's name.
const clusterName = "chaos"

// natsNode is the main of a NATS node process: one member of the
// JetStream cluster, on fixed ports and a fixed store directory so that a
// restarted node rejoins as itself. It prints "ready" once it accepts
// clients and serves until SIGTERM.
func natsNode() int {
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	srv, err := embedded.Start(startCtx, embedded.Config{
		Listen:     os.Getenv(nodeListenEnv),
		DataDir:    os.Getenv(nodeDataEnv),
		ServerName: os.Getenv(nodeNameEnv),
		Logger:     log,
		Cluster: &embedded.ClusterConfig{
			Name:   clusterName,
			Listen: os.Getenv(nodeRouteEnv),
			Routes: strings.Split(os.Getenv(nodeRoutesEnv), ","),
		},
	})
	if err != nil {
		log.Error("nats node: start", "error", err)
		return 1
	}
	fmt.Println("ready", srv.ClientURL())
	<-ctx.Done()
	stopCtx, cancelStop := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelStop()
	if err := srv.Stop(stopCtx); err != nil {
		log.Error("nats node: stop", "error", err)
		return 1
	}
	return 0
}

// node is one NATS node as the harness sees it.
type node struct {
	*proc
	index int
	// host is the node's address: 127.0.0.1, or its own address inside
	// its network namespace.
	host                  string
	clientPort, routePort int
	// ns is the node's network namespace, "" on the host's loopback.
	ns string
}

func (n *node) url() string {
	return "nats://" + net.JoinHostPort(n.host, strconv.Itoa(n.clientPort))
}

func (n *node) route() string { return net.JoinHostPort(n.host, strconv.Itoa(n.routePort)) }

// newNodes lays out three nodes: on loopback with free ports chosen now,
// or one per network namespace of lab on the standard ports. Ports and
// store directories stay the same across restarts.
func newNodes(dir string, lab *netlab) ([]*node, error) {
	const n = 3
	nodes := make([]*node, n)
	var ports []int
	if lab == nil {
		var err error
		if ports, err = natstest.FreePorts(2 * n); err != nil {
			return nil, err
		}
	}
	for i := range n {
		nd := &node{index: i, host: "127.0.0.1"}
		if lab != nil {
			nd.host, nd.clientPort, nd.routePort, nd.ns = lab.ip(i), 4222, 6222, lab.namespace(i)
		} else {
			nd.clientPort, nd.routePort = ports[2*i], ports[2*i+1]
		}
		nodes[i] = nd
	}
	routes := make([]string, n)
	for i, nd := range nodes {
		routes[i] = nd.route()
	}
	for i, nd := range nodes {
		name := fmt.Sprintf("n%d", i+1)
		argv := []string{os.Args[0], "-test.run=^$"}
		if nd.ns != "" {
			argv = append([]string{"ip", "netns", "exec", nd.ns}, argv...)
		}
		nd.proc = &proc{
			kind: kindNATS, name: name, argv: argv,
			env: []string{
				roleEnv + "=" + roleNATS,
				nodeNameEnv + "=" + name,
				nodeListenEnv + "=" + net.JoinHostPort(nd.host, strconv.Itoa(nd.clientPort)),
				nodeRouteEnv + "=" + nd.route(),
				nodeRoutesEnv + "=" + strings.Join(routes, ","),
				nodeDataEnv + "=" + filepath.Join(dir, name),
			},
			isReady: func(line string) bool { return strings.HasPrefix(line, "ready") },
			logPath: filepath.Join(dir, name+".log"),
		}
	}
	return nodes, nil
}
