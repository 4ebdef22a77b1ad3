// Package embedded runs a nats-server with JetStream inside the jetflow
// process, so that a single binary is a complete deployment. It owns the
// server's lifecycle (Start, Stop, restart on the same store), routes the
// server's log to slog and hands out client connections, in process or
// over loopback TCP.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNotRunning is returned by InProcessConn (and so by reconnect attempts
// of in-process clients) while the server is stopped.
var ErrNotRunning = errors.New("embedded nats-server is not running")

// Server is an embedded nats-server. Its lifecycle follows jetflow's
// contract: Start returns start-up errors and leaves the server running in
// the background, Stop shuts it down, Stop is safe twice and before Start,
// and Start after Stop restarts it on the same store and ports.
type Server struct {
	cfg Config

	mu         sync.Mutex
	srv        *server.Server // nil while stopped
	tmpDir     string         // private store of a server without DataDir
	lock       *dirLock       // held on DataDir while running
	clientPort int            // pinned after the first start
	routePort  int
	lastURL    string
}

// New validates cfg and returns a stopped server.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg}, nil
}

// Start is New followed by Server.Start.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Start starts the server and returns once it accepts clients with
// JetStream enabled (in a cluster, JetStream's meta leader may still be
// being elected). Starting a running server does nothing.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return nil
	}
	name := s.cfg.ServerName
	storeDir := s.cfg.DataDir
	tmpDir := ""
	if storeDir == "" {
		dir, err := os.MkdirTemp("", "jetflow-nats-*")
		if err != nil {
			return fmt.Errorf("embedded: create a temporary store for nats-server %q: %w", name, err)
		}
		storeDir, tmpDir = dir, dir
	} else if err := os.MkdirAll(storeDir, 0o750); err != nil {
		return fmt.Errorf("embedded: create store directory %q of nats-server %q: %w", storeDir, name, err)
	}
	var lock *dirLock
	if tmpDir == "" {
		// Before the server opens the store: a second server restoring
		// the same store would corrupt it.
		var err error
		if lock, err = lockDataDir(ctx, storeDir, s.lockRecord(nil)); err != nil {
			return err
		}
	}
	fail := func(err error) error {
		if lock != nil {
			_ = lock.release()
		}
		if tmpDir != "" {
			_ = os.RemoveAll(tmpDir)
		}
		return err
	}

	ns, err := server.NewServer(s.cfg.options(storeDir, s.clientPort, s.routePort))
	if err != nil {
		return fail(fmt.Errorf("embedded: configure nats-server %q: %w", name, err))
	}
	logger := newSlogAdapter(s.cfg.Logger, name)
	ns.SetLoggerV2(logger, s.cfg.Logger.Enabled(ctx, slog.LevelDebug), false, false)
	ns.Start()

	if err := waitReady(ctx, ns, logger, s.cfg.ReadyTimeout); err != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		return fail(fmt.Errorf("embedded: nats-server %q (client %s, store %s) did not start: %w", name, s.describeListen(), storeDir, err))
	}
	if !ns.JetStreamEnabled() {
		ns.Shutdown()
		ns.WaitForShutdown()
		return fail(fmt.Errorf("embedded: nats-server %q started without JetStream (store %s): %s", name, storeDir, logger.lastFatal()))
	}

	if a, ok := ns.Addr().(*net.TCPAddr); ok && a != nil {
		s.clientPort = a.Port
	}
	if a := ns.ClusterAddr(); a != nil {
		s.routePort = a.Port
	}
	s.srv, s.tmpDir, s.lock = ns, tmpDir, lock
	if js := ns.JetStreamConfig(); js != nil && s.cfg.DataDir != "" {
		// The server does not log it, and it decides what a power loss takes.
		s.cfg.Logger.Info("embedded: file store durability", slog.String("server_name", name), slog.String("sync", syncDescription(js.SyncAlways, js.SyncInterval)))
	}
	if !s.cfg.NoListen {
		s.lastURL = ns.ClientURL()
	}
	if lock != nil {
		// The bound address replaces the configured one (port -1).
		if err := lock.write(s.lockRecord(ns)); err != nil {
			s.cfg.Logger.Warn("the lock file keeps the configured address", slog.String("server_name", name), slog.Any("error", err))
		}
	}
	return nil
}

// lockRecord is what the lock file says about this server: its client
// address once ns runs, the configured one before.
func (s *Server) lockRecord(ns *server.Server) lockRecord {
	rec := lockRecord{PID: os.Getpid(), NATS: s.describeListen(), Note: s.cfg.LockNote}
	if ns != nil && !s.cfg.NoListen {
		if a := ns.Addr(); a != nil {
			rec.NATS = a.String()
		}
	}
	return rec
}

func (s *Server) describeListen() string {
	if s.cfg.NoListen {
		return "in-process only"
	}
	return s.cfg.Listen
}

// waitReady waits until ns accepts clients, a fatal start-up error is
// logged, ctx ends or the timeout passes.
func waitReady(ctx context.Context, ns *server.Server, logger *slogAdapter, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	for {
		// ReadyForConnections polls in 25ms steps; short slices keep the
		// loop responsive to ctx and to fatal errors such as a busy port.
		if ns.ReadyForConnections(50 * time.Millisecond) {
			return nil
		}
		if msg := logger.lastFatal(); msg != "" {
			return errors.New(msg)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready for connections after %s", timeout)
		}
	}
}

// Stop shuts the server down and waits for it, or for ctx. Stopping a
// stopped (or never started) server does nothing. A server without
// DataDir loses its data. The data directory's lock is released once the
// shutdown has finished; until then (after a Stop that ran out of ctx) a
// Start on the same directory is refused.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns, tmpDir, lock := s.srv, s.tmpDir, s.lock
	if ns == nil {
		return nil
	}
	s.srv, s.tmpDir, s.lock = nil, "", nil
	done := make(chan struct{})
	go func() {
		defer close(done)
		ns.Shutdown()
		ns.WaitForShutdown()
		if lock != nil {
			if err := lock.release(); err != nil {
				s.cfg.Logger.Warn("releasing the data directory", slog.String("server_name", s.cfg.ServerName), slog.Any("error", err))
			}
		}
		if tmpDir != "" {
			_ = os.RemoveAll(tmpDir)
		}
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("embedded: stop nats-server %q: shutdown still running: %w", s.cfg.ServerName, ctx.Err())
	}
}

// Running reports whether the server is started.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv != nil
}

// ClientURL is the server's client URL (nats://host:port), also while it
// is stopped after having run; "" with NoListen or before the first start.
func (s *Server) ClientURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastURL
}

// ClusterAddr is the route address (host:port) of a clustered server once
// it has started, "" otherwise.
func (s *Server) ClusterAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.Cluster == nil || s.routePort == 0 {
		return ""
	}
	host, _, _ := splitListen(s.cfg.Cluster.Listen)
	return net.JoinHostPort(host, fmt.Sprint(s.routePort))
}

// Name is the server's name.
func (s *Server) Name() string { return s.cfg.ServerName }

// DataDir is the configured store directory ("" for a memory server).
func (s *Server) DataDir() string { return s.cfg.DataDir }

// Storage is the storage jetflow's streams should use on this server:
// file storage with a DataDir, memory storage without.
func (s *Server) Storage() jetstream.StorageType {
	if s.cfg.DataDir == "" {
		return jetstream.MemoryStorage
	}
	return jetstream.FileStorage
}

// NATS returns the running nats-server, or nil while stopped. It is meant
// for tests and monitoring (leadership, routes); prefer the methods above.
func (s *Server) NATS() *server.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv
}

// InProcessConn opens a client connection without TCP. It implements
// nats.InProcessConnProvider for the running server of the moment, so
// in-process clients reconnect after a restart.
func (s *Server) InProcessConn() (net.Conn, error) {
	s.mu.Lock()
	ns := s.srv
	s.mu.Unlock()
	if ns == nil {
		return nil, fmt.Errorf("embedded: nats-server %q: %w", s.cfg.ServerName, ErrNotRunning)
	}
	return ns.InProcessConn()
}

// Connect opens an in-process client connection (no TCP, works with
// NoListen, about a third faster than loopback TCP). opts are applied
// after the in-process option. To connect over TCP use
// nats.Connect(s.ClientURL(), ...).
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	all := append([]nats.Option{nats.InProcessServer(s), nats.Name("jetflow-" + s.cfg.ServerName)}, opts...)
	nc, err := nats.Connect("", all...)
	if err != nil {
		return nil, fmt.Errorf("embedded: connect in process to nats-server %q: %w", s.cfg.ServerName, err)
	}
	return nc, nil
}

// syncDescription says when the file store fsyncs, for the log.
func syncDescription(always bool, interval time.Duration) string {
	if always {
		return "every write (an OS crash or power loss loses no acknowledged write)"
	}
	return "every " + interval.String() + " (an OS crash or power loss can lose the writes acknowledged in the last " + interval.String() + ")"
}
