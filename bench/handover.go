package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// HandoverReport is how long a killed dispatcher's partitions wait for
// another to take them: from the SIGKILL to the first input of each of
// its partitions applied afterwards (the first status a run started
// after the kill announces), while runs are started at a steady rate.
type HandoverReport struct {
	// Partitions is the input stream's partition count; Killed the
	// partitions the killed process owned.
	Partitions int   `json:"partitions"`
	Killed     []int `json:"killed"`
	// PauseMS are the pauses, one per killed partition that saw an input
	// applied within the wait; P50 and P99 summarise them.
	PauseMS []float64 `json:"pause_ms"`
	P50     float64   `json:"p50_ms"`
	P99     float64   `json:"p99_ms"`
	// Missed counts killed partitions with no input applied within the
	// wait (two ack waits).
	Missed int `json:"missed"`
	// AckWaitMS is the dispatchers' AckWait: the recovery of an input a
	// killed dispatcher held, and the bound the pause must stay under.
	AckWaitMS float64 `json:"ack_wait_ms"`
}

// handover SIGKILLs the dispatcher process that owns the most partitions
// while runs of the event scenario's workflow start every few
// milliseconds, and measures how long each of its partitions waits for
// its next applied input. The process is gone afterwards.
func (r *runner) handover(ctx context.Context) (*HandoverReport, error) {
	in, err := r.drv.js.Stream(ctx, r.drv.names.InputStream())
	if err != nil {
		return nil, fmt.Errorf("bench: handover: %w", err)
	}
	rep := &HandoverReport{Partitions: subjects.PartitionCount(in.CachedInfo().Config.Metadata), AckWaitMS: ms(dispatcher.DefaultAckWait)}
	if rep.Partitions == 0 {
		return nil, nil
	}
	var dispatchers []*agentProc
	for _, p := range r.dep.procs {
		if p.role == roleDispatcher {
			dispatchers = append(dispatchers, p)
		}
	}
	if len(dispatchers) < 2 {
		return nil, nil
	}
	// Who owns what, from the heartbeats.
	var mu sync.Mutex
	owns := map[int][]int{}
	sub, err := r.drv.nc.Subscribe(r.drv.names.DispatcherHeartbeats(), func(m *nats.Msg) {
		var hb wire.DispatcherHeartbeat
		if json.Unmarshal(m.Data, &hb) == nil && !hb.Leaving {
			mu.Lock()
			owns[hb.Pid] = hb.Owns
			mu.Unlock()
		}
	})
	if err != nil {
		return nil, fmt.Errorf("bench: handover: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	var victim *agentProc
	deadline := time.Now().Add(time.Minute)
	for victim == nil {
		mu.Lock()
		total, most := 0, 0
		for _, p := range dispatchers {
			total += len(owns[p.pid()])
			if n := len(owns[p.pid()]); n > most {
				most, victim = n, p
			}
		}
		if total != rep.Partitions {
			victim = nil
		} else {
			rep.Killed = slices.Clone(owns[victim.pid()])
		}
		mu.Unlock()
		if victim == nil {
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("bench: handover: the dispatchers' heartbeats do not cover the %d partitions: %v", rep.Partitions, owns)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// The first status of each run started by the load below.
	w := workloads[Event]
	var (
		amu     sync.Mutex
		applied = map[string]time.Time{}
	)
	hook := func(runID string, a announcement) {
		amu.Lock()
		if _, ok := applied[runID]; !ok {
			applied[runID] = a.at
		}
		amu.Unlock()
	}
	r.drv.hook.Store(&hook)
	defer r.drv.hook.Store(nil)
	type started struct {
		id string
		at time.Time
	}
	var (
		smu   sync.Mutex
		runs  []started
		lctx  context.Context
		stop  context.CancelFunc
		loads sync.WaitGroup
	)
	lctx, stop = context.WithCancel(ctx)
	defer stop()
	loads.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-lctx.Done():
				return
			case <-tick.C:
			}
			id := w.code + "-handover-" + strconv.Itoa(i)
			at := time.Now()
			if r.drv.cl.StartRun(lctx, w.workflow, id, w.input) == nil {
				smu.Lock()
				runs = append(runs, started{id, at})
				smu.Unlock()
			}
		}
	})
	defer loads.Wait()
	time.Sleep(time.Second)
	killed := time.Now()
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return nil, fmt.Errorf("bench: handover: kill dispatcher %s: %w", victim.name, err)
	}
	_ = victim.cmd.Wait()
	r.dep.procs = slices.DeleteFunc(r.dep.procs, func(p *agentProc) bool { return p == victim })

	wait := 2 * dispatcher.DefaultAckWait
	first := map[int]time.Duration{}
	for end := killed.Add(wait); len(first) < len(rep.Killed) && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
		smu.Lock()
		amu.Lock()
		for _, s := range runs {
			p := subjects.Partition(s.id, rep.Partitions)
			at, ok := applied[s.id]
			if !ok || s.at.Before(killed) || !slices.Contains(rep.Killed, p) {
				continue
			}
			if pause := at.Sub(killed); first[p] == 0 || pause < first[p] {
				first[p] = pause
			}
		}
		amu.Unlock()
		smu.Unlock()
	}
	stop()
	for _, p := range rep.Killed {
		if pause, ok := first[p]; ok {
			rep.PauseMS = append(rep.PauseMS, ms(pause))
		} else {
			rep.Missed++
		}
	}
	slices.Sort(rep.PauseMS)
	if n := len(rep.PauseMS); n > 0 {
		rep.P50 = rep.PauseMS[n/2]
		rep.P99 = rep.PauseMS[min(n-1, n*99/100)]
	}
	return rep, nil
}
