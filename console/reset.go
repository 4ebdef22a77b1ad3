package console

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/jetflow/jetflow/engine/run"
)

// The operator's reset (docs/OPERATIONS.md#reset): the history timeline
// offers, on each input the run took, to take the run back to its state
// after it, and shows the equivalent command.

// resetRequest is the body of a reset action: the stream sequence of the
// input whose state the run goes back to.
type resetRequest struct {
	To     uint64 `json:"to"`
	Reason string `json:"reason"`
}

// apiReset sends a reset. Settled runs may be reset (that is how one is
// rerun from a step); a paused one is refused here, as the dispatchers
// would. Whether the point can be gone back to, the dispatchers judge:
// their verdict is on the run's record and history.
func (c *Console) apiReset(w http.ResponseWriter, r *http.Request) {
	var req resetRequest
	if !c.checkAction(w, r, &req) {
		return
	}
	if req.To == 0 {
		writeError(w, http.StatusBadRequest, "a reset needs to: the stream sequence of the input whose state the run goes back to")
		return
	}
	l, err := c.load(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	if l.st.Status == run.StatusPaused {
		writeError(w, http.StatusConflict, fmt.Sprintf("run %s is paused: resume it first (a reset would drop the inputs it holds)", l.sum.ID))
		return
	}
	seq, err := c.cfg.Client.Reset(r.Context(), l.sum.ID, req.To, req.Reason, operatorOf(r))
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	c.log.Info("console: reset sent", slog.String("run_id", l.sum.ID), slog.Uint64("to", req.To), slog.String("reason", req.Reason), slog.String("remote", r.RemoteAddr))
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true, "seq": seq, "command": c.resetCommand(l.sum.ID, req.To)})
}

// resetCommand is the jetflow command line that sends the same reset.
func (c *Console) resetCommand(id string, to uint64) string {
	flags := c.commandsFor(id, nil).Flags
	return strings.TrimSpace("jetflow reset " + shellQuote(id) + " --to " + strconv.FormatUint(to, 10) + " " + flags)
}
