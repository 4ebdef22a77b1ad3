package console

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/jetflow/jetflow/engine/run"
)

// The operator's actions on a run (docs/OPERATIONS.md): pause, resume and
// terminate, offered like cancel when the console takes actions.

// operationRequest is the body of a pause, resume or terminate action.
type operationRequest struct {
	Reason string `json:"reason"`
}

func (c *Console) apiPause(w http.ResponseWriter, r *http.Request) {
	c.operate(w, r, "pause", func(l *loaded) string {
		if l.st.Status == run.StatusPaused {
			return "it is already paused"
		}
		return ""
	})
}

func (c *Console) apiResume(w http.ResponseWriter, r *http.Request) {
	c.operate(w, r, "resume", func(l *loaded) string {
		if l.st.Status != run.StatusPaused {
			return "it is " + string(l.st.Status) + ", not paused"
		}
		return ""
	})
}

func (c *Console) apiTerminate(w http.ResponseWriter, r *http.Request) {
	c.operate(w, r, "terminate", nil)
}

// operate checks and sends one operation; refuse says why the run's
// status refuses it ("" when it does not).
func (c *Console) operate(w http.ResponseWriter, r *http.Request, kind string, refuse func(*loaded) string) {
	var req operationRequest
	if !c.checkAction(w, r, &req) {
		return
	}
	if kind == "terminate" && strings.TrimSpace(req.Reason) == "" {
		writeError(w, http.StatusBadRequest, "a terminate needs a reason: say why the run is ended")
		return
	}
	l, ok := c.liveRun(w, r)
	if !ok {
		return
	}
	if refuse != nil {
		if why := refuse(l); why != "" {
			writeError(w, http.StatusConflict, fmt.Sprintf("run %s cannot take a %s: %s", l.sum.ID, kind, why))
			return
		}
	}
	var err error
	switch kind {
	case "pause":
		err = c.cfg.Client.Pause(r.Context(), l.sum.ID, req.Reason, "console")
	case "resume":
		err = c.cfg.Client.Resume(r.Context(), l.sum.ID, req.Reason, "console")
	default:
		err = c.cfg.Client.Terminate(r.Context(), l.sum.ID, req.Reason, "console")
	}
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	c.log.Info("console: "+kind+" sent", slog.String("run_id", l.sum.ID), slog.String("reason", req.Reason), slog.String("remote", r.RemoteAddr))
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true})
}
