package taskconsumer_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/taskconsumer"
)

func TestWithDefaults(t *testing.T) {
	t.Parallel()
	got := taskconsumer.Policy{}.WithDefaults()
	want := taskconsumer.Policy{StartToClose: time.Minute, MaxAckPending: 1000, MaxDeliver: 5}
	if got != want {
		t.Fatalf("defaults %+v, want %+v", got, want)
	}
	kept := taskconsumer.Policy{StartToClose: time.Second, MaxAckPending: 3, MaxDeliver: -1, Replicas: 3}
	if got := kept.WithDefaults(); got != kept {
		t.Fatalf("WithDefaults changed set fields: %+v", got)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		p    taskconsumer.Policy
		want string // "" = valid
	}{
		"defaults":           {taskconsumer.Policy{}.WithDefaults(), ""},
		"unlimited delivery": {taskconsumer.Policy{MaxDeliver: -1}, ""},
		"negative ack wait":  {taskconsumer.Policy{StartToClose: -time.Second}, "StartToClose -1s is negative"},
		"unbounded pending":  {taskconsumer.Policy{MaxAckPending: -1}, "MaxAckPending -1 is negative"},
		"delivery below -1":  {taskconsumer.Policy{MaxDeliver: -2}, "MaxDeliver -2 is below -1"},
		"negative replicas":  {taskconsumer.Policy{Replicas: -1}, "Replicas -1 is negative"},
	} {
		err := c.p.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one containing %q", name, err, c.want)
		}
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	names := subjects.Must("acme")
	p := taskconsumer.Policy{StartToClose: 7 * time.Second, MaxAckPending: 9, MaxDeliver: 4, Replicas: 3}
	cfg := taskconsumer.Config(names, "check-stock", "1.2", p)
	if cfg.Durable != names.TaskConsumer("check-stock", "1.2") || cfg.FilterSubject != names.Task("check-stock", "1.2") {
		t.Fatalf("consumer %q on %q", cfg.Durable, cfg.FilterSubject)
	}
	if cfg.AckPolicy != jetstream.AckExplicitPolicy || cfg.DeliverPolicy != jetstream.DeliverAllPolicy ||
		cfg.AckWait != p.StartToClose || cfg.MaxAckPending != 9 || cfg.MaxDeliver != 4 || cfg.Replicas != 3 {
		t.Fatalf("config %+v does not carry policy %+v", cfg, p)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	if err := taskconsumer.Check("check-stock", "1.2.0"); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{{"a.b", "1"}, {"ok", "1 2"}, {"", "1"}, {"ok", ""}} {
		if err := taskconsumer.Check(c[0], c[1]); err == nil {
			t.Errorf("Check(%q, %q) accepted", c[0], c[1])
		}
	}
}

// TestRateTravelsInMetadata: a rate limit set in the policy is read back
// from the consumer configuration made of it; none reads as none.
func TestRateTravelsInMetadata(t *testing.T) {
	t.Parallel()
	names := subjects.Must("t")
	cfg := taskconsumer.Config(names, "ship", "1.2", taskconsumer.Policy{RatePerSecond: 2.5, RateBurst: 4}.WithDefaults())
	if r, b := taskconsumer.Rate(cfg); r != 2.5 || b != 4 {
		t.Fatalf("Rate = %v, %d; want 2.5, 4", r, b)
	}
	cfg = taskconsumer.Config(names, "ship", "1.2", taskconsumer.Policy{RatePerSecond: 3}.WithDefaults())
	if r, b := taskconsumer.Rate(cfg); r != 3 || b != 1 {
		t.Fatalf("Rate without a burst = %v, %d; want 3, 1", r, b)
	}
	if r, b := taskconsumer.Rate(taskconsumer.Config(names, "ship", "1", taskconsumer.Policy{}.WithDefaults())); r != 0 || b != 0 {
		t.Fatalf("no rate: %v, %d", r, b)
	}
	if r, _ := taskconsumer.Rate(jetstream.ConsumerConfig{Metadata: map[string]string{taskconsumer.MetaRatePerSecond: "NaN"}}); r != 0 {
		t.Fatalf("NaN metadata read as %v", r)
	}
}
