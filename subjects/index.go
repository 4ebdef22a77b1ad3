package subjects

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// The run index (package runindex writes it, client.ListRuns reads it):
// one stream of small entries, one subject per entry and one message per
// subject, so that a subject filter selects the runs of a query and the
// stream's order is the order the runs last changed in.
//
//	<p>.idx.r.<workflow>.<status>.<run>                  a run's entry
//	<p>.idx.a.<name>.<value>.<workflow>.<status>.<run>   one per search attribute
//	<p>.idx.h.<run>                                      the head: which entries a run has
//	<p>.idx.off                                          the off mark: no dispatcher keeps it

// IndexStream holds the run index.
func (n Names) IndexStream() string { return n.prefix + "_index" }

// IndexAll matches every subject of the run index.
func (n Names) IndexAll() string { return n.prefix + ".idx.>" }

// IndexEntry is the subject of a run's entry. workflow and status may be
// "*" in a filter (IndexEntries).
func (n Names) IndexEntry(workflow, status, runID string) string {
	return n.prefix + ".idx.r." + workflow + "." + status + "." + runID
}

// IndexEntries matches the entries of workflow and status ("" for any).
func (n Names) IndexEntries(workflow, status string) string {
	return n.IndexEntry(orAny(workflow), orAny(status), "*")
}

// IndexAttr is the subject of a run's entry under one search attribute:
// name is a checked token (CheckSearchName), value any string (it is
// encoded by IndexValueToken).
func (n Names) IndexAttr(name, value, workflow, status, runID string) string {
	return n.prefix + ".idx.a." + name + "." + IndexValueToken(value) + "." + workflow + "." + status + "." + runID
}

// IndexAttrEntries matches the entries with search attribute name equal
// to value, of workflow and status ("" for any).
func (n Names) IndexAttrEntries(name, value, workflow, status string) string {
	return n.IndexAttr(name, value, orAny(workflow), orAny(status), "*")
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
