package fault

// Code is a stable diagnosis code. It is itself an error so that
// errors.Is(err, fault.JF2014) reads naturally.
type Code string

func (c Code) Error() string { return string(c) }

// Meaning returns the one-line meaning of a code, or "" for an unknown code.
func (c Code) Meaning() string { return meanings[c] }

// Flow compile codes (JF0xxx) and runtime codes (JF2xxx), as the reference
// declares them in FLOW-FORMAT §5.
const (
	JF0001 Code = "JF0001"
	JF0002 Code = "JF0002"
	JF0003 Code = "JF0003"
	JF0004 Code = "JF0004"
	JF0005 Code = "JF0005"
	JF0006 Code = "JF0006"
	JF0007 Code = "JF0007"
	JF0008 Code = "JF0008"
	JF0009 Code = "JF0009"
	JF0010 Code = "JF0010"
	JF0011 Code = "JF0011"
	JF0012 Code = "JF0012"
	JF0013 Code = "JF0013"
	JF0014 Code = "JF0014"
	JF0015 Code = "JF0015"
	JF0016 Code = "JF0016"
	JF0017 Code = "JF0017"
	JF0018 Code = "JF0018"
	JF0019 Code = "JF0019"
	JF0020 Code = "JF0020"
	JF0021 Code = "JF0021"
	JF0022 Code = "JF0022"
	JF2001 Code = "JF2001"
	JF2002 Code = "JF2002"
	JF2003 Code = "JF2003"
	JF2004 Code = "JF2004"
	JF2005 Code = "JF2005"
	JF2006 Code = "JF2006"
	JF2007 Code = "JF2007"
	JF2008 Code = "JF2008"
	JF2009 Code = "JF2009"
	JF2010 Code = "JF2010"
	JF2011 Code = "JF2011"
	JF2012 Code = "JF2012"
	JF2013 Code = "JF2013"
	JF2014 Code = "JF2014"
	JF2015 Code = "JF2015"
	JF2016 Code = "JF2016"
)

var meanings = map[Code]string{
	JF0001: "the document is not an object, or $fsm is not 0.1",
	JF0002: "states is not an array, or a state entry is malformed",
	JF0003: "two state entries share one id",
	JF0004: "initial is neither null nor a declared state id",
	JF0005: "transitions is not an array, or an entry is malformed",
	JF0006: "a transition from/to names no declared state",
	JF0007: "a guard failed to compile as a query document",
	JF0008: "an effects list or effect descriptor is malformed",
	JF0009: "an effect with failed to compile as a query document",
	JF0010: "the dag document is not an object, or $dag is not 0.1",
	JF0011: "nodes is not an object, or a node declaration is malformed",
	JF0012: "edges is not an array, or an edge entry is malformed",
	JF0013: "an edge from/to names no declared node",
	JF0014: "an embedded document failed to compile",
	JF0015: "the wiring rules are violated",
	JF0016: "the graph has a cycle",
	JF0017: "the document does not declare exactly one output node",
	JF0018: "a task node names a handler the registry does not provide",
	JF0019: "a task node and its registered handler disagree about the handler version",
	JF0020: "a statechart declaration violates hierarchy or transition rules",
	JF0021: "a workflow declaration or reference is malformed",
	JF0022: "an automatic workflow cycle has no declared visit bound",
	JF2001: "a state id the machine does not declare",
	JF2002: "step was called with a non-string event",
	JF2003: "a guard threw while evaluating",
	JF2004: "an effect with threw while evaluating",
	JF2005: "a session was created with no start state",
	JF2006: "a dag node failed while evaluating; the run rejects",
	JF2007: "the caller signal aborted the run",
	JF2008: "a declared checkpoint value is not JSON-serializable",
	JF2009: "the checkpoint store failed",
	JF2010: "a statechart snapshot is malformed or has an illegal configuration",
	JF2011: "explicit time moved backwards or a timer exceeded its numeric range",
	JF2012: "a statechart exceeded its microstep limit",
	JF2013: "a checkpoint belongs to a different workflow, input or task implementation",
	JF2014: "a workflow run is busy or its snapshot generation is stale",
	JF2015: "a workflow state exceeded its declared visit bound",
	JF2016: "a workflow snapshot is malformed or execution could not progress",
}
