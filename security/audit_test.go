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

// TestScheduleRoles: the scheduler writes definitions and triggers, never
// fires, state or runs' inputs; the dispatcher's schedule runner writes
// state, delays and starts, never a definition or a fire.
func TestScheduleRoles(t *testing.T) {
	t.Parallel()
	n := subjects.Must("p")
	s := Scheduler(n)
	for _, want := range []string{"p.schedule.*.def", "p.schedule.*.trigger", "$JS.API.STREAM.PURGE.p_schedules"} {
		if !slices.Contains(s.Publish, want) {
			t.Errorf("scheduler lacks %s: %v", want, s.Publish)
		}
	}
	for _, bad := range []string{"p.schedule.*.fire", "p.schedule.*.state", "p.in.*.start", ">"} {
		if slices.Contains(s.Publish, bad) {
			t.Errorf("scheduler may publish %s", bad)
		}
	}
	d := Dispatcher(n, "d")
	for _, bad := range []string{"p.schedule.*.def", "p.schedule.*.fire", "p.schedule.*.trigger", "$JS.API.STREAM.PURGE.p_schedules"} {
		if slices.Contains(d.Publish, bad) {
			t.Errorf("dispatcher may publish %s", bad)
		}
	}
	for _, want := range []string{"p.schedule.*.state", "p.schedule.*.jit.*", "p.in.*.start", "$JS.ACK.p_schedules.scheduler.>"} {
		if !slices.Contains(d.Publish, want) {
			t.Errorf("dispatcher lacks %s", want)
		}
	}
}
