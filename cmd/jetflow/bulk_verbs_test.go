package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/wire"
)

// TestListFiltersSortsAndPages: list's filters (status, state, start
// time, a query over the input), its sorts and its cursor pages.
func TestListFiltersSortsAndPages(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	var mid time.Time
	for i := range 5 {
		id := fmt.Sprintf("l-%d", i)
		if err := f.Client.StartRun(ctx, "gate", id, map[string]any{"wait": true, "k": i}); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, f, id, wire.StatusWaiting)
		if i == 2 {
			mid = time.Now()
		}
	}
	if err := f.Client.StartRun(ctx, "gate", "l-done", map[string]any{"k": 9}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, "l-done", wire.StatusDone)

	list := func(args ...string) (ids, next string) {
		t.Helper()
		out, errOut, exit := verb(t, f, append([]string{"list", "--json"}, args...)...)
		var runs []wire.Status
		if err := json.Unmarshal([]byte(out), &runs); err != nil || exit != 0 {
			t.Fatalf("list --json %v: exit %d, %v: %q %q", args, exit, err, out, errOut)
		}
		var got []string
		for _, r := range runs {
			got = append(got, r.Run)
		}
		if m := regexp.MustCompile(`next page: --cursor (\S+)`).FindStringSubmatch(errOut); m != nil {
			next = m[1]
		}
		return strings.Join(got, " "), next
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--status", "waiting"}, "l-0 l-1 l-2 l-3 l-4"},
		{[]string{"--state", "gate"}, "l-0 l-1 l-2 l-3 l-4"},
		{[]string{"--state", "end"}, "l-done"},
		{[]string{"--match", `{"$gt":["$.input.k",2]}`}, "l-3 l-4 l-done"},
		{[]string{"--match", `{"$eq":["$.data.k",9]}`, "--workflow", "gate"}, "l-done"},
		{[]string{"--started-after", mid.UTC().Format(time.RFC3339Nano), "--status", "waiting"}, "l-3 l-4"},
		{[]string{"--started-before", mid.UTC().Format(time.RFC3339Nano)}, "l-0 l-1 l-2"},
		{[]string{"--started-before", "1ms", "--started-after", "1h"}, "l-0 l-1 l-2 l-3 l-4 l-done"},
		{[]string{"--status", "waiting", "--sort", "start"}, "l-4 l-3 l-2 l-1 l-0"},
		{[]string{"--sort", "update", "--limit", "1"}, "l-done"},
		{[]string{"--revision", "g0"}, ""},
		{[]string{"--run", "l-1,l-3", "--run", "l-done", "--status", "waiting"}, "l-1 l-3"},
		{[]string{"--run", "l-4,l-nosuch", "--sort", "start"}, "l-4"},
	} {
		if got, _ := list(c.args...); got != c.want {
			t.Errorf("list %v: %q, want %q", c.args, got, c.want)
		}
	}
	var pages []string
	cursor := ""
	for range 4 {
		args := []string{"--status", "waiting", "--sort", "start", "--limit", "2"}
		if cursor != "" {
			args = append(args, "--cursor", cursor)
		}
		ids, next := list(args...)
		pages = append(pages, ids)
		if cursor = next; cursor == "" {
			break
		}
	}
	if got := strings.Join(pages, " | "); got != "l-4 l-3 | l-2 l-1 | l-0" {
		t.Errorf("pages by start: %q", got)
	}
	out, _, _ := verb(t, f, "list", "--status", "waiting", "--limit", "3")
	if !strings.Contains(out, "next page: --cursor ") {
		t.Errorf("list --limit prints no next cursor:\n%s", out)
	}
	for _, c := range [][]string{
		{"list", "--match", `{"$nope":[]}`},
		{"list", "--started-before", "yesterday"},
		{"list", "--sort", "size"},
		{"list", "--cursor", "zzz"},
		{"list", "--run", "l.1"},
	} {
		if _, errOut, exit := verb(t, f, c...); exit != 2 || errOut == "" {
			t.Errorf("%v: exit %d, %q; want refused", c, exit, errOut)
		}
	}
}

// TestBulkCancelVerb: cancel with a filter counts, submits a job the
// dispatcher carries out, and follows it; jobs lists and shows it.
func TestBulkCancelVerb(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	for i := range 6 {
		if err := f.Client.StartRun(ctx, "gate", fmt.Sprintf("c-%d", i), map[string]any{"wait": true, "k": i}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		waitStatus(t, f, fmt.Sprintf("c-%d", i), wire.StatusWaiting)
	}
	bulk := []string{"cancel", "--workflow", "gate", "--match", `{"$lt":["$.input.k",4]}`}
	out, _, exit := verb(t, f, append(bulk, "--dry-run")...)
	if exit != 0 || !strings.Contains(out, "4 runs match; 4 can take a cancel now") {
		t.Fatalf("dry run: exit %d:\n%s", exit, out)
	}
	if _, errOut, exit := verb(t, f, bulk...); exit != 2 || !strings.Contains(errOut, "add --yes") {
		t.Fatalf("without --yes: exit %d, %q", exit, errOut)
	}
	if _, errOut, exit := verb(t, f, append(bulk, "c-1")...); exit != 2 || !strings.Contains(errOut, "either RUN or filter flags") {
		t.Fatalf("RUN with a filter: exit %d, %q", exit, errOut)
	}
	out, errOut, exit := verb(t, f, append(bulk, "--reason", "test", "--yes")...)
	m := regexp.MustCompile(`job (\S+) submitted`).FindStringSubmatch(out)
	if exit != 0 || m == nil || !regexp.MustCompile(`job \S+ cancel \[#{30}\] 4/4  sent 4  skipped 0  errors 0  done`).MatchString(out) {
		t.Fatalf("bulk cancel: exit %d:\n%s%s", exit, out, errOut)
	}
	for i := range 6 {
		want := wire.StatusWaiting
		if i < 4 {
			want = wire.StatusCancelled
		}
		waitStatus(t, f, fmt.Sprintf("c-%d", i), want)
	}
	out, _, exit = verb(t, f, "jobs")
	if exit != 0 || !regexp.MustCompile(`(?m)^`+m[1]+`\s+cancel\s+done\s+4\s+4\s+0\s+0\s`).MatchString(out) {
		t.Errorf("jobs: exit %d:\n%s", exit, out)
	}
	out, _, exit = verb(t, f, "jobs", "show", m[1])
	var j wire.Job
	if err := json.Unmarshal([]byte(out), &j); err != nil || exit != 0 || j.Reason != "test" || j.Filter.Workflow != "gate" || j.State != wire.JobDone {
		t.Errorf("jobs show: exit %d, %v:\n%s", exit, err, out)
	}
	if out, _, exit = verb(t, f, "jobs", "watch", m[1]); exit != 0 || !strings.Contains(out, "done") {
		t.Errorf("jobs watch of a done job: exit %d:\n%s", exit, out)
	}
	if _, errOut, exit := verb(t, f, "jobs", "cancel", m[1]); exit != 2 || !strings.Contains(errOut, "job already ended") {
		t.Errorf("jobs cancel of a done job: exit %d, %q", exit, errOut)
	}
	if _, errOut, exit := verb(t, f, "jobs", "show", "nope"); exit != 2 || !strings.Contains(errOut, "job not found") {
		t.Errorf("jobs show of no job: exit %d, %q", exit, errOut)
	}
	if _, errOut, exit := verb(t, f, "cancel", "--workflow", "gate", "--match", `{"$lt":["$.input.k"]}`, "--yes"); exit != 2 || !strings.Contains(errOut, "--match: JQ") {
		t.Errorf("a bad query: exit %d, %q", exit, errOut)
	}
}
