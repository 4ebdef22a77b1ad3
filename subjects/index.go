package subjects

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// The run index (package runindex writes it, client.ListRuns reads it):
// one stream of small entries, one subject per entry and one message per
// subject, so that a subject filter selects the runs of a query. Each
// entry subject carries a bucket token, a sequence's high bits
// (IndexBucket): the record revision's for the order by update, the
// start sequence's for the order by start. A bucket holds at most
// IndexBucketSize entries of one order, so a filter naming buckets
// matches few subjects, however many runs the index holds: the server
// counts every subject a filter matches before it answers.
//
//	<p>.idx.u.<workflow>.<status>.<bucket>.<run>               a run's entry, by update (record revision)
//	<p>.idx.s.<workflow>.<status>.<bucket>.<run>               the same, by start sequence
//	<p>.idx.v.<name>.<value>.<workflow>.<status>.<bucket>.<run> one per search attribute, by update
//	<p>.idx.h.<run>                                            the head: which entries a run has
//	<p>.idx.off                                                the off mark: no dispatcher keeps it
//	<p>.idx.shape                                              the shape mark: IndexShape, the shape the entries have
//
// An index of shape 1 (before the buckets) had its entries on
// <p>.idx.r.<workflow>.<status>.<run> and
// <p>.idx.a.<name>.<value>.<workflow>.<status>.<run>
// (IndexEntryV1, IndexAttrV1); an indexer rebuilds it.

// IndexShape is the shape of the index this code writes and reads.
const IndexShape = 2

// IndexBucketBits is how many low bits of a sequence a bucket token
// drops: a bucket spans IndexBucketSize sequences.
const IndexBucketBits = 6

// IndexBucketSize is how many sequences one bucket spans.
const IndexBucketSize = 1 << IndexBucketBits

// IndexBucket is the bucket of sequence seq.
func IndexBucket(seq uint64) uint64 { return seq >> IndexBucketBits }

// IndexStream holds the run index.
func (n Names) IndexStream() string { return n.prefix + "_index" }

// IndexAll matches every subject of the run index.
func (n Names) IndexAll() string { return n.prefix + ".idx.>" }

// IndexEntry is the subject of a run's entry in the order by update:
// rev is the record revision it was made from.
func (n Names) IndexEntry(workflow, status string, rev uint64, runID string) string {
	return n.prefix + ".idx.u." + workflow + "." + status + "." + bucketToken(IndexBucket(rev)) + "." + runID
}

// IndexEntries matches the entries by update of workflow and status (""
// for any) in bucket (IndexBucket of a record revision).
func (n Names) IndexEntries(workflow, status string, bucket uint64) string {
	return n.prefix + ".idx.u." + orAny(workflow) + "." + orAny(status) + "." + bucketToken(bucket) + ".*"
}

// IndexEntriesAll matches the entries by update of workflow and status
// ("" for any) in every bucket.
func (n Names) IndexEntriesAll(workflow, status string) string {
	return n.prefix + ".idx.u." + orAny(workflow) + "." + orAny(status) + ".*.*"
}

// IndexStart is the subject of a run's entry in the order by start:
// start is the input stream sequence of its start (0 when unknown).
func (n Names) IndexStart(workflow, status string, start uint64, runID string) string {
	return n.prefix + ".idx.s." + workflow + "." + status + "." + bucketToken(IndexBucket(start)) + "." + runID
}

// IndexStarts matches the entries by start of workflow and status (""
// for any) in bucket (IndexBucket of a start sequence).
func (n Names) IndexStarts(workflow, status string, bucket uint64) string {
	return n.prefix + ".idx.s." + orAny(workflow) + "." + orAny(status) + "." + bucketToken(bucket) + ".*"
}

// IndexStartsAll matches the entries by start of workflow and status
// ("" for any) in every bucket.
func (n Names) IndexStartsAll(workflow, status string) string {
	return n.prefix + ".idx.s." + orAny(workflow) + "." + orAny(status) + ".*.*"
}

// IndexAttr is the subject of a run's entry under one search attribute,
// by update: name is a checked token (CheckSearchName), value any string
// (it is encoded by IndexValueToken), rev the record revision.
func (n Names) IndexAttr(name, value, workflow, status string, rev uint64, runID string) string {
	return n.prefix + ".idx.v." + name + "." + IndexValueToken(value) + "." + workflow + "." + status + "." + bucketToken(IndexBucket(rev)) + "." + runID
}

// IndexAttrEntries matches the entries with search attribute name equal
// to value, of workflow and status ("" for any), in bucket.
func (n Names) IndexAttrEntries(name, value, workflow, status string, bucket uint64) string {
	return n.prefix + ".idx.v." + name + "." + IndexValueToken(value) + "." + orAny(workflow) + "." + orAny(status) + "." + bucketToken(bucket) + ".*"
}

// IndexAttrEntriesAll matches the entries with search attribute name
// equal to value, of workflow and status ("" for any), in every bucket.
func (n Names) IndexAttrEntriesAll(name, value, workflow, status string) string {
	return n.prefix + ".idx.v." + name + "." + IndexValueToken(value) + "." + orAny(workflow) + "." + orAny(status) + ".*.*"
}

// IndexEntryV1 is the subject of a run's entry in an index of shape 1.
func (n Names) IndexEntryV1(workflow, status, runID string) string {
	return n.prefix + ".idx.r." + workflow + "." + status + "." + runID
}

// IndexAttrV1 is the subject of a run's search attribute entry in an
// index of shape 1.
func (n Names) IndexAttrV1(name, value, workflow, status, runID string) string {
	return n.prefix + ".idx.a." + name + "." + IndexValueToken(value) + "." + workflow + "." + status + "." + runID
}

// IndexRuns matches every entry and head of the run index, of any
// shape, but not its marks.
func (n Names) IndexRuns() []string {
	var out []string
	for _, k := range []string{"u", "s", "v", "h", "r", "a"} {
		out = append(out, n.prefix+".idx."+k+".>")
	}
	return out
}

// IndexShapeMark is the subject of the index's shape mark
// (wire.IndexShapeMark).
func (n Names) IndexShapeMark() string { return n.prefix + ".idx.shape" }

func bucketToken(b uint64) string { return strconv.FormatUint(b, 36) }

// IndexSubjectBucket is the bucket an entry subject of the order by
// update or by start, or of a search attribute (IndexEntry, IndexStart,
// IndexAttr), names. False when subject is none of those.
func (n Names) IndexSubjectBucket(subject string) (uint64, bool) {
	rest, ok := strings.CutPrefix(subject, n.prefix+".idx.")
	if !ok {
		return 0, false
	}
	tokens := strings.Split(rest, ".")
	switch {
	case len(tokens) == 5 && (tokens[0] == "u" || tokens[0] == "s"),
		len(tokens) == 7 && tokens[0] == "v":
	default:
		return 0, false
	}
	b, err := strconv.ParseUint(tokens[len(tokens)-2], 36, 64)
	return b, err == nil
}

// IndexHead is the subject of a run's head: the record revision indexed
// and the subjects of the run's entries, so that an update finds them.
func (n Names) IndexHead(runID string) string { return n.prefix + ".idx.h." + runID }

// IndexOff is the subject of the index's off mark (wire.IndexOff): the
// dispatchers run with the index off, so listings scan the run records.
func (n Names) IndexOff() string { return n.prefix + ".idx.off" }

// IndexerConsumer is the durable consumer of the run bucket's stream that
// the dispatchers share to keep the index.
func (n Names) IndexerConsumer() string { return "indexer" }

func orAny(s string) string {
	if s == "" {
		return "*"
	}
	return s
}

// maxPlainValue is the longest value kept as itself in a subject token.
const maxPlainValue = 64

// maxEncodedValue is the longest value kept, base64-encoded, in a token;
// a longer one is kept as a hash.
const maxEncodedValue = 48

// IndexValueToken encodes a search attribute's value as one subject
// token, equal values alike and different values apart: a value of
// token bytes (letters, digits, '_', '-') of up to 64 bytes is itself;
// up to 48 other bytes are "=" and their base64url; a longer one is "#"
// and the base64url of its SHA-256's first 18 bytes.
func IndexValueToken(v string) string {
	if v != "" && len(v) <= maxPlainValue && isToken(v) {
		return v
	}
	if len(v) <= maxEncodedValue {
		return "=" + base64.RawURLEncoding.EncodeToString([]byte(v))
	}
	sum := sha256.Sum256([]byte(v))
	return "#" + base64.RawURLEncoding.EncodeToString(sum[:18])
}

func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !tokenByte(s[i]) {
			return false
		}
	}
	return true
}

// maxSearchName is the longest search attribute name.
const maxSearchName = 32

// CheckSearchName refuses a search attribute name that cannot be one
// subject token of at most 32 bytes.
func CheckSearchName(name string) error {
	if len(name) > maxSearchName {
		return fmt.Errorf("%w: search attribute name %q is longer than %d bytes", ErrInvalid, name, maxSearchName)
	}
	return checkToken("search attribute name", name)
}
