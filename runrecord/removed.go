package runrecord

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jetflow/jetflow/wire"
)

// ErrRemoved is wrapped by Decode's error when the run bucket holds a
// tombstone: the run was removed by retention. errors.As to a
// *RemovedError gives the tombstone.
var ErrRemoved = errors.New("run removed by retention")

// RemovedError is Decode's error for a tombstone.
type RemovedError struct {
	Removed wire.Removed
}

func (e *RemovedError) Error() string {
	r := e.Removed
	msg := fmt.Sprintf("run %s removed by retention at %s (it settled %s at %s)", r.Run, msTime(r.At), r.Status, msTime(r.Settled))
	if r.HistoryKept {
		msg += "; its history is kept by an input stream that denies purges"
	}
	return msg + fmt.Sprintf("; the id may be used again after %s", msTime(r.Until))
}

// Is makes errors.Is(err, ErrRemoved) hold.
func (e *RemovedError) Is(target error) bool { return target == ErrRemoved }

func msTime(ms float64) string {
	return time.UnixMilli(int64(ms)).UTC().Format(time.RFC3339Nano)
}

// tombstoneKey opens the stored form of a tombstone, which no record's
// encoding starts with (a record starts with its state).
var tombstoneKey = []byte(`{"removed":`)

type tombstone struct {
	Removed wire.Removed `json:"removed"`
}

// EncodeRemoved is the stored form of a tombstone.
func EncodeRemoved(r wire.Removed) ([]byte, error) {
	return json.Marshal(tombstone{Removed: r})
}

// decodeRemoved returns the tombstone data holds, if it is one.
func decodeRemoved(data []byte) (*RemovedError, bool) {
	if !bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), tombstoneKey) {
		return nil, false
	}
	var t tombstone
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, false
	}
	return &RemovedError{Removed: t.Removed}, true
}
