package bench

// rawFigures picks the raw operations the bound is built from.
type rawFigures struct {
	// Costs at saturation, seconds per operation.
	publish, create, update, consume, consumeWQ float64
	// Latencies one at a time, milliseconds.
	publishMS, createMS, updateMS, hopMS float64
}

func figuresOf(raw []RawOp) rawFigures {
	var f rawFigures
	cost := func(op RawOp) float64 {
		if op.PerSec <= 0 {
			return 0
		}
		return 1 / op.PerSec
	}
	// best keeps the cheaper of the rates measured at several
	// concurrencies: the bound is the best the raw operations allow.
	best := func(cur float64, op RawOp) float64 {
		if c := cost(op); c > 0 && (cur == 0 || c < cur) {
			return c
		}
		return cur
	}
	for _, op := range raw {
		switch {
		case op.Name == rawPublish && op.Concurrency > 1:
			f.publish = best(f.publish, op)
		case op.Name == rawPublish:
			f.publishMS = op.P50us / 1000
		case op.Name == rawKVCreate && op.Concurrency > 1:
			f.create = best(f.create, op)
		case op.Name == rawKVCreate:
			f.createMS = op.P50us / 1000
		case op.Name == rawKVUpdate && op.Concurrency > 1:
			f.update = best(f.update, op)
		case op.Name == rawKVUpdate:
			f.updateMS = op.P50us / 1000
		case op.Name == rawConsume:
			f.consume = cost(op)
		case op.Name == rawConsumeWQ:
			f.consumeWQ = cost(op)
		case op.Name == rawHop:
			f.hopMS = op.P50us / 1000
		}
	}
	return f
}

// boundOf is the best rate and latency the raw operations allow for a run
// that needs ops, and how close measured (runs per second) comes.
//
// The rate bound adds each operation's cost at saturation, because on one
// machine every operation competes for the same cores; it counts those
// off the run's path too (the timer stream's, the run index's), which
// take the same cores. The latency floor
// sequences a raw publish-consume hop per delivery, a raw publish per
// publish nobody consumes (timer schedules), and a raw write per KV
// write; parallel branches overlap in reality, so for fan-out it is an
// overestimate of the floor.
func boundOf(ops Ops, raw []RawOp, measured float64) Bound {
	f := figuresOf(raw)
	perRun := ops.publishes()*f.publish +
		ops.KVCreates*f.create + ops.KVUpdates*f.update +
		(ops.Dispatched+ops.Indexed)*f.consume + ops.Served*f.consumeWQ
	var b Bound
	if perRun > 0 {
		b.RunsPerSec = 1 / perRun
		b.Ratio = measured / b.RunsPerSec
	}
	deliveries := ops.Dispatched + ops.Served
	b.LatencyMS = deliveries*f.hopMS + max(0, ops.InputPublishes+ops.TaskPublishes-deliveries)*f.publishMS +
		ops.KVCreates*f.createMS + ops.KVUpdates*f.updateMS
	return b
}
