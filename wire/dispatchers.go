package wire

// DispatcherHeartbeat is what a dispatcher of a partitioned deployment
// announces on subjects.Names.DispatcherHeartbeats, about once a
// second, and once more when it leaves: the dispatchers it hears share
// the partitions among themselves (dispatcher/partitions.go). Nothing
// else acts on it; operators and the bench read which dispatcher owns
// which partitions.
type DispatcherHeartbeat struct {
	// ID names the dispatcher: its host, process id and a random part,
	// new at each Start.
	ID string `json:"id"`
	// Pid is the dispatcher's process id.
	Pid int `json:"pid"`
	// Owns are the partitions it consumes now, ascending.
	Owns []int `json:"owns"`
	// Leaving is set on its last heartbeat, sent when it stops: the others
	// take its partitions at once instead of after its silence.
	Leaving bool `json:"leaving,omitempty"`
}
