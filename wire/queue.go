package wire

// Headers of a queued invocation (docs/POLICY.md#priority-and-fairness):
// dispatchers set them on the copy in the queue stream, and the copy they
// admit onto the task subject keeps them. Workers need none of them.
const (
	// HeaderKey is the invocation's fairness key, as its task version's
	// policy computed it from the run input.
	HeaderKey = "Jetflow-Key"
	// HeaderKeyLimit is the most attempts of that key in flight at once
	// (the policy's maxPerKey); absent: no cap.
	HeaderKeyLimit = "Jetflow-Key-Limit"
	// HeaderQueued is the stream sequence the invocation had in the queue
	// stream, on the copy a dispatcher admitted onto the task subject.
	HeaderQueued = "Jetflow-Queued"
)
