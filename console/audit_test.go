package console

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/wire"
)

// auditEntries reads the audit log newest first through the console.
func (f *front) auditEntries(t *testing.T, hdr http.Header, query string) client.AuditPage {
	t.Helper()
	status, _, body := f.do(t, http.MethodGet, "/api/audit"+query, "", hdr)
	if status != http.StatusOK {
		t.Fatalf("GET /api/audit%s: %d %s", query, status, body)
	}
	var p client.AuditPage
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("audit page %s: %v", body, err)
	}
	return p
}

// TestActionsAudited: an action writes one audit entry naming the
// authenticated identity, its target, its result, the peer and the
// equivalent command; a refused action is written too, with why; the
// run's record names the identity as its operator.
func TestActionsAudited(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	cred, err := ParseBasic("ana:s3cret")
	if err != nil {
		t.Fatal(err)
	}
	f := b.front(t, Config{Actions: true, Auth: Auth{Basic: cred}, NATSURL: "nats://n1:4222"})
	ana := basic("ana", "s3cret")
	b.startOrder(t, "audited-1")

	if status, _, body := f.do(t, http.MethodPost, "/api/runs/audited-1/pause", `{"reason":"provider down"}`, ana); status != http.StatusAccepted {
		t.Fatalf("pause: %d %s", status, body)
	}
	b.waitStatus(t, "audited-1", "paused")
	if status, _, body := f.do(t, http.MethodPost, "/api/runs/audited-1/pause", `{}`, ana); status != http.StatusConflict {
		t.Fatalf("a second pause: %d %s, want 409", status, body)
	}
	p := f.auditEntries(t, ana, "?run=audited-1")
	if len(p.Entries) != 2 {
		t.Fatalf("audit entries of audited-1: %+v, want the pause and the refused pause", p.Entries)
	}
	refused, accepted := p.Entries[0], p.Entries[1]
	if accepted.Who != "ana" || accepted.Source != "console" || accepted.Action != "pause" || accepted.Run != "audited-1" ||
		accepted.Result != wire.AuditAccepted || accepted.Reason != "provider down" || !strings.HasPrefix(accepted.Remote, "127.0.0.1:") ||
		accepted.Command != "jetflow pause audited-1 --reason 'provider down' --nats nats://n1:4222" {
		t.Fatalf("the pause's entry: %+v", accepted)
	}
	if when, err := time.Parse(time.RFC3339Nano, accepted.Time); err != nil || time.Since(when) > time.Minute {
		t.Fatalf("the entry's time %q: %v", accepted.Time, err)
	}
	if refused.Result != wire.AuditRefused || !strings.Contains(refused.Detail, "409") || !strings.Contains(refused.Detail, "already paused") || refused.Seq <= accepted.Seq {
		t.Fatalf("the refused pause's entry: %+v", refused)
	}
	st, err := b.f.Client.Status(context.Background(), "audited-1")
	if err != nil || st.Operator != "ana (console)" {
		t.Fatalf("the run's operator: %+v, %v", st, err)
	}
	// Paged, newest first; filtered by who.
	one := f.auditEntries(t, ana, "?limit=1&run=audited-1")
	if len(one.Entries) != 1 || one.Entries[0].Seq != refused.Seq || one.Next == 0 {
		t.Fatalf("the first page of one: %+v", one)
	}
	older := f.auditEntries(t, ana, "?limit=1&run=audited-1&before="+jsonNumber(one.Next))
	if len(older.Entries) != 1 || older.Entries[0].Seq != accepted.Seq {
		t.Fatalf("the second page of one: %+v", older)
	}
	if nobody := f.auditEntries(t, ana, "?who=nobody"); len(nobody.Entries) != 0 {
		t.Fatalf("entries of nobody: %+v", nobody)
	}
	// A bulk job's entry names its filter, the job and the command.
	var job struct{ ID string }
	status, _, body := f.do(t, http.MethodPost, "/api/jobs", `{"operation":"resume","filter":{"workflow":"order","status":"paused"}}`, ana)
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &job) != nil {
		t.Fatalf("bulk resume: %d %s", status, body)
	}
	last := f.auditEntries(t, ana, "?limit=1").Entries[0]
	if last.Action != "jobs-create" || last.Job != job.ID || last.Filter == nil || last.Filter.Workflow != "order" || !strings.HasPrefix(last.Command, "jetflow resume --workflow order --status paused --yes") {
		t.Fatalf("the bulk job's entry: %+v", last)
	}
}

// TestAuditWriteFailureReported: when the audit stream cannot take the
// entry, the action still happens and its answer says the entry was not
// written.
func TestAuditWriteFailureReported(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	b.startOrder(t, "unaudited-1")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.f.JS.DeleteStream(ctx, b.f.Names.AuditStream()); err != nil {
		t.Fatal(err)
	}
	status, _, body := (&front{c: b.c, url: b.url}).do(t, http.MethodPost, "/api/runs/unaudited-1/pause", `{}`, nil)
	var answer struct {
		OK    bool   `json:"ok"`
		Audit string `json:"audit"`
	}
	if status != http.StatusAccepted || json.Unmarshal([]byte(body), &answer) != nil || !answer.OK || !strings.Contains(answer.Audit, "not written") {
		t.Fatalf("pause without an audit stream: %d %s, want 202 saying the entry was not written", status, body)
	}
	b.waitStatus(t, "unaudited-1", "paused")
}

func jsonNumber(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
