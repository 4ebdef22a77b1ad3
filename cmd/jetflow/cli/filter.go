package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/wire"
)

// runFilter holds the run filter flags `list` and the bulk forms of the
// run operations share.
type runFilter struct {
	workflow, revision, status, before, after, state, match string
	where                                                   []string
	runs                                                    []string
}

// addFlags declares the filter flags on cmd.
func (r *runFilter) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&r.workflow, "workflow", "", "only runs of this workflow")
	f.StringVar(&r.revision, "revision", "", "only runs pinned to this revision")
	f.StringVar(&r.status, "status", "", "only runs in this status: "+strings.Join(client.RunStatuses, ", "))
	f.StringVar(&r.before, "started-before", "", "only runs started before this time (RFC 3339, or a duration such as 1h for that long ago)")
	f.StringVar(&r.after, "started-after", "", "only runs started at or after this time (RFC 3339, or a duration ago)")
	f.StringVar(&r.state, "state", "", "only runs whose active state is this one (its name as status prints it, or its id)")
	f.StringVar(&r.match, "match", "", "only runs for which this Jaren JSON Query over {\"input\",\"data\"} is true (JSON, @FILE or @-)")
	f.StringArrayVar(&r.where, "where", nil, "only runs whose search attribute NAME (declared in the policy's \"$run\".\"search\") is VALUE (NAME=VALUE; repeat to AND)")
	f.StringSliceVar(&r.runs, "run", nil, fmt.Sprintf("only these runs, by id (RUN,RUN,...; repeat to add more; at most %d), such as those a revision check found the same", wire.MaxFilterRuns))
}

// set reports whether any filter flag was given.
func (r *runFilter) set() bool {
	return len(r.where) > 0 || len(r.runs) > 0 || r.workflow != "" || r.revision != "" || r.status != "" || r.before != "" || r.after != "" || r.state != "" || r.match != ""
}

// build checks the flags and returns the filter, without a server: a bad
// --match query is refused here with its JQ code and JSON Pointer.
func (r *runFilter) build(s streams, now time.Time) (wire.RunFilter, error) {
	f := wire.RunFilter{Workflow: r.workflow, Revision: r.revision, Status: r.status, State: r.state, Runs: r.runs}
	var err error
	if f.StartedBefore, err = timeFlag("--started-before", r.before, now); err != nil {
		return f, err
	}
	if f.StartedAfter, err = timeFlag("--started-after", r.after, now); err != nil {
		return f, err
	}
	if f.Match, err = jsonArg(s, "--match", r.match); err != nil {
		return f, err
	}
	if f.Where, err = client.ParseWhere(r.where); err != nil {
		return f, flagError(err)
	}
	if _, err := client.CompileFilter(f); err != nil {
		return f, flagError(err)
	}
	return f, nil
}

// flagError names a filter's field as its flag.
func flagError(err error) error {
	msg := strings.Replace(err.Error(), client.ErrBadFilter.Error()+": ", "--", 1)
	return fmt.Errorf("%s", msg)
}

// timeFlag reads an RFC 3339 time, or a duration meaning that long
// before now.
func timeFlag(flag, v string, now time.Time) (string, error) {
	if v == "" {
		return "", nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(-d).UTC().Format(time.RFC3339Nano), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return "", fmt.Errorf("%s %q is neither an RFC 3339 time (2026-12-01T10:00:00Z) nor a duration (90m)", flag, v)
	}
	return t.UTC().Format(time.RFC3339Nano), nil
}
