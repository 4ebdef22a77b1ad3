package embedded_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/embedded"
)

func skipWithoutFlock(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" || runtime.GOOS == "aix" {
		t.Skip("no flock: the data directory is not locked on " + runtime.GOOS)
	}
}

// hostPort is a client URL without its scheme, as the lock file has it.
func hostPort(url string) string { return strings.TrimPrefix(url, "nats://") }

// wantInUse checks that err refuses dir on behalf of pid serving nats.
func wantInUse(t *testing.T, err error, dir string, pid int, nats string) {
	t.Helper()
	var inUse *embedded.DataDirInUseError
	if !errors.Is(err, embedded.ErrDataDirInUse) || !errors.As(err, &inUse) {
		t.Fatalf("err = %v, want a *DataDirInUseError", err)
	}
	if inUse.Dir != dir || inUse.PID != pid || inUse.NATS != nats {
		t.Errorf("in use by %+v, want dir %s, pid %d, nats %s", inUse, dir, pid, nats)
	}
	for _, want := range []string{"data directory " + dir + " is in use by jetflow pid " + fmt.Sprint(pid), "nats " + nats, "stop it or use another data directory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestSecondServerOnDataDirIsRefusedUntilTheFirstStops(t *testing.T) {
	t.Parallel()
	skipWithoutFlock(t)
	ctx := testCtx(t)
	dir := t.TempDir()
	first := start(t, embedded.Config{Listen: "127.0.0.1:-1", DataDir: dir, LockNote: "http 127.0.0.1:7070"})

	second, err := embedded.New(embedded.Config{Listen: "127.0.0.1:-1", DataDir: dir, ServerName: "second", Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = second.Stop(ctx) })
	began := time.Now()
	err = second.Start(ctx)
	wantInUse(t, err, dir, os.Getpid(), hostPort(first.ClientURL()))
	if !strings.Contains(err.Error(), "(nats "+hostPort(first.ClientURL())+", http 127.0.0.1:7070)") {
		t.Errorf("error does not quote the LockNote: %v", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("took %s to refuse", d)
	}
	if second.Running() {
		t.Fatal("the refused server runs")
	}
	wantInUse(t, embedded.CheckDataDir(ctx, dir), dir, os.Getpid(), hostPort(first.ClientURL()))

	if err := first.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := embedded.CheckDataDir(ctx, dir); err != nil {
		t.Fatalf("CheckDataDir after Stop: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, embedded.LockFileName)); err != nil || len(b) != 0 {
		t.Errorf("lock file after Stop = %q, %v; want it empty", b, err)
	}
	if err := second.Start(ctx); err != nil {
		t.Fatalf("Start after the first stopped: %v", err)
	}
	// The first one, restarted, is now the one refused.
	wantInUse(t, first.Start(ctx), dir, os.Getpid(), hostPort(second.ClientURL()))
}

func TestServerWithoutListenRecordsInProcessOnly(t *testing.T) {
	t.Parallel()
	skipWithoutFlock(t)
	dir := t.TempDir()
	start(t, embedded.Config{NoListen: true, DataDir: dir})
	wantInUse(t, embedded.CheckDataDir(testCtx(t), dir), dir, os.Getpid(), "in-process only")
}

func TestServerWithoutDataDirTakesNoLock(t *testing.T) {
	t.Parallel()
	s := start(t, embedded.Config{NoListen: true})
	if _, err := os.Stat(filepath.Join(s.NATS().StoreDir(), embedded.LockFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a temporary store has a lock file: %v", err)
	}
}

func TestCheckDataDirOfAFreshDirectory(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	for name, dir := range map[string]string{"missing": filepath.Join(t.TempDir(), "none"), "empty": t.TempDir()} {
		if err := embedded.CheckDataDir(ctx, dir); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// helperDirEnv makes the test binary, re-executed, the holder of a data
// directory (TestHelperHoldsDataDir).
const helperDirEnv = "JETFLOW_EMBEDDED_TEST_HOLD_DIR"

// TestHelperHoldsDataDir is no test: run by TestKilledHolderDoesNotBlockTheNextStart
// in a child process, it serves the directory, prints its address and
// runs until killed or its standard input closes.
func TestHelperHoldsDataDir(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		return
	}
	s := start(t, embedded.Config{Listen: "127.0.0.1:-1", DataDir: dir})
	fmt.Printf("serving %s\n", hostPort(s.ClientURL()))
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// A SIGKILLed server leaves its lock file behind but not its lock: the
// kernel drops it with the process.
func TestKilledHolderDoesNotBlockTheNextStart(t *testing.T) {
	t.Parallel()
	skipWithoutFlock(t)
	ctx := testCtx(t)
	dir := t.TempDir()

	child := exec.Command(os.Args[0], "-test.run=^TestHelperHoldsDataDir$", "-test.count=1")
	child.Env = append(os.Environ(), helperDirEnv+"="+dir)
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close() }()
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{}) // closed once waitErr holds how the holder ended
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "serving "); ok {
				lines <- addr
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		waitErr = child.Wait()
		close(exited)
	}()
	var addr string
	select {
	case addr = <-lines:
	case <-exited:
		t.Fatalf("holder exited before serving: %v\n%s", waitErr, stderr.String())
	case <-time.After(30 * time.Second):
		_ = child.Process.Kill()
		<-exited
		t.Fatalf("holder not serving after 30s:\n%s", stderr.String())
	}

	s, err := embedded.New(embedded.Config{Listen: "127.0.0.1:-1", DataDir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(ctx) })
	wantInUse(t, s.Start(ctx), dir, child.Process.Pid, addr)

	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("holder still running 30s after SIGKILL")
	}
	if b, err := os.ReadFile(filepath.Join(dir, embedded.LockFileName)); err != nil || !strings.Contains(string(b), fmt.Sprint(child.Process.Pid)) {
		t.Errorf("lock file of the killed holder = %q, %v; want its record left behind", b, err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start after the holder was killed: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, embedded.LockFileName))
	if err != nil || !strings.Contains(string(b), fmt.Sprintf(`"pid":%d,`, os.Getpid())) {
		t.Errorf("lock file of the new holder = %q, %v", b, err)
	}
}
