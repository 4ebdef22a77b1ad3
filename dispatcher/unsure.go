package dispatcher

import (
	"sync"
	"sync/atomic"
)

// unsureMax bounds the steps unsureSaves remembers: past it, a count
// may be missed (only a metric), never taken twice.
const unsureMax = 4096

// unsureSaves remembers the steps whose save failed without a verdict (a
// timeout: the server may have stored it) and what they would have
// counted. When the input's redelivery meets it applied, the save went
// through and the counts are taken then; when it applies again, the save
// path counts and the entry goes.
type unsureSaves struct {
	mu sync.Mutex
	m  map[unsureKey]unsureCounts
	// n is len(m), read without mu: every step that saves calls take,
	// and almost always nothing is remembered.
	n atomic.Int32
}

type unsureKey struct {
	run string
	seq uint64
}

// unsureCounts is what the step would have counted: a run started (of
// workflow at revision), and the status it settled in ("" when it did
// not).
type unsureCounts struct {
	started            bool
	workflow, revision string
	settled            string
}

func (u *unsureSaves) put(run string, seq uint64, c unsureCounts) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = make(map[unsureKey]unsureCounts)
	}
	if len(u.m) < unsureMax {
		u.m[unsureKey{run, seq}] = c
		u.n.Store(int32(len(u.m)))
	}
}

// take removes and returns the entry of the input at seq of run.
func (u *unsureSaves) take(run string, seq uint64) (unsureCounts, bool) {
	if u.n.Load() == 0 {
		return unsureCounts{}, false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	c, ok := u.m[unsureKey{run, seq}]
	if ok {
		delete(u.m, unsureKey{run, seq})
		u.n.Store(int32(len(u.m)))
	}
	return c, ok
}
