package subjects

// Pause is where an operator's request to pause a run goes.
func (n Names) Pause(runID string) string { return n.prefix + ".in." + runID + "." + KindPause }

// Resume is where an operator's request to resume a paused run goes.
func (n Names) Resume(runID string) string { return n.prefix + ".in." + runID + "." + KindResume }

// Terminate is where an operator's request to end a run at once goes.
func (n Names) Terminate(runID string) string {
	return n.prefix + ".in." + runID + "." + KindTerminate
}

// Postpone is where a dispatcher asks a run to start over the due
// attempts of a paused task version.
func (n Names) Postpone(runID string) string {
	return n.prefix + ".in." + runID + "." + KindPostpone
}
