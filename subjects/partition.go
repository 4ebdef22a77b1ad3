package subjects

import (
	"hash/fnv"
	"strconv"
	"strings"
)

// Partitioned inputs. Publishers never name a partition: they publish a
// run's inputs on Start(run), Event(run, type) and the others, as
// always. The input stream of a partitioned deployment stores each one
// with a partition token after the run id, put there by the server with
// the stream's subject transform (PartitionTransform):
//
//	<prefix>.in.<run>.<kind>[.<type>]      published (and stored, unpartitioned)
//	<prefix>.in.<run>.<p>.<kind>[.<type>]  stored, partitioned: p = Partition(run, P)
//
// The run id stays the first token, so that RunInputs(run) still
// matches all of a run's history, in either layout: a history read costs
// what it cost before. A partition token is digits, and no input kind
// is, so ParseInput tells the layouts apart. One durable consumer per
// partition (PartitionConsumer) filters PartitionInputs(p).

// PartitionsMetadata is the input stream's metadata key that records its
// partition count P, fixed when the stream is provisioned (absent or "0"
// means unpartitioned).
const PartitionsMetadata = "jetflow_partitions"

// PartitionCount is the partition count an input stream's metadata
// records (PartitionsMetadata), 0 when it records none.
func PartitionCount(metadata map[string]string) int {
	p, err := strconv.Atoi(metadata[PartitionsMetadata])
	if err != nil || p < 0 || p > MaxPartitions {
		return 0
	}
	return p
}

// MaxPartitions is the most partitions an input stream may have.
const MaxPartitions = 1024

// Partition is the partition of runID among partitions, as the server's
// partition() subject transform computes it (FNV-1a of the run id token,
// modulo partitions), so that a reader can name a run's stored subjects
// without asking the server. Zero or fewer partitions give 0.
func Partition(runID string, partitions int) int {
	if partitions <= 0 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(runID))
	return int(h.Sum32() % uint32(partitions)) //nolint:gosec // G115: partitions is positive and at most MaxPartitions
}

// PartitionTransform is the input stream's subject transform for
// partitions partitions: it puts the run's partition after its run id.
func (n Names) PartitionTransform(partitions int) (source, destination string) {
	return n.prefix + ".in.*.>", n.prefix + ".in.{{wildcard(1)}}.{{partition(" + strconv.Itoa(partitions) + ",1)}}.>"
}

// PartitionInputs matches every stored input of partition p.
func (n Names) PartitionInputs(p int) string { return n.prefix + ".in.*." + strconv.Itoa(p) + ".>" }

// UnpartitionedInputs match every input stored before the stream was
// partitioned (ParseInput's unpartitioned layout), and no partitioned
// one: the filters of the shared consumer DispatcherConsumer once a
// stream is partitioned, which finishes what was published before.
func (n Names) UnpartitionedInputs() []string {
	return []string{n.prefix + ".in.*.*", n.prefix + ".in.*." + KindEvent + ".*"}
}

// PartitionConsumer is the durable consumer of partition p, which one
// dispatcher at a time consumes.
func (n Names) PartitionConsumer(p int) string { return "dispatcher_p" + strconv.Itoa(p) }

// StoredStarts are the subjects a run's start may be stored on, most
// likely first, in an input stream of partitions partitions: the
// partitioned subject, then (for a run started before the stream was
// partitioned) the published one.
func (n Names) StoredStarts(runID string, partitions int) []string {
	if partitions <= 0 {
		return []string{n.Start(runID)}
	}
	return []string{
		n.prefix + ".in." + runID + "." + strconv.Itoa(Partition(runID, partitions)) + "." + KindStart,
		n.Start(runID),
	}
}

// DispatcherHeartbeats is where the dispatchers of a partitioned
// deployment announce themselves (core NATS, nothing stored): each
// derives from the dispatchers it hears which partitions it owns.
func (n Names) DispatcherHeartbeats() string { return n.prefix + ".dispatchers" }

// isPartitionToken reports whether tok is a partition token: digits.
func isPartitionToken(tok string) bool {
	if tok == "" || len(tok) > 4 {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return false
		}
	}
	return true
}

// StoredInput is the subject a run input published on subject is stored
// on in an input stream of partitions partitions (the server's transform,
// computed here): subject itself when unpartitioned or not a run input.
func (n Names) StoredInput(subject string, partitions int) string {
	run := n.RunToken(subject)
	if partitions <= 0 || run == "\x00"+subject {
		return subject
	}
	head := n.prefix + ".in." + run
	return head + "." + strconv.Itoa(Partition(run, partitions)) + subject[len(head):]
}

// IsDispatcherConsumer reports whether name is a dispatchers' consumer of
// the input stream: the shared one or a partition's.
func (n Names) IsDispatcherConsumer(name string) bool {
	rest, ok := strings.CutPrefix(name, "dispatcher_p")
	return name == n.DispatcherConsumer() || ok && isPartitionToken(rest)
}
