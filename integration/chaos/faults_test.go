package chaos

import (
	"context"
	"fmt"
	"time"
)

// chaos injects faults at random moments until ctx ends: SIGKILL of a
// dispatcher, a worker or a NATS node, each restarted after a random
// while, a task version paused for a while, and, with a netlab, a NATS
// node cut off from the others for a while. At most one NATS node is down or cut off at a time, and only
// once the cluster has fully recovered from the last such fault.
func (h *harness) chaos(ctx context.Context) {
	kinds := []string{kindDispatcher, kindWorker, kindNATS, faultTaskPause}
	if h.lab != nil {
		kinds = append(kinds, faultPartition)
	}
	for {
		if pause(ctx, h.uniform(h.m.faultGap)) != nil {
			return
		}
		kind := kinds[h.rng.IntN(len(kinds))]
		if kind == kindNATS || kind == faultPartition {
			if err := h.claimNATS(ctx); err != nil {
				h.logf("no NATS fault now (%v); a process kill instead", err)
				kind = []string{kindDispatcher, kindWorker}[h.rng.IntN(2)]
			}
		}
		switch kind {
		case kindDispatcher:
			h.killOne(h.dispatchers)
		case kindWorker:
			h.killOne(h.workers)
		case kindNATS:
			h.killNode(h.nodes[h.rng.IntN(len(h.nodes))])
		case faultPartition:
			h.cutNode(h.nodes[h.rng.IntN(len(h.nodes))])
		case faultTaskPause:
			h.pauseTask(ctx)
		}
	}
}

func (h *harness) uniform(r [2]time.Duration) time.Duration {
	return r[0] + time.Duration(h.rng.Int64N(int64(r[1]-r[0])+1))
}

// claimNATS reserves the right to take one NATS node away: none is away
// and the cluster is healthy.
func (h *harness) claimNATS(ctx context.Context) error {
	h.mu.Lock()
	busy := h.natsBusy
	h.mu.Unlock()
	if busy {
		return fmt.Errorf("a NATS node is still away")
	}
	if err := h.healthy(ctx); err != nil {
		return err
	}
	h.mu.Lock()
	h.natsBusy = true
	h.mu.Unlock()
	return nil
}

func (h *harness) releaseNATS() {
	h.mu.Lock()
	h.natsBusy = false
	h.mu.Unlock()
}

func (h *harness) addFault(kind, target string) *fault {
	f := &fault{kind: kind, target: target, at: time.Now()}
	h.mu.Lock()
	h.faults = append(h.faults, f)
	h.mu.Unlock()
	h.logf("fault %d: %s %s at +%s", len(h.faults), kind, target, f.at.Sub(h.began).Round(time.Millisecond))
	return f
}

func (h *harness) backgroundError(err error) {
	h.mu.Lock()
	h.errs = append(h.errs, err)
	h.mu.Unlock()
	h.logf("error: %v", err)
}

// killOne SIGKILLs a random running process of ps and restarts it after
// a random downtime.
func (h *harness) killOne(ps []*proc) {
	var p *proc
	for _, i := range h.rng.Perm(len(ps)) {
		if ps[i].claim() {
			p = ps[i]
			break
		}
	}
	if p == nil {
		return
	}
	f := h.addFault(p.kind, p.name)
	if err := p.kill(); err != nil {
		h.backgroundError(err)
		p.release()
		return
	}
	down := h.uniform(h.m.procDown)
	h.restarts.Go(func() {
		defer p.release()
		time.Sleep(down)
		if err := h.startRetrying(p); err != nil {
			h.backgroundError(fmt.Errorf("restart of %s: %w", p.name, err))
			return
		}
		f.back = time.Now()
	})
}

// killNode SIGKILLs a NATS node and restarts it on its ports and store
// after a random downtime. The caller holds the NATS claim; it is
// released once the node runs again.
func (h *harness) killNode(n *node) {
	f := h.addFault(kindNATS, n.name)
	if err := n.kill(); err != nil {
		h.backgroundError(err)
		h.releaseNATS()
		return
	}
	down := h.uniform(h.m.natsDown)
	h.restarts.Go(func() {
		defer h.releaseNATS()
		time.Sleep(down)
		if err := h.startRetrying(n.proc); err != nil {
			h.backgroundError(fmt.Errorf("restart of %s: %w", n.name, err))
			return
		}
		f.back = time.Now()
	})
}

// cutNode cuts a NATS node off from the others for a random while. The
// caller holds the NATS claim; it is released once the routes are back.
func (h *harness) cutNode(n *node) {
	f := h.addFault(faultPartition, n.name)
	if err := h.lab.cut(n.index); err != nil {
		h.backgroundError(err)
		_ = h.lab.heal(n.index)
		h.releaseNATS()
		return
	}
	hold := h.uniform(h.m.cutFor)
	h.restarts.Go(func() {
		defer h.releaseNATS()
		time.Sleep(hold)
		if err := h.lab.heal(n.index); err != nil {
			h.backgroundError(fmt.Errorf("heal %s: %w", n.name, err))
			return
		}
		f.back = time.Now()
	})
}

// recover waits for the pending restarts and heals, makes sure every
// process runs, and waits until the cluster is healthy again.
func (h *harness) recover(ctx context.Context) error {
	h.restarts.Wait()
	for _, group := range [][]*proc{h.nodeProcs(), h.dispatchers, h.workers} {
		for _, p := range group {
			if !p.running() {
				if err := h.startRetrying(p); err != nil {
					return err
				}
			}
		}
	}
	return waitFor(ctx, 2*time.Minute, h.healthy)
}
