package otherlang

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// TestProtocolDocMatchesCode keeps docs/PROTOCOL.md honest: every name it
// shows is the one package subjects builds, every header is one package
// wire declares, and every JSON example decodes into its wire type with no
// field left over. When the wire format changes this fails; regenerate
// the examples with TestRawProtocolWorker -capture and update the document.
func TestProtocolDocMatchesCode(t *testing.T) {
	doc := string(readRepoFile(t, "docs/PROTOCOL.md"))
	n := subjects.Must("")
	for _, name := range []string{
		n.InputStream(), n.InputAll(), n.TimerStream(), n.ScheduleAll(), n.FiredAll(), n.Fired("remind-1"), n.FiredToTimer(),
		n.TaskStream(), n.TaskAll(), n.RunBucket(), n.WorkflowBucket(),
		n.Start("order-1001"), n.Event("order-1001", "payment"), n.Cancel("order-1002"), n.Result("order-1001"),
		n.Timer("remind-1"), n.ScheduleInstance("remind-1", "t1", "1"), n.RunInputs("order-1001"), n.Status("order-1001"),
		n.Pause("order-1003"), n.Terminate("order-1003"),
		n.Task("check-stock", "1"), n.TaskConsumer("check-stock", "1"), n.TaskConsumer("charge-card", "1.2.0"),
		"`" + n.DispatcherConsumer() + "`", subjects.VersionToken("2.0.0+build5"),
		wire.HeaderMsgID, wire.HeaderRunID, wire.HeaderActivation, wire.HeaderTimer, wire.HeaderDeadline,
		n.Expiry("order-1001"), wire.HeaderExpire,
	} {
		if !strings.Contains(doc, name) {
			t.Errorf("docs/PROTOCOL.md never mentions %q", name)
		}
	}

	counts := map[string]int{}
	line := regexp.MustCompile(`(\{".*\})` + "`?\\.?\\s*$")
	for i, l := range strings.Split(doc, "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil || strings.Contains(m[1], "…") || strings.Contains(m[1], `{"run","`) {
			continue // not an example, or a schema written as prose
		}
		var dst any
		kind := ""
		switch s := m[1]; {
		case strings.Contains(s, `"reply":`):
			kind, dst = "invocation", &wire.Invocation{}
		case strings.Contains(s, `"activation":`):
			kind, dst = "result", &wire.Result{}
		case strings.Contains(s, `"status":`):
			kind, dst = "status", &wire.Status{}
		case strings.HasPrefix(s, `{"timer":`):
			kind, dst = "timer", &wire.Timer{}
		case strings.HasPrefix(s, `{"workflow":`):
			kind, dst = "start", &wire.Start{}
		case strings.HasPrefix(s, `{"to":`):
			kind, dst = "reset", &wire.Reset{}
		case strings.Contains(s, `"operator":`):
			kind, dst = "operation", &wire.Operation{}
		case strings.HasPrefix(s, `{"reason":`):
			kind, dst = "cancel", &wire.Cancel{}
		default:
			continue // PubAcks, advisories, payloads, consumer info
		}
		if err := strictDecode(m[1], dst); err != nil {
			t.Errorf("docs/PROTOCOL.md:%d: the %s example does not decode as wire's: %v\n%s", i+1, kind, err, m[1])
		}
		counts[kind]++
	}
	for _, kind := range []string{"invocation", "result", "status", "timer", "start", "cancel", "operation", "reset"} {
		if counts[kind] == 0 {
			t.Errorf("docs/PROTOCOL.md has no %s example", kind)
		}
	}

	blocks := regexp.MustCompile("(?s)```json\n(\\{\n  \"state\".*?)```").FindAllStringSubmatch(doc, -1)
	if len(blocks) != 1 {
		t.Fatalf("docs/PROTOCOL.md has %d run record examples, want 1", len(blocks))
	}
	var rec runrecord.Record
	if err := strictDecode(blocks[0][1], &rec); err != nil {
		t.Errorf("the run record example does not decode as runrecord.Record: %v", err)
	}
	// Every field of the record is described in the document's table.
	raw := map[string]json.RawMessage{}
	if err := json.Unmarshal([]byte(blocks[0][1]), &raw); err != nil {
		t.Fatal(err)
	}
	for field := range raw {
		if !strings.Contains(doc, "| `"+field+"` |") {
			t.Errorf("the run record's field %q is not in the document's table", field)
		}
	}
}

func strictDecode(s string, v any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
