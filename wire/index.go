package wire

// StatusRemoved is the status the run index gives a run that retention
// removed (its record is a tombstone) until the tombstone expires. It is
// not a status a run announces.
const StatusRemoved = "removed"

// IndexEntry is the body of a run's entry in the run index, on its entry
// subject and on each of its search attribute subjects. Field names are
// short: the index holds one or more per run.
type IndexEntry struct {
	Run      string `json:"r"`
	Workflow string `json:"w"`
	Revision string `json:"v"`
	// Status is the run's status (StatusOf), or StatusRemoved.
	Status string `json:"s"`
	// State is the status's state, as Status.State.
	State string `json:"t,omitempty"`
	// Active are the ids of the run's active states (for --state), when
	// they are not State alone.
	Active []string `json:"a,omitempty"`
	// Time is the status's logical time, Unix milliseconds.
	Time float64 `json:"m,omitempty"`
	// StartSeq is the input stream sequence of the run's start (0 when
	// the record does not say).
	StartSeq uint64 `json:"q,omitempty"`
	// Updated is when the record was written (server time), Unix
	// nanoseconds.
	Updated int64 `json:"u"`
	// RecordRev is the run bucket revision the entry was made from.
	RecordRev uint64 `json:"x"`
	// Search holds the run's search attributes (name to value).
	Search map[string]string `json:"f,omitempty"`
	// Expires is, for a removed run's entry, when it expires by its own
	// TTL with the tombstone (Unix milliseconds); 0 when it is purged.
	Expires int64 `json:"e,omitempty"`
}

// IndexHead is the body of a run's head in the run index: the record
// revision its entries were made from and what names their subjects
// (workflow, status, start sequence, search attributes; none for a
// deleted run).
type IndexHead struct {
	RecordRev uint64            `json:"x"`
	Workflow  string            `json:"w,omitempty"`
	Status    string            `json:"s,omitempty"`
	StartSeq  uint64            `json:"q,omitempty"`
	Search    map[string]string `json:"f,omitempty"`
	// Shape is the index shape its entries' subjects have
	// (subjects.IndexShape); 0 for shape 1, before it was written.
	Shape int `json:"k,omitempty"`
	// Expires is IndexEntry.Expires of its entries: a removed run's
	// entries that expire on their own, which the deletion that follows
	// the tombstone's expiry need not purge.
	Expires int64 `json:"e,omitempty"`
}

// IndexShapeMark is the body of the run index's shape mark: the shape
// (subjects.IndexShape) its entries have. An indexer that finds another
// shape, or none on an index that holds entries, rebuilds the index.
type IndexShapeMark struct {
	Shape int `json:"shape"`
}

// IndexOff is the body of the run index's off mark: a dispatcher started
// with its index off left it, and the next indexer to start removes it.
// While it stands, listings read the run records instead of the index.
type IndexOff struct {
	// Since is when the dispatcher that left it started (RFC 3339).
	Since string `json:"since"`
	// By names that dispatcher (its host name, for the record).
	By string `json:"by,omitempty"`
}
