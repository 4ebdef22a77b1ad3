package runindex

import (
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/jetflow/jetflow/wire"
)

// checkBuild makes Build compare its brief reading with the whole one.
var checkBuild atomic.Bool

// VerifyBuild makes every later Build in this process that reads a record
// briefly build its entry from the whole decoded run too, and panic when
// the two differ. Test binaries call it from TestMain, so that every
// record their indexers see is checked.
func VerifyBuild() { checkBuild.Store(true) }

// verifyBuilt panics unless buildWhole gives e and err for the record.
func verifyBuilt(runID string, data []byte, rev uint64, updated time.Time, search SearchFunc, e *wire.IndexEntry, err error) {
	if _, ok := errors.AsType[*searchError](err); ok {
		return // the registry did not answer; the whole decode would ask it again
	}
	want, werr := buildWhole(runID, data, rev, updated, search)
	if _, ok := errors.AsType[*searchError](werr); ok {
		return // nor did it answer the whole decode
	}
	if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() || !reflect.DeepEqual(e, want) {
		panic(fmt.Sprintf("runindex: run %s: the brief entry %+v (%v) differs from the whole record's %+v (%v); record %s", runID, e, err, want, werr, data))
	}
}
