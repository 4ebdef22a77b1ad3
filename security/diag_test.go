package security

import (
	"context"
	"testing"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/fleet"
)

func diagnose(t *testing.T, f *fleet.Fleet, id string) {
	ctx := context.Background()
	data, _, err := f.Runs.Get(ctx, id)
	if err == nil {
		rec, _ := dispatcher.DecodeRecord(data)
		t.Logf("%s record: applied %v rejected %+v outbox %d", id, rec.Applied, rec.Rejected, len(rec.Outbox))
		for _, o := range rec.Outbox {
			t.Logf("  outbox %s %s %s", o.Kind, o.Subject, o.ID)
		}
	}
	c, err := f.JS.Consumer(ctx, f.Names.TaskStream(), f.Names.TaskConsumer("echo", "1"))
	if err == nil {
		info, _ := c.Info(ctx)
		t.Logf("task consumer: pending %d ackpending %d redelivered %d waiting %d delivered %+v ackfloor %+v", info.NumPending, info.NumAckPending, info.NumRedelivered, info.NumWaiting, info.Delivered, info.AckFloor)
	}
	s, _ := f.JS.Stream(ctx, f.Names.TaskStream())
	si, _ := s.Info(ctx)
	t.Logf("task stream: %+v", si.State)
	is, _ := f.JS.Stream(ctx, f.Names.InputStream())
	ii, _ := is.Info(ctx)
	t.Logf("input stream: msgs %d bytes %d", ii.State.Msgs, ii.State.Bytes)
}
