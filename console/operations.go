package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/step"
)

// The operator's actions on a run (docs/OPERATIONS.md): pause, resume,
// terminate and redrive, offered like cancel when the console takes
// actions.

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
		err = c.cfg.Client.Pause(r.Context(), l.sum.ID, req.Reason, operatorOf(r))
	case "resume":
		err = c.cfg.Client.Resume(r.Context(), l.sum.ID, req.Reason, operatorOf(r))
	default:
		err = c.cfg.Client.Terminate(r.Context(), l.sum.ID, req.Reason, operatorOf(r))
	}
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	c.log.Info("console: "+kind+" sent", slog.String("run_id", l.sum.ID), slog.String("reason", req.Reason), slog.String("remote", r.RemoteAddr))
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true})
}

// redriveRequest is the body of a redrive action.
type redriveRequest struct {
	Reason string `json:"reason"`
	// Revision moves the run to another deployed revision of its
	// workflow: "latest" or a revision; "" keeps its own.
	Revision string `json:"revision"`
}

// redriveWait bounds how long a redrive waits for a dispatcher to take
// it, so that a refusal is answered with its reason.
const redriveWait = 10 * time.Second

func (c *Console) apiRedrive(w http.ResponseWriter, r *http.Request) {
	var req redriveRequest
	if !c.checkAction(w, r, &req) {
		return
	}
	l, err := c.load(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	if l.st.Status != run.StatusFailed {
		writeError(w, http.StatusConflict, fmt.Sprintf("run %s is %s: only a failed run can be redriven", l.sum.ID, l.st.Status))
		return
	}
	var opts []client.RedriveOption
	if req.Revision != "" {
		to, err := c.redriveRevision(r.Context(), l, req.Revision)
		if err != nil {
			writeError(w, statusOf(err), err.Error())
			return
		}
		opts = append(opts, client.RedriveRevision(to))
	}
	seq, err := c.cfg.Client.Redrive(r.Context(), l.sum.ID, req.Reason, opts...)
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	c.log.Info("console: redrive sent", slog.String("run_id", l.sum.ID), slog.Uint64("seq", seq), slog.String("reason", req.Reason), slog.String("remote", r.RemoteAddr))
	ctx, cancel := context.WithTimeout(r.Context(), redriveWait)
	defer cancel()
	st, err := c.cfg.Client.Redriven(ctx, l.sum.ID, seq)
	switch {
	case errors.Is(err, client.ErrRedriveRefused):
		writeError(w, http.StatusConflict, err.Error())
	case err != nil:
		// Sent, not yet taken: the run page shows the outcome when it comes.
		writeJSON(w, http.StatusAccepted, map[string]any{"ok": true, "seq": seq})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "seq": seq, "status": st.Status})
	}
}

// redriveRevision resolves a redrive's revision ("latest" or a name) for
// the run and checks that it holds the run's document, as the dispatchers
// will (step.SameWorkflow).
func (c *Console) redriveRevision(ctx context.Context, l *loaded, revision string) (string, error) {
	asked := revision
	if revision == "latest" {
		asked = ""
	}
	to, err := c.defs.get(ctx, l.st.Workflow, asked)
	if err != nil {
		return "", fmt.Errorf("revision %q of workflow %s: %w", revision, l.st.Workflow, err)
	}
	if !step.SameWorkflow(l.def.wf, to.wf) {
		return "", fmt.Errorf("%w: revision %s of workflow %s runs another workflow than the run's revision %s; a redrive moves a run only to the same document redeployed (another task policy)",
			errBadRequest, to.dep.Revision, l.st.Workflow, l.st.Revision)
	}
	return to.dep.Revision, nil
}
