package chaos

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// mode is how long and how hard the harness runs.
type mode struct {
	name string
	// chaos is how long runs are started and faults injected; settle
	// bounds how long everything then has to finish.
	chaos, settle time.Duration
	// rate is how many runs start per second.
	rate float64
	// faultGap is the pause between two faults; procDown how long a
	// killed dispatcher or worker stays down, natsDown a killed NATS node,
	// cutFor a cut-off one.
	faultGap, procDown, natsDown, cutFor [2]time.Duration
}

// chooseMode picks the short mode (CI) unless -duration asks for more.
func chooseMode() mode {
	m := mode{
		name: "short", chaos: 50 * time.Second, settle: 100 * time.Second, rate: 3,
		faultGap: [2]time.Duration{2 * time.Second, 5 * time.Second},
		procDown: [2]time.Duration{200 * time.Millisecond, 3 * time.Second},
		natsDown: [2]time.Duration{time.Second, 6 * time.Second},
		// Raft elects new leaders after 4 to 9 s without the old one, so
		// most cuts outlast an election.
		cutFor: [2]time.Duration{5 * time.Second, 12 * time.Second},
	}
	if *flagDuration > 0 {
		m.name, m.chaos, m.settle, m.rate = "long", *flagDuration, 3*time.Minute, 5
		m.faultGap = [2]time.Duration{2 * time.Second, 8 * time.Second}
		m.cutFor = [2]time.Duration{5 * time.Second, 20 * time.Second}
	}
	if *flagRate > 0 {
		m.rate = *flagRate
	}
	return m
}

// TestChaos runs the deployment under faults and checks that nothing was
// lost or applied twice (check_test.go), then prints the summary.
func TestChaos(t *testing.T) {
	m := chooseMode()
	seed := uint64(*flagSeed)
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	partitions := false
	switch *flagPartitions {
	case "off":
	case "on", "auto":
		err := netnsProbe()
		partitions = err == nil
		switch {
		case err != nil && *flagPartitions == "on":
			t.Fatalf("-partitions=on: %v", err)
		case err != nil:
			t.Logf("partitions skipped: %v", err)
		}
	default:
		t.Fatalf("-partitions must be auto, on or off, got %q", *flagPartitions)
	}
	t.Logf("chaos %s mode: %s of faults at %.1f runs/s, partitions %v, misbehaviour on %.0f%% of the protocol worker's attempts, seed %d (rerun with -seed %d)",
		m.name, m.chaos, m.rate, partitions, *flagMisbehave*100, seed, seed)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := newHarness(t, m, seed, partitions)
	jetflow := h.buildJetflow()
	h.startCluster(ctx)
	h.startServices(jetflow)
	t.Logf("deployment up in %s: nodes %s", time.Since(h.began).Round(time.Millisecond), h.urls)
	var err error
	if h.watch, err = h.startWatcher(ctx); err != nil {
		t.Fatal(err)
	}

	d := &driver{client: h.client, store: h.f.Runs, log: h.log, rng: rand.New(rand.NewPCG(seed, 1))}
	if err := h.createSchedules(ctx); err != nil {
		t.Fatal(err)
	}
	runsCtx, cancelRuns := context.WithTimeout(ctx, m.chaos+m.settle)
	defer cancelRuns()
	loadCtx, cancelLoad := context.WithTimeout(ctx, m.chaos)
	defer cancelLoad()
	generated := make(chan struct{})
	go func() {
		defer close(generated)
		d.generate(loadCtx, runsCtx, m.rate)
	}()
	smp := &sampler{}
	sampleCtx, stopSampling := context.WithCancel(runsCtx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		smp.sample(sampleCtx, h, d, seed)
	}()
	chaosBegan := time.Now()
	h.chaos(loadCtx)
	<-generated
	chaosEnded := time.Now()
	// The schedules fire until finishSchedules pauses them, which the
	// recovery's health check (every follower current) waits for.
	schedCtx, cancelSched := context.WithTimeout(ctx, scheduleFinish)
	defer cancelSched()
	schedDone := make(chan error, 1)
	go func() { schedDone <- h.finishSchedules(schedCtx, d) }()
	if err := h.recover(runsCtx); err != nil {
		t.Errorf("recovery after the chaos: %v", err)
	}
	t.Logf("chaos over after %s; every process runs again %s later",
		chaosEnded.Sub(chaosBegan).Round(time.Millisecond), time.Since(chaosEnded).Round(time.Millisecond))
	if err := <-schedDone; err != nil {
		t.Errorf("schedules after the chaos: %v", err)
	}
	d.wg.Wait()
	stopSampling()
	<-sampled
	t.Logf("runs settled %s after the chaos", time.Since(chaosEnded).Round(time.Millisecond))

	res := h.check(ctx, d, runsCtx, smp)
	sum := h.summarize(d, res, chaosBegan, chaosEnded)
	t.Log(sum.line())
	for _, l := range sum.details() {
		t.Log(l)
	}
	t.Logf("schedules: %d runs from %d start messages; %s", res.scheduledRuns, res.scheduleStarts, strings.Join(res.scheduleSpan, "; "))
	h.logf("%s", sum.line())
	for _, p := range res.problems {
		h.logf("problem: %s", p)
	}
	res.fail(t)
}
