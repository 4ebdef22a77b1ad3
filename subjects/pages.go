package subjects

import "strconv"

// A run's sequence pages: the input stream also keeps, beside a run's
// history, pages naming the stream sequences of inputs the run applied,
// 128 at a time (runrecord.PageSize), one message per page on a subject
// of its own outside InputAll, so that no dispatcher consumes them. A
// history read finds a run's inputs by these sequences where its record
// no longer names them (replay.ReadHistory); they are kept and purged
// with the history.

// PagesAll matches every run's sequence pages.
func (n Names) PagesAll() string { return n.prefix + ".seqs.>" }

// RunPages matches every sequence page of one run.
func (n Names) RunPages(runID string) string { return n.prefix + ".seqs." + runID + ".>" }

// Page is the subject of the run's sequence page whose first input is at
// stream sequence first.
func (n Names) Page(runID string, first uint64) string {
	return n.prefix + ".seqs." + runID + "." + strconv.FormatUint(first, 10)
}
