package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/wire"
)

// Codes of refused starts.
const (
	CodeSingletonActive = "SINGLETON_ACTIVE" // 409: another run holds the start's singleton key
)

// startOptions maps a start request's controls to the client's options,
// which the dispatchers decide on as they do for every start
// (docs/STARTS.md); a control they would refuse is answered here, naming
// its member.
func startOptions(req *StartRequest) ([]client.StartOption, *Error) {
	var opts []client.StartOption
	var body wire.Start
	if req.IdempotencyKey != "" {
		opts = append(opts, client.WithIdempotencyKey(req.IdempotencyKey))
	}
	if req.Singleton != "" {
		opts = append(opts, client.WithSingleton(req.Singleton, req.SingletonMode))
	} else if req.SingletonMode != "" {
		return nil, invalid("/singletonMode", "singletonMode says what to do while a run of the singleton key is active: give singleton (the key) too")
	}
	if req.Debounce != nil {
		opts = append(opts, func(s *wire.Start) { s.Debounce = req.Debounce })
	}
	for _, o := range opts {
		o(&body)
	}
	if err := body.CheckControls(); err != nil {
		return nil, invalid(controlPointer(req), err.Error())
	}
	return opts, nil
}

// controlPointer is the member a refused control is most likely in.
func controlPointer(req *StartRequest) string {
	switch {
	case req.Debounce != nil:
		return "/debounce"
	case req.Singleton != "" || req.SingletonMode != "":
		return "/singleton"
	}
	return "/idempotencyKey"
}

// awaitStart waits for the dispatchers' decision on a start with
// controls and fills in the answer; it answers (and returns true) a
// refusal or a failure.
func (g *Gateway) awaitStart(ctx context.Context, w http.ResponseWriter, r *http.Request, req *StartRequest, mark uint64, ans *Started) bool {
	out, err := g.client.AwaitStart(ctx, req.ID, mark)
	switch {
	case errors.Is(err, client.ErrStartRefused):
		writeError(w, &Error{
			Status: http.StatusConflict, Code: CodeSingletonActive, Run: out.Decision.Run, Pointer: "/singleton",
			Message: fmt.Sprintf("run %s holds singleton key %q and has not settled: this start is refused (retry once it settles, or set singletonMode queue)", out.Decision.Run, req.Singleton),
		})
		return true
	case errors.Is(err, client.ErrUndecided):
		ans.Decision = "pending"
		return false
	case err != nil:
		g.natsError(w, r, "start "+req.ID, err)
		return true
	}
	ans.Run = out.Run
	if d := out.Decision; d != nil {
		ans.Decision = d.Outcome
		ans.Duplicate = d.Outcome == wire.StartOutcomeDuplicate
		if d.Outcome != wire.StartOutcomeDuplicate {
			ans.Because = d.Run
		}
		ans.Due = d.Due
	}
	return false
}
