package console

import (
	"context"
	"errors"
	"net/http"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/wire"
)

// whereRuns answers a run list filtered by search attributes with the
// query `jetflow list --where` makes (client.ListRuns over the run index
// the dispatchers keep, most recently changed first), since the
// console's own index keeps no attributes. Where the deployment's index
// is off, ListRuns reads every record instead.
func (c *Console) whereRuns(ctx context.Context, q Query) (Page, error) {
	if c.cfg.Client == nil {
		return Page{}, errNoClient
	}
	f := wire.RunFilter{Workflow: q.Workflow, Status: q.Status, Where: q.Where}
	got, err := c.cfg.Client.ListRuns(ctx, client.ListOptions{Filter: f, Sort: client.SortUpdate, Limit: q.Limit, Cursor: q.Cursor})
	if err != nil {
		return Page{}, err
	}
	counts := c.idx.counts()
	p := Page{Runs: make([]Summary, 0, len(got.Runs)), Cursor: got.Next, Matched: -1, Total: counts.Total, Loaded: counts.Loaded}
	for _, l := range got.Runs {
		s := Summary{ID: l.Status.Run, Workflow: l.Status.Workflow, Revision: l.Status.Revision, Status: l.Status.Status, State: l.Status.State, Updated: l.Updated.UnixMilli()}
		if known, ok := c.idx.get(s.ID); ok {
			s.Started, s.Settled, s.Error, s.Rev = known.Started, known.Settled, known.Error, known.Rev
		}
		p.Runs = append(p.Runs, s)
	}
	return p, nil
}

var errNoClient = errors.New("this console has no jetflow client (Config.Client) to read the run index with")

// whereStatus maps a search attribute listing's error to an HTTP status.
func whereStatus(err error) int {
	switch {
	case errors.Is(err, errNoClient), errors.Is(err, client.ErrNoIndex), errors.Is(err, client.ErrNoSearch):
		return http.StatusServiceUnavailable
	case errors.Is(err, client.ErrBadFilter):
		return http.StatusBadRequest
	}
	return http.StatusBadGateway
}
