package dispatcher

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A dispatcher bounds the inputs it holds in hand (received, not yet
// stepped) itself, per lane, rather than leaving it to the consumers'
// MaxAckPending. An input in hand ages towards AckWait while it waits its
// turn, and the server delivers it again once AckWait is over, however
// busy the dispatcher is: a dispatcher that takes in more than it steps
// within AckWait holds every input twice, then three times. With P
// partition consumers, each with the whole MaxAckPending (65,536), one
// dispatcher could take P times that; parking 300,000 runs it held
// 229,000 starts, 2 GB, all redelivered every 30 s.
//
// So the ready lane (lanes.go) holds at most what it steps in a quarter
// of AckWait at the rate it stepped lately, never fewer than
// 4 × Concurrency and 64 (enough to keep every step goroutine busy while
// the rate is measured) nor more than MaxAckPending. An input that finds
// its lane full waits in the consumer's callback: that partition's
// consumer stops asking the server for more (nats.go pulls again only
// once the callback returns), so the server keeps the rest, with no
// AckWait running, and the other partitions go on.
//
// The stray lane holds up to MaxAckPending whatever its rate, on a budget
// of its own: stray inputs (a flood of them, or the events of runs parked
// long enough to leave the cache) never take the ready lane's places, and
// a flood of up to MaxAckPending of them is taken in at once, so that the
// inputs of good runs behind it in its partitions do not wait for it to
// be stepped (a smaller stray bound made them wait for the flood's
// progress: TestFloodOfStrayInputs). Inputs handed back to wait for
// their run's start (early.go) are not in hand: they hold a place only
// in the server's window, whose MaxAckPending each partition consumer
// keeps whole, and there are at most MaxEarlyInputs of them.
//
// What keeps the inputs in hand from being delivered again is
// keepInHand: an input still in hand half an AckWait after it came, or
// was last kept, is marked in progress, which starts its AckWait again.
// Strays waiting behind a flood need it; ready inputs need it when the
// machine slows down at once, since their bound follows a rate a second
// old (measured: from 35 to 5 steps a second within ten seconds). One
// small message per input kept; a dispatcher killed meanwhile leaves its
// inputs to come back after AckWait, as before.

// Lanes, as indices of intake.lanes.
const (
	laneReady = 0
	laneStray = 1
)

func laneOf(stray bool) int {
	if stray {
		return laneStray
	}
	return laneReady
}

// intakeSample is how often the lanes' rates, and so their bounds, are
// measured again.
const intakeSample = time.Second

// intake is the lanes' flow control; the dispatcher's qmu guards it.
type intake struct {
	lanes   [2]laneIntake
	sampled time.Time
	kept    int // inputs kept in hand past half an AckWait since Start
}

type laneIntake struct {
	held    int        // inputs received into the lane and not yet stepped
	peak    int        // the most held at once since Start
	limit   int        // the bound on held
	top     int        // the highest bound since Start
	handled int        // inputs stepped since sampled
	rate    float64    // inputs stepped per second, rises smoothed
	waiting int        // receive callbacks waiting for a place
	room    *sync.Cond // on qmu: the lane has a place
}

func (in *intake) init(mu *sync.Mutex, cfg Config) {
	for i := range in.lanes {
		in.lanes[i].room = sync.NewCond(mu)
	}
	in.reset(cfg)
}

// reset starts a dispatcher's run with empty lanes at the floor.
func (in *intake) reset(cfg Config) {
	for i := range in.lanes {
		l := &in.lanes[i]
		l.held, l.peak, l.handled, l.rate = 0, 0, 0, 0
		l.limit = intakeLimit(cfg, i, 0)
		l.top = l.limit
	}
	// Wall time, not Config.Clock: the bound follows how fast this
	// process really steps, and AckWait runs on the server's clock.
	in.sampled, in.kept = time.Now(), 0
}

// intakeLimit is a lane's bound for a rate of steps per second: the
// stray lane's is MaxAckPending whatever the rate.
func intakeLimit(cfg Config, lane int, rate float64) int {
	if lane == laneStray {
		return cfg.MaxAckPending
	}
	floor := min(cfg.MaxAckPending, max(64, 4*cfg.Concurrency))
	return min(cfg.MaxAckPending, max(floor, int(rate*cfg.AckWait.Seconds()/4)))
}

// full reports whether lane has no place left.
func (in *intake) full(lane int) bool {
	l := &in.lanes[lane]
	return l.held >= l.limit
}

// wait waits for a place in lane; qmu is held.
func (in *intake) wait(lane int) {
	l := &in.lanes[lane]
	l.waiting++
	l.room.Wait()
	l.waiting--
}

// pass passes on a wake-up for a place in lane that the woken callback
// did not take (its input turned out to belong to the other lane).
func (in *intake) pass(lane int) {
	if l := &in.lanes[lane]; l.waiting > 0 && l.held < l.limit {
		l.room.Signal()
	}
}

// take counts an input into lane.
func (in *intake) take(lane int) {
	l := &in.lanes[lane]
	l.held++
	l.peak = max(l.peak, l.held)
}

// stepped counts an input of lane out after its step, and measures the
// rates again once a sample is due.
func (in *intake) stepped(cfg Config, lane int) {
	l := &in.lanes[lane]
	l.held--
	l.handled++
	if now := time.Now(); now.Sub(in.sampled) >= intakeSample {
		secs := now.Sub(in.sampled).Seconds()
		for i := range in.lanes {
			s := &in.lanes[i]
			// A drop counts at once, a rise by halves: a lane that
			// slowed must not keep the bound of its faster second.
			if r := float64(s.handled) / secs; r < s.rate {
				s.rate = r
			} else {
				s.rate = (s.rate + r) / 2
			}
			s.handled = 0
			s.limit = intakeLimit(cfg, i, s.rate)
			s.top = max(s.top, s.limit)
		}
		in.sampled = now
		in.wakeAll()
		return
	}
	if l.waiting > 0 && l.held < l.limit {
		l.room.Signal()
	}
}

// moved counts n inputs of a run that left the stray lane for ready.
func (in *intake) moved(n int) {
	in.lanes[laneStray].held -= n
	r := &in.lanes[laneReady]
	r.held += n
	r.peak = max(r.peak, r.held)
	in.wakeAll()
}

// wakeAll wakes every waiting callback: the bounds changed, or the
// dispatcher is stopping.
func (in *intake) wakeAll() {
	for i := range in.lanes {
		in.lanes[i].room.Broadcast()
	}
}

// heldMsg is an input in hand, and when its AckWait last started.
type heldMsg struct {
	m  jetstream.Msg
	at time.Time
}

// keepInHand keeps the inputs in hand for half an AckWait or more, every
// quarter AckWait, until quit is closed.
func (d *Dispatcher) keepInHand(quit <-chan struct{}) {
	tick := time.NewTicker(d.cfg.AckWait / 4)
	defer tick.Stop()
	var late []jetstream.Msg
	for {
		select {
		case <-quit:
			return
		case <-tick.C:
		}
		now := time.Now()
		d.qmu.Lock()
		for _, q := range d.queues {
			for i := range q.msgs {
				if h := &q.msgs[i]; now.Sub(h.at) >= d.cfg.AckWait/2 {
					late = append(late, h.m)
					h.at = now
				}
			}
		}
		d.intake.kept += len(late)
		d.qmu.Unlock()
		for i, m := range late {
			_ = m.InProgress()
			late[i] = nil
		}
		late = late[:0]
	}
}

// inHand reports, for tests, the most each lane held at once, the
// highest bound it had and how many inputs were kept, since Start.
func (d *Dispatcher) inHand() (peak, top [2]int, kept int) {
	d.qmu.Lock()
	defer d.qmu.Unlock()
	for i, l := range d.intake.lanes {
		peak[i], top[i] = l.peak, l.top
	}
	return peak, top, d.intake.kept
}
