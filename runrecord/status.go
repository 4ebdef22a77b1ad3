package runrecord

import (
	"strconv"

	"github.com/jetflow/jetflow/wire"
)

// parseStatus reads a run status in the layout json.Marshal writes for
// wire.Status (members in field order, the omitempty ones only when set),
// with plain ASCII strings: every status a dispatcher stores, read
// without reflection (it was about half of decoding a record). It reports
// false for anything else, which encoding/json then reads.
func parseStatus(data []byte) (*wire.Status, bool) {
	p := recParser{d: data}
	s := &wire.Status{}
	ok := p.byte('{') && p.key("run") && p.string(&s.Run) &&
		p.next("workflow") && p.string(&s.Workflow) &&
		p.next("revision") && p.string(&s.Revision) &&
		p.next("status") && p.string(&s.Status)
	if ok && p.next("state") {
		ok = p.string(&s.State) && s.State != ""
	}
	if ok && p.next("result") {
		var raw []byte
		// json.RawMessage keeps a copy; null is a value it keeps too.
		ok = p.raw(&raw)
		s.Result = append([]byte(nil), raw...)
	}
	if ok && p.next("error") {
		e := &wire.RunError{}
		ok = p.byte('{') && p.key("code") && p.string(&e.Code) &&
			p.next("path") && p.string(&e.Path) &&
			p.next("message") && p.string(&e.Message) && p.byte('}')
		s.Error = e
	}
	ok = ok && p.next("time") && p.float(&s.Time)
	if ok && p.next("since") {
		ok = p.float(&s.Since) && s.Since != 0
	}
	if ok && p.next("reason") {
		ok = p.string(&s.Reason) && s.Reason != ""
	}
	if ok && p.next("operator") {
		ok = p.string(&s.Operator) && s.Operator != ""
	}
	if !ok || !p.byte('}') {
		return nil, false
	}
	p.ws()
	return s, p.i == len(p.d)
}

// float reads a JSON number as encoding/json reads it into a float64.
func (p *recParser) float(f *float64) bool {
	p.ws()
	start := p.i
	if !p.skipNumber() {
		return false
	}
	v, err := strconv.ParseFloat(string(p.d[start:p.i]), 64)
	*f = v
	return err == nil
}
