package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LockFileName is the file inside a data directory that the server using
// the directory holds locked (flock) from Start to Stop. It names the
// holder's pid and addresses; the kernel drops the lock when the process
// dies, so a killed server leaves nothing that blocks the next start.
const LockFileName = "jetflow.lock"

// ErrDataDirInUse is matched (errors.Is) by the error of a Start refused
// because another server holds its data directory; that error is a
// *DataDirInUseError naming the holder.
var ErrDataDirInUse = errors.New("data directory is in use by another jetflow server")

// DataDirInUseError says which process holds a data directory.
type DataDirInUseError struct {
	// Dir is the data directory.
	Dir string
	// PID is the holder's process id, 0 when its lock file names none
	// (yet).
	PID int
	// NATS is the holder's client address as its lock file records it:
	// host:port once it runs, the configured address while it starts,
	// "in-process only" without a client port; "" when unknown.
	NATS string
	// Note is the holder's Config.LockNote, such as "http 127.0.0.1:7070".
	Note string
	// Hint says what to do; a program may word it for its own settings.
	// Default "stop it or use another data directory".
	Hint string
}

// Holder describes the holding process: "jetflow pid 1234 (nats
// 127.0.0.1:4222, http 127.0.0.1:7070)".
func (e *DataDirInUseError) Holder() string {
	who := "another jetflow process"
	if e.PID > 0 {
		who = fmt.Sprintf("jetflow pid %d", e.PID)
	}
	var about []string
	if e.NATS != "" {
		about = append(about, "nats "+e.NATS)
	}
	if e.Note != "" {
		about = append(about, e.Note)
	}
	if len(about) == 0 {
		return who
	}
	return who + " (" + strings.Join(about, ", ") + ")"
}

func (e *DataDirInUseError) Error() string {
	hint := e.Hint
	if hint == "" {
		hint = "stop it or use another data directory"
	}
	return fmt.Sprintf("data directory %s is in use by %s; %s", e.Dir, e.Holder(), hint)
}

// Is makes errors.Is(err, ErrDataDirInUse) true.
func (e *DataDirInUseError) Is(target error) bool { return target == ErrDataDirInUse }

// lockRecord is the content of a lock file, one JSON object.
type lockRecord struct {
	PID  int    `json:"pid"`
	NATS string `json:"nats,omitempty"`
	Note string `json:"note,omitempty"`
}

// dirLock is a held lock on a data directory.
type dirLock struct {
	dir string
	f   *os.File
}

// holderWait bounds how long a refused start waits for the holder's
// record: the holder writes it just after taking the lock.
const holderWait = 250 * time.Millisecond

// lockDataDir takes the lock of dir, which must exist, and records rec in
// it. A lock held by another process (or by another Server of this one)
// is a *DataDirInUseError.
func lockDataDir(ctx context.Context, dir string, rec lockRecord) (*dirLock, error) {
	path := filepath.Join(dir, LockFileName)
	// No O_TRUNC: the file may be a live holder's record.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded: open the lock file of data directory %s: %w", dir, err)
	}
	held, err := tryLock(f)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("embedded: lock %s: %w (the data directory must be on a file system with flock)", path, err)
	}
	if !held {
		defer func() { _ = f.Close() }()
		return nil, inUse(ctx, dir, path)
	}
	l := &dirLock{dir: dir, f: f}
	if err := l.write(rec); err != nil {
		_ = l.release()
		return nil, err
	}
	return l, nil
}

// CheckDataDir reports whether another server holds dir: nil when none
// does (or dir has no lock file), a *DataDirInUseError when one does. It
// keeps no lock (Start takes it), so it only lets a program refuse early,
// before it binds other ports.
func CheckDataDir(ctx context.Context, dir string) error {
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("embedded: open the lock file of data directory %s: %w", dir, err)
	}
	defer func() { _ = f.Close() }() // only locked and unlocked: nothing to lose
	held, err := tryLock(f)
	if err != nil {
		return fmt.Errorf("embedded: lock %s: %w (the data directory must be on a file system with flock)", path, err)
	}
	if held {
		return unlock(f)
	}
	return inUse(ctx, dir, path)
}

// inUse reads the holder's record, waiting up to holderWait for a holder
// that has taken the lock but not written its record yet.
func inUse(ctx context.Context, dir, path string) error {
	e := &DataDirInUseError{Dir: dir}
	deadline := time.Now().Add(holderWait)
	for {
		var rec lockRecord
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &rec) == nil && rec.PID > 0 {
			e.PID, e.NATS, e.Note = rec.PID, rec.NATS, rec.Note
			return e
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return e
		}
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// write replaces the record in the held lock file.
func (l *dirLock) write(rec lockRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("embedded: encode the lock record of data directory %s: %w", l.dir, err)
	}
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("embedded: write the lock file of data directory %s: %w", l.dir, err)
	}
	if _, err := l.f.WriteAt(append(b, '\n'), 0); err != nil {
		return fmt.Errorf("embedded: write the lock file of data directory %s: %w", l.dir, err)
	}
	return nil
}

// release empties the record, so that no reader takes a stopped server's
// for a live one's, and drops the lock. The file stays: removing it would
// let two processes lock two different files of the same name.
func (l *dirLock) release() error {
	err := l.f.Truncate(0)
	err = errors.Join(err, unlock(l.f), l.f.Close())
	if err != nil {
		return fmt.Errorf("embedded: release the lock of data directory %s: %w", l.dir, err)
	}
	return nil
}
