package otherlang

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/provision"
)

// repoRoot is the repository's root directory (this file is two levels
// below it).
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test's source file")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// readRepoFile reads a file given relative to the repository root.
func readRepoFile(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startFleet starts an embedded server on a random loopback port with a
// dispatcher, stopped when the test ends. Deploys create task consumers
// with policy.
func startFleet(t *testing.T, ctx context.Context, policy provision.TaskPolicy) *fleet.Fleet {
	t.Helper()
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded:   embedded.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir(), Logger: testLogger(t)},
		Dispatcher: &dispatcher.Config{},
		TaskPolicy: policy,
		Logger:     testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := f.Stop(ctx); err != nil {
			t.Errorf("stopping the fleet: %v", err)
		}
	})
	return f
}

// testLogger writes warnings and errors to t.Log until the test ends.
func testLogger(t *testing.T) *slog.Logger {
	w := &logWriter{t: t}
	t.Cleanup(w.close)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type logWriter struct {
	mu     sync.Mutex
	t      *testing.T
	closed bool
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *logWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}
