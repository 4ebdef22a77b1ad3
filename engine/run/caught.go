package run

import "github.com/jetflow/jetflow/engine/fault"

// Caught is a failure a work state's catch recovered from. Taking the
// catch makes {"error": {"code", "message", "nodeId"}} the state's result
// and the run's data (complete), so a run whose data still holds it
// ended, or waits, through that catch.
type Caught struct {
	Code    string
	Message string
	// Node is the DAG node that failed, "" when the failure names none.
	Node string
}

// CaughtIn returns the caught failure v (a work state's result, or a
// run's data) holds, nil for any other value.
func CaughtIn(v any) *Caught {
	m, _ := v.(map[string]any)
	e, _ := m["error"].(map[string]any)
	if len(m) != 1 || e == nil || e["code"] != string(fault.JF2006) {
		return nil
	}
	c := &Caught{Code: string(fault.JF2006)}
	c.Message, _ = e["message"].(string)
	c.Node, _ = e["nodeId"].(string)
	return c
}
