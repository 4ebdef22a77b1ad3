package runrecord

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// PageSize is how many applied inputs one sequence page names: a
// dispatcher writes a page each time the run's applied inputs pass a
// multiple of it (PageDue), while its record's applied history (128 by
// default) still holds them all.
const PageSize = 128

// PageDue reports whether the step that took the run's count of applied
// messages (its state's Seq) from prev to next passed a multiple of
// size, so that the last size inputs the record names are owed a page.
// A step may count more than one message (a resume applies the inputs
// it held), never fewer: pages then overlap, and leave no input out.
func PageDue(prev, next int64, size int) bool {
	return size > 0 && next > prev && next/int64(size) > prev/int64(size)
}

// Page returns the sequences of the last size inputs the record names as
// applied (fewer when it names fewer), oldest first: what a page written
// after the step that made r holds. Its content depends on the record
// alone, so a repeat of the write (after a crash, or by another
// dispatcher) holds the same.
func (r *Record) Page(size int) []uint64 {
	a := r.Applied
	if len(a) > size {
		a = a[len(a)-size:]
	}
	return slices.Clone(a)
}

// FinalPage returns what a removed run's last page holds: every input
// sequence its record names (applied, refused, ignored), sorted, without
// repeats, so that with the run's earlier pages its whole history is
// named once the record is gone.
func (r *Record) FinalPage() []uint64 {
	seqs := slices.Clone(r.Applied)
	for _, x := range r.Rejected {
		seqs = append(seqs, x.Seq)
	}
	for _, x := range r.Ignored {
		seqs = append(seqs, x.Seq)
	}
	slices.Sort(seqs)
	return slices.Compact(seqs)
}

// EncodePage is the stored form of a page: its sequences as a JSON array.
func EncodePage(seqs []uint64) []byte {
	b := make([]byte, 0, 2+11*len(seqs))
	b = append(b, '[')
	for i, s := range seqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, s, 10)
	}
	return append(b, ']')
}

// DecodePage parses a stored page.
func DecodePage(data []byte) ([]uint64, error) {
	p := recParser{d: data}
	if seqs, ok := p.uints(); ok {
		if p.ws(); p.i == len(p.d) {
			return seqs, nil
		}
	}
	var seqs []uint64
	if err := json.Unmarshal(data, &seqs); err != nil {
		return nil, fmt.Errorf("decode sequence page: not a JSON array of sequences: %w", err)
	}
	return seqs, nil
}
