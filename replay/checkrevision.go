package replay

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/token"
)

// Candidate compiles doc, deployed under name with pol or not at all, as
// the definition a check replays runs under: its reducer options are
// those a dispatcher would give it once deployed (opts, with pol's retry
// rules and timeouts).
func Candidate(ctx context.Context, reg registry.Reader, opts run.Options, name string, doc []byte, pol *policy.Policy) (*step.Definition, error) {
	v, err := value.Decode(doc, value.Limits{})
	if err != nil {
		return nil, fmt.Errorf("replay: workflow %q: %w", name, err)
	}
	obj, _ := v.(map[string]any)
	revision, _ := obj["revision"].(string)
	if revision == "" {
		return nil, fmt.Errorf("replay: workflow %q: the document has no nonblank string member \"revision\"", name)
	}
	canon, err := value.Canonical(v)
	if err != nil {
		return nil, fmt.Errorf("replay: workflow %q: %w", name, err)
	}
	if pol.Empty() {
		pol = nil
	}
	dep := registry.Deployment{Name: name, Document: registry.Document{
		Hash: registry.ContentHash([]byte(canon), pol), Revision: revision, Doc: []byte(canon), Policy: pol,
	}}
	l, err := registry.NewLoader(overlay{Reader: reg, dep: dep}, opts, 0)
	if err != nil {
		return nil, err
	}
	return l.Load(ctx, name, revision)
}

// overlay is a registry where one deployment stands for every revision
// of its name.
type overlay struct {
	registry.Reader
	dep registry.Deployment
}

func (o overlay) Get(ctx context.Context, name string) (registry.Deployment, error) {
	if name == o.dep.Name {
		return o.dep, nil
	}
	return o.Reader.Get(ctx, name)
}

func (o overlay) GetRevision(ctx context.Context, name, revision string) (registry.Deployment, error) {
	if name == o.dep.Name {
		return o.dep, nil
	}
	return o.Reader.GetRevision(ctx, name, revision)
}

// CheckRevision judges each run of runIDs against to (Checker): it reads
// their records (Source.Runs, which is required) and their histories in
// one pass over the input stream (ReadHistories), and replays them on
// every core. A run with no record or no history fails its check; the
// error is for what stops every check (the stream, the secret).
func CheckRevision(ctx context.Context, src Source, to *step.Definition, runIDs []string) ([]RunCheck, error) {
	if src.Runs == nil {
		return nil, errors.New("replay: CheckRevision needs Source.Runs, the run bucket")
	}
	s := src.Settings
	s.Names = src.Names
	s = s.WithDefaults()
	if s.Tokens == nil {
		tok, err := token.Load(ctx, src.JS, src.Names)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		s.Tokens = tok
	}
	l, err := registry.NewLoader(src.Registry, src.RunOptions, 0)
	if err != nil {
		return nil, err
	}
	chk, err := NewChecker(s, l.Load, to)
	if err != nil {
		return nil, err
	}
	recs, errs := readRecords(ctx, src.Runs, runIDs)
	from := uint64(0)
	first := true
	want := make(map[string]bool, len(runIDs))
	for i, id := range runIDs {
		if errs[i] != nil {
			continue
		}
		want[id] = true
		start := uint64(0)
		if recs[i] != nil && len(recs[i].Order) > 0 {
			start = recs[i].Order[0].From
			for _, sp := range recs[i].Order {
				start = min(start, sp.From)
			}
		}
		if first || start < from {
			from, first = start, false
		}
	}
	hist, err := ReadHistories(ctx, src.JS, src.Names, from, want)
	if err != nil {
		return nil, err
	}
	out := make([]RunCheck, len(runIDs))
	work := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range work {
				id := runIDs[i]
				switch {
				case errs[i] != nil:
					out[i] = RunCheck{Run: id, Verdict: CheckFails, Error: errs[i].Error()}
				case len(hist[id]) == 0:
					out[i] = RunCheck{Run: id, Verdict: CheckFails, Error: "the input stream holds none of its history (retention or the stream's MaxAge removed it)"}
				default:
					out[i] = chk.Compare(ctx, id, hist[id], recs[i])
				}
			}
		})
	}
	for i := range runIDs {
		work <- i
	}
	close(work)
	wg.Wait()
	return out, ctx.Err()
}

// readRecords reads and decodes the runs' records, a few at a time.
func readRecords(ctx context.Context, runs RunStore, ids []string) ([]*runrecord.Record, []error) {
	recs, errs := make([]*runrecord.Record, len(ids)), make([]error, len(ids))
	work := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range work {
				data, _, err := runs.Get(ctx, ids[i])
				switch {
				case errors.Is(err, kvstore.ErrRunNotFound):
					errs[i] = errors.New("no record: the run does not exist, or retention removed it")
				case err != nil:
					errs[i] = fmt.Errorf("read its record: %w", err)
				default:
					if recs[i], err = runrecord.Decode(data); err != nil {
						errs[i] = fmt.Errorf("its record does not decode: %w", err)
					}
				}
			}
		})
	}
	for i := range ids {
		work <- i
	}
	close(work)
	wg.Wait()
	return recs, errs
}
