package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
)

// Message is one message of a run's history.
type Message struct {
	// Seq is the input stream's sequence; Time its timestamp, the "now"
	// the dispatcher applied the message with.
	Seq     uint64
	Time    time.Time
	Subject string
	Header  nats.Header
	// Data is the body: for a message that travelled by reference, the
	// object it names (resolvePayloads).
	Data []byte
	// PayloadErr is why the object a message by reference names could not
	// be read (it wraps payload.ErrBadRef): the dispatcher refused it.
	PayloadErr error
}

// readWait bounds each request of a history read: the history is
// already stored, so a long wait means the server is gone.
const readWait = 30 * time.Second

// ReadHistory returns the messages on names.RunInputs(runID) in stream
// order (nil when there are none), as many on each of the run's subjects
// as the stream held when the read began.
//
// nats-server's file store indexes each literal subject by its first and
// last message block; a wildcard filter (an ordered consumer of
// RunInputs, as before) makes it visit every block from the run's first
// message on, and a message between a subject's first and last is found
// only by walking the blocks and scanning the messages between it and
// the one before. So the read asks that index instead (readHistory), and
// reads by sequence what the index cannot locate. Its cost then does not
// grow with other runs' messages, as long as each of the run's subjects
// holds at most two messages or its record and sequence pages name the
// others (the record its last step.DefaultAppliedHistory inputs by
// default, the pages the earlier ones, runrecord.PageSize at a time);
// what none of them locates is read by the walk, whose cost grows with
// the messages between (docs/PERFORMANCE.md, "Cost as work grows").
func ReadHistory(ctx context.Context, js jetstream.JetStream, names subjects.Names, runID string) ([]Message, error) {
	return ReadHistoryOf(ctx, js, names, runID, nil)
}

// ReadHistoryOf is ReadHistory for a caller that holds the run's record
// rec (nil: read only where a subject holds more than two messages),
// whose inputs the read finds through the stream leader when a replica
// lacks them.
func ReadHistoryOf(ctx context.Context, js jetstream.JetStream, names subjects.Names, runID string, rec *runrecord.Record) ([]Message, error) {
	out, err := readHistory(ctx, js, names, runID, rec)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	return out, resolvePayloads(ctx, js, names, out)
}

// readHistory is ReadHistory without reading the objects of messages
// that travelled by reference; rec is the run's record when the caller
// holds it (nil: read it when needed). It reads
//
//  1. which literal subjects the run has, how many messages each holds
//     and the stream's last sequence: STREAM.INFO with a subject filter,
//     answered from the per-subject index;
//  2. each subject's last message (a direct get of its last) and, where
//     it holds at most two, its first (a direct get of the next message
//     on it from sequence 1, which the index places);
//  3. where a subject holds more than two, the sequences the run's record
//     names (the inputs it applied, refused or ignored), with pipelined
//     direct gets by sequence;
//  4. where a subject is still short of its count, the sequences the
//     run's sequence pages name (readPages: each 128 inputs a run
//     applied, and the rest of a run removed with its history kept),
//     pipelined as in 3;
//  5. only for a subject still short of its count, its messages one
//     after the other from its first (walk), until none is missing, so
//     that nothing is searched past the last one missing;
//  6. and, when the read has the record at hand (the caller's, or the
//     one step 3 read), through the stream leader any input it names
//     that none of these found (fill).
//
// Step 1 is answered by the stream leader (kvstore.SubjectCounts waits
// for one). Direct gets may be answered by a replica that lags the
// leader, or one that lacks messages between those it holds: a subject
// short of its count is read by step 5, which finishes through the
// leader, walking the subject again from its first when a replica gave
// later messages but not earlier ones. With the leader's counts that
// walk finds every message; step 6 is the record's check on it, for the
// reads whose outcome is kept (a removal's archive, a reset's rewind).
// Messages stored after step 1 are left out.
func readHistory(ctx context.Context, js jetstream.JetStream, names subjects.Names, runID string, rec *runrecord.Record) ([]Message, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return nil, err
	}
	streamName, filter := names.InputStream(), names.RunInputs(runID)
	cctx, cancel := context.WithTimeout(ctx, readWait)
	counts, last, err := kvstore.SubjectCounts(cctx, js, streamName, filter, 0)
	cancel()
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("replay: bind input stream %q (is it provisioned?): %w", streamName, jetstream.ErrStreamNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if len(counts) == 0 {
		return nil, nil
	}
	h := runReading{counts: counts, last: last, found: map[uint64]Message{}, per: map[string]uint64{}}
	many := false
	for subj, n := range counts {
		gctx, cancel := context.WithTimeout(ctx, readWait)
		var m *jetstream.RawStreamMsg
		var err error
		if n <= 2 {
			// Its first; where there are more, the record names it or
			// the walk, which starts there, reads it.
			if m, err = kvstore.DirectNext(gctx, js, streamName, 1, subj); err == nil {
				h.add(m)
			}
		}
		if err == nil && n > 1 {
			if m, err = kvstore.DirectLast(gctx, js, streamName, subj); err == nil {
				h.add(m)
			}
		}
		if errors.Is(err, kvstore.ErrNoKey) {
			err = nil // removed since: step 4 finds out
		}
		cancel()
		if err != nil {
			return nil, fmt.Errorf("replay: read %s from stream %q: %w", subj, streamName, err)
		}
		many = many || n > 2
	}
	if many {
		if rec == nil {
			rec = readRecord(ctx, js, names, runID)
		}
		if err := h.bySeq(ctx, js, streamName, filter, recordSeqs(rec)); err != nil {
			return nil, err
		}
		if h.short() {
			if err := h.bySeq(ctx, js, streamName, filter, readPages(ctx, js, streamName, names.RunPages(runID))); err != nil {
				return nil, err
			}
		}
	}
	for _, subj := range slices.Sorted(maps.Keys(counts)) {
		if h.per[subj] < counts[subj] {
			if err := h.walk(ctx, js, streamName, subj); err != nil {
				return nil, err
			}
		}
	}
	if err := h.fill(ctx, js, streamName, filter, recordSeqs(rec)); err != nil {
		return nil, err
	}
	out := slices.SortedFunc(maps.Values(h.found), func(a, b Message) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// runReading collects one run's messages as a read finds them.
type runReading struct {
	// counts are the messages on each of the run's subjects, and last
	// the stream's last sequence, when the read began.
	counts map[string]uint64
	last   uint64
	found  map[uint64]Message
	// per counts the messages found on each subject.
	per map[string]uint64
}

// add keeps m if it is one of the run's messages the read is after and
// was not found before.
func (h *runReading) add(m *jetstream.RawStreamMsg) {
	if m.Sequence > h.last || h.counts[m.Subject] == 0 {
		return
	}
	if _, ok := h.found[m.Sequence]; ok {
		return
	}
	h.found[m.Sequence] = historyMessage(m)
	h.per[m.Subject]++
}

// short reports whether a subject of the run still misses messages.
func (h *runReading) short() bool {
	for subj, n := range h.counts {
		if h.per[subj] < n {
			return true
		}
	}
	return false
}

// bySeq reads the messages at those of seqs not found yet, with
// pipelined direct gets, and keeps the run's (add).
func (h *runReading) bySeq(ctx context.Context, js jetstream.JetStream, stream, filter string, seqs []uint64) error {
	seqs = h.unread(seqs)
	if len(seqs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	if err := kvstore.DirectSeqs(ctx, js, stream, seqs, func(m *jetstream.RawStreamMsg) { h.add(m) }); err != nil {
		return fmt.Errorf("replay: read %s from stream %q: %w", filter, stream, err)
	}
	return nil
}

// fill reads through the stream leader each of seqs (the inputs the
// run's record names) that the read has not found. A replica that
// answered direct gets may lack messages in the middle of what it holds
// (RELIABILITY.md, finding 26), which a walk steps over; the leader has
// them, or they are gone from the stream. It costs nothing when every
// input the record names was found, as it is unless a replica diverged.
func (h *runReading) fill(ctx context.Context, js jetstream.JetStream, stream, filter string, seqs []uint64) error {
	for _, seq := range h.unread(seqs) {
		gctx, cancel := context.WithTimeout(ctx, readWait)
		m, err := kvstore.NextOnSubject(gctx, js, stream, seq, filter)
		cancel()
		if errors.Is(err, kvstore.ErrNoKey) {
			return nil // none from seq on
		}
		if err != nil {
			return fmt.Errorf("replay: read %s from stream %q at sequence %d: %w", filter, stream, seq, err)
		}
		h.add(m)
	}
	return nil
}

// readPages returns the input sequences the run's sequence pages name
// (subjects.Names.RunPages; dispatcher/pages.go): the last message of
// each page subject, all in one direct get. They are hints, like the
// record's: none when the stream keeps no pages, when a page does not
// decode, or when the run has more than kvstore.MaxDirectLasts pages
// (131,072 inputs), whose inputs the walk then reads.
func readPages(ctx context.Context, js jetstream.JetStream, stream, pages string) []uint64 {
	ctx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	var seqs []uint64
	err := kvstore.DirectLasts(ctx, js, stream, []string{pages}, 0, func(m *jetstream.RawStreamMsg) {
		if page, err := runrecord.DecodePage(m.Data); err == nil {
			seqs = append(seqs, page...)
		}
	})
	if err != nil {
		return nil
	}
	return seqs
}

// unread returns the sequences of seqs up to the read's last that have
// not been found, sorted, without repeats.
func (h *runReading) unread(seqs []uint64) []uint64 {
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	return slices.DeleteFunc(seqs, func(s uint64) bool {
		_, ok := h.found[s]
		return ok || s == 0 || s > h.last
	})
}

// readRecord returns the run's record, or nil when it cannot be read
// (none, a tombstone, one kept by reference): a direct get of the key's
// last value by the subject of the request (as a KV read makes it),
// which the roles that read records may send.
func readRecord(ctx context.Context, js jetstream.JetStream, names subjects.Names, runID string) *runrecord.Record {
	bucket := names.RunBucket()
	api := subjects.APIPrefix(js.Options().Domain) + "DIRECT.GET." + names.KVStream(bucket) + "." + names.KVKey(bucket, runID)
	gctx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	reply, err := js.Conn().RequestWithContext(gctx, api, nil)
	if err != nil || reply.Header.Get("Status") != "" {
		return nil
	}
	rec, err := runrecord.Decode(reply.Data)
	if err != nil {
		return nil
	}
	return rec
}

// recordSeqs returns the input sequences rec names: those the run
// applied (its last step.DefaultAppliedHistory by default), refused and
// ignored, and the bounds of its apply order. They are hints, checked
// against the subjects and counts of the stream (nil rec: none).
func recordSeqs(rec *runrecord.Record) []uint64 {
	if rec == nil {
		return nil
	}
	seqs := slices.Clone(rec.Applied)
	for _, r := range rec.Rejected {
		seqs = append(seqs, r.Seq)
	}
	for _, r := range rec.Ignored {
		seqs = append(seqs, r.Seq)
	}
	for _, sp := range rec.Order {
		seqs = append(seqs, sp.From, sp.To)
	}
	return seqs
}

// maxBatch bounds one batched direct get; the server also ends a batch
// at its max_pending bytes, after which the read asks again.
const maxBatch = 1024

// walk reads subject (literal) message after message from its first,
// until every message it held when the read began has been found:
// batched direct gets, then reads through the stream leader for any that
// a lagging replica did not have. Each batch asks for as many messages
// as are still missing, so the walk ends at the last one missing rather
// than at the subject's last: where the record names a run's recent
// inputs (an event loop past its applied history), only the older ones
// are walked.
//
// In nats-server's file store a walk from the stream's start costs
// nothing to reach the subject's first message (the per-subject index
// places it, and counts the batch's pending messages), where a batch
// that starts after it has those counted by scanning its message block
// from there to the block's end. Past the first, the store finds a
// subject's next message directly when it is the subject's first in a
// message block; one after another of the subject's in the same block is
// found only by scanning every message in between, which is what a walk
// costs (docs/PERFORMANCE.md).
func (h *runReading) walk(ctx context.Context, js jetstream.JetStream, stream, subject string) error {
	var seq uint64
	missing := func() uint64 { return h.counts[subject] - h.per[subject] }
	done := false
	each := func(m *jetstream.RawStreamMsg) {
		if done {
			return
		}
		seq = m.Sequence
		h.add(m)
		// Past the read's last sequence, or all found: nothing more to
		// look for.
		done = m.Sequence >= h.last || missing() == 0
	}
	for !done {
		gctx, cancel := context.WithTimeout(ctx, readWait)
		read, err := kvstore.DirectBatch(gctx, js, stream, subject, seq+1, int(min(missing(), maxBatch)), each)
		cancel()
		if err != nil {
			return fmt.Errorf("replay: read %s from stream %q after sequence %d: %w", subject, stream, seq, err)
		}
		if read == 0 {
			break
		}
	}
	// A replica behind the leader, or retention since the count: ask the
	// leader for what is left. Still short at the end, the replica lacked
	// messages between those it gave (finding 26): the leader walks the
	// subject again from its first.
	for again := false; ; again = true {
		for !done {
			gctx, cancel := context.WithTimeout(ctx, readWait)
			m, err := kvstore.NextOnSubject(gctx, js, stream, seq+1, subject)
			cancel()
			if errors.Is(err, kvstore.ErrNoKey) {
				break
			}
			if err != nil {
				return fmt.Errorf("replay: read %s from stream %q after sequence %d: %w", subject, stream, seq, err)
			}
			each(m)
		}
		if again || missing() == 0 {
			return nil
		}
		seq, done = 0, false
	}
}

// directHeaders are the headers a direct get adds to a stored message.
var directHeaders = []string{
	jetstream.StreamHeader, jetstream.SubjectHeader, jetstream.SequenceHeader, jetstream.TimeStampHeaer,
	"Nats-Num-Pending", "Nats-Last-Sequence",
}

// historyMessage is a stored message as a history holds it: its own
// headers (nil when none), its time in the local zone as a consumer's
// metadata gives it.
func historyMessage(m *jetstream.RawStreamMsg) Message {
	h := m.Header
	for _, k := range directHeaders {
		delete(h, k)
	}
	if len(h) == 0 {
		h = nil
	}
	return Message{Seq: m.Sequence, Time: time.Unix(0, m.Time.UnixNano()), Subject: m.Subject, Header: h, Data: m.Data}
}
