package chaos

import (
	"context"
	"time"

	"github.com/jetflow/jetflow/provision"
)

// faultTaskPause is a task version paused for the whole deployment
// (`jetflow task pause`) for a while, then resumed. Its attempts must be
// postponed, not spent: no run may fail or change its result for it.
const faultTaskPause = "task pause"

// pausable are the task versions the workflows invoke.
var pausable = [][2]string{{"square", "1"}, {"neg", "1"}, {"fail", "1"}, {"double", "1"}, {"inc", "1"}}

// taskPauseFor is how long a task version stays paused: longer than an
// attempt's timeout (4 s), so that deadlines fire while it is paused and
// the attempts are postponed.
var taskPauseFor = [2]time.Duration{3 * time.Second, 9 * time.Second}

// pauseTask pauses a random task version unless one is paused already,
// and resumes it after a random while. The pause also ends by itself a
// little later (--until), in case the resume is lost to a NATS fault.
func (h *harness) pauseTask(ctx context.Context) {
	h.mu.Lock()
	busy := h.taskPaused
	h.taskPaused = true
	h.mu.Unlock()
	if busy {
		return
	}
	release := func() {
		h.mu.Lock()
		h.taskPaused = false
		h.mu.Unlock()
	}
	tv := pausable[h.rng.IntN(len(pausable))]
	hold := h.uniform(taskPauseFor)
	if err := retryFor(ctx, func(ctx context.Context) error {
		_, err := provision.PauseTask(ctx, h.f.JS, h.names, tv[0], tv[1], time.Now().Add(hold+5*time.Second))
		return err
	}); err != nil {
		h.logf("no task pause now (%v)", err)
		release()
		return
	}
	f := h.addFault(faultTaskPause, tv[0]+"@"+tv[1])
	h.restarts.Go(func() {
		defer release()
		time.Sleep(hold)
		// The chaos may be over: the resume still has to happen.
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := retryFor(rctx, func(ctx context.Context) error {
			return provision.ResumeTask(ctx, h.f.JS, h.names, tv[0], tv[1])
		}); err != nil {
			h.logf("resume of %s@%s failed (%v); its pause ends by itself", tv[0], tv[1], err)
			return
		}
		f.back = time.Now()
	})
}
