package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DefaultListen is the client address of a server that names none:
// loopback only, so that an embedded server is never reachable from the
// network unless its operator says so.
const DefaultListen = "127.0.0.1:4222"

// DefaultServerName names a server whose Config names none.
const DefaultServerName = "jetflow"

// DefaultReadyTimeout bounds how long Start waits for the server to accept
// clients when the context has no deadline.
const DefaultReadyTimeout = 10 * time.Second

// Config describes one embedded nats-server with JetStream.
type Config struct {
	// Listen is the client address, host:port. A port of -1 or 0 picks a
	// free port; an empty host means 127.0.0.1. A server restarted with
	// Start after Stop keeps the port it bound first, so that clients
	// reconnect. Default DefaultListen ("127.0.0.1:4222").
	Listen string
	// NoListen opens no client port at all: clients connect in process
	// only (Server.Connect). Default false.
	NoListen bool
	// DataDir is the JetStream store directory. Empty means no durable
	// store: a private temporary directory removed at Stop, and Storage
	// reports memory storage. From Start to Stop the server holds the
	// directory's lock file (LockFileName), so that a second server on it,
	// in this process or another, fails at Start with a
	// *DataDirInUseError before touching the store. Default "".
	DataDir string
	// LockNote is recorded in the data directory's lock file next to the
	// pid and the client address, and quoted by the error of a second
	// server refused on the directory: what else this process serves, such
	// as "http 127.0.0.1:7070". Default "".
	LockNote string
	// ServerName must differ between the nodes of a cluster.
	// Default DefaultServerName ("jetflow").
	ServerName string
	// MaxPayload is the largest message the server accepts, in bytes.
	// Default 0 (the server's default, 1 MiB).
	MaxPayload int32
	// MaxMemory caps JetStream memory storage, in bytes.
	// Default 0 (the server's default, 75% of system memory).
	MaxMemory int64
	// MaxStore caps JetStream file storage, in bytes.
	// Default 0 (the server's default, most of the free disk).
	MaxStore int64
	// SyncAlways fsyncs every write to the file store. Without it the store
	// syncs every two minutes, so a power loss (not a process crash) can
	// lose acknowledged writes on a single node. Default false.
	SyncAlways bool
	// SyncInterval, when positive, is how often the file store fsyncs what
	// it has written: a power loss or OS crash loses at most the writes
	// acknowledged in the last interval (plus the time one fsync takes),
	// a process crash none. It may not be combined with SyncAlways.
	// Default 0: the server's own interval, two minutes.
	SyncInterval time.Duration
	// Cluster joins this server to a cluster; nil runs it alone.
	// Default nil.
	Cluster *ClusterConfig
	// Logger receives the server's log: notices at Info, warnings at Warn,
	// errors and fatal errors at Error, debug lines at Debug (only when the
	// logger has Debug enabled). Default slog.Default().
	Logger *slog.Logger
	// ReadyTimeout bounds how long Start waits for the server when ctx has
	// no deadline. Default DefaultReadyTimeout (10s).
	ReadyTimeout time.Duration
	// Customize, when set, edits the server options last, for what this
	// Config does not cover (TLS, accounts, authorization). Default nil.
	Customize func(*server.Options)
}

// ClusterConfig joins an embedded server to a JetStream cluster.
type ClusterConfig struct {
	// Name is the cluster's name, the same on every node. Required.
	Name string
	// Listen is the route address, host:port. A port of -1 or 0 picks a
	// free port (kept across restarts); an empty host means 127.0.0.1.
	// Default "127.0.0.1:-1".
	Listen string
	// Routes are the other nodes' route addresses, "host:port" or
	// "nats-route://host:port". Listing this node too is harmless.
	Routes []string
}

// withDefaults returns a copy of c with every default filled in.
func (c Config) withDefaults() Config {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.ServerName == "" {
		c.ServerName = DefaultServerName
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
	if c.Cluster != nil {
		cl := *c.Cluster
		cl.Routes = append([]string(nil), cl.Routes...)
		if cl.Listen == "" {
			cl.Listen = "127.0.0.1:-1"
		}
		c.Cluster = &cl
	}
	return c
}

func (c Config) validate() error {
	if !c.NoListen {
		if _, _, err := splitListen(c.Listen); err != nil {
			return fmt.Errorf("embedded: Listen: %w", err)
		}
	}
	if c.SyncInterval < 0 {
		return fmt.Errorf("embedded: SyncInterval is %s: it must not be negative (0 means the server's default, two minutes)", c.SyncInterval)
	}
	if c.SyncInterval > 0 && c.SyncAlways {
		return errors.New("embedded: SyncAlways and SyncInterval are alternatives: SyncAlways fsyncs every write, SyncInterval every interval; set one")
	}
	if c.MaxPayload < 0 || c.MaxMemory < 0 || c.MaxStore < 0 {
		return errors.New("embedded: MaxPayload, MaxMemory and MaxStore must not be negative (0 means the server's default)")
	}
	if c.Cluster != nil {
		if c.Cluster.Name == "" {
			return errors.New("embedded: Cluster.Name is empty (every node of a cluster needs the same name)")
		}
		if _, _, err := splitListen(c.Cluster.Listen); err != nil {
			return fmt.Errorf("embedded: Cluster.Listen: %w", err)
		}
		for _, r := range c.Cluster.Routes {
			if _, err := routeURL(r); err != nil {
				return fmt.Errorf("embedded: Cluster.Routes: %w", err)
			}
		}
	}
	return nil
}

// splitListen parses host:port; an empty host is loopback and port 0 means
// random (the server itself would read 0 as its default port 4222).
func splitListen(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < -1 || port > 65535 {
		return "", 0, fmt.Errorf("%q has an invalid port (use 1-65535, or -1 for a free port)", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}

func routeURL(r string) (string, error) {
	if !strings.Contains(r, "://") {
		r = "nats-route://" + r
	}
	u := server.RoutesFromStr(r)
	if len(u) != 1 || u[0] == nil || u[0].Host == "" {
		return "", fmt.Errorf("route %q is not host:port or nats-route://host:port", r)
	}
	return r, nil
}

// options builds the server options. clientPort and routePort, when
// non-zero, pin the ports bound by an earlier start.
func (c Config) options(storeDir string, clientPort, routePort int) *server.Options {
	o := &server.Options{
		ServerName:         c.ServerName,
		JetStream:          true,
		StoreDir:           storeDir,
		JetStreamMaxMemory: c.MaxMemory,
		JetStreamMaxStore:  c.MaxStore,
		SyncAlways:         c.SyncAlways,
		SyncInterval:       c.SyncInterval,
		MaxPayload:         c.MaxPayload,
		DontListen:         c.NoListen,
		NoSigs:             true,
		NoLog:              true, // the slog adapter is installed instead
	}
	if !c.NoListen {
		host, port, _ := splitListen(c.Listen)
		if port == server.RANDOM_PORT && clientPort > 0 {
			port = clientPort
		}
		o.Host, o.Port = host, port
	}
	if c.Cluster != nil {
		host, port, _ := splitListen(c.Cluster.Listen)
		if port == server.RANDOM_PORT && routePort > 0 {
			port = routePort
		}
		o.Cluster = server.ClusterOpts{Name: c.Cluster.Name, Host: host, Port: port}
		var routes []string
		for _, r := range c.Cluster.Routes {
			u, _ := routeURL(r)
			routes = append(routes, u)
		}
		if len(routes) > 0 {
			o.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		}
	}
	if c.Customize != nil {
		c.Customize(o)
	}
	return o
}
