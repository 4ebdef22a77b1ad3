package security

import (
	"slices"
	"testing"

	"github.com/jetflow/jetflow/subjects"
)

// TestAuditRoles: an audit writer may write one source's entries and
// nothing else; a reader reads the audit stream without a consumer.
func TestAuditRoles(t *testing.T) {
	t.Parallel()
	n := subjects.Must("p")
	w, err := AuditWriter(n, subjects.AuditConsole)
	if err != nil || !slices.Equal(w.Publish, []string{"p.audit.console.*"}) || len(w.Subscribe) != 0 {
		t.Fatalf("console audit writer: %+v, %v", w, err)
	}
	if _, err := AuditWriter(n, ">"); err == nil {
		t.Fatal("an audit writer of any source was granted")
	}
	r := AuditReader(n)
	if !slices.Equal(r.Publish, []string{"$JS.API.STREAM.INFO.p_audit", "$JS.API.DIRECT.GET.p_audit"}) {
		t.Fatalf("audit reader: %+v", r)
	}
}
