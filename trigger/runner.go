package trigger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

// Store validates a trigger file for workflow and stores it in the trigger
// bucket (created if missing), replacing the workflow's previous file; an
// empty file removes the workflow's triggers.
func Store(ctx context.Context, js jetstream.JetStream, names subjects.Names, workflow string, file []byte) ([]*Spec, error) {
	kv, err := bucket(ctx, js, names, true)
	if err != nil {
		return nil, err
	}
	if len(file) == 0 {
		if err := kv.Delete(ctx, workflow); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, fmt.Errorf("trigger: removing the triggers of %s: %w", workflow, err)
		}
		return nil, nil
	}
	specs, err := Parse(file, workflow, names)
	if err != nil {
		return nil, err
	}
	// Names are unique across workflows: they name streams and run ids.
	others, err := Load(ctx, js, names)
	if err != nil {
		return nil, err
	}
	for _, o := range others {
		for _, s := range specs {
			if o.Name == s.Name && o.Workflow != workflow {
				return nil, &PathError{"/" + s.Name, fmt.Sprintf("workflow %s already has a trigger of this name", o.Workflow)}
			}
		}
	}
	// The streams first: a message published once deploy returns waits
	// in its stream even before a dispatcher binds the trigger, and a
	// subject another stream holds is refused before anything is stored.
	for _, s := range specs {
		if _, err := ensureStream(ctx, js, names, s); err != nil {
			return nil, err
		}
	}
	if _, err := kv.Put(ctx, workflow, file); err != nil {
		return nil, fmt.Errorf("trigger: storing the triggers of %s: %w", workflow, err)
	}
	return specs, nil
}

// ensureStream creates or updates a subject trigger's stream; nil for a
// webhook, which has none.
func ensureStream(ctx context.Context, js jetstream.JetStream, n subjects.Names, s *Spec) (jetstream.Stream, error) {
	if s.Subject == "" {
		return nil, nil
	}
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	want := jetstream.StreamConfig{
		Name: n.TriggerStream(s.Name), Description: fmt.Sprintf("jetflow trigger %s of workflow %s", s.Name, s.Workflow),
		Subjects: []string{s.Subject}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
		Duplicates: 2 * time.Minute,
	}
	// A stream already as wanted is left alone: every deploy and every
	// bind asks, and an update racing a consumer's creation on the same
	// stream is a data race inside nats-server 2.15.2 (filestore.go,
	// UpdateConfig against ConsumerStore).
	stream, err := js.Stream(octx, want.Name)
	if err == nil && sameStream(stream.CachedInfo().Config, want) {
		return stream, nil
	}
	stream, err = js.CreateOrUpdateStream(octx, want)
	if err != nil {
		return nil, fmt.Errorf("trigger %s: stream %s over %s: %w", s.Name, n.TriggerStream(s.Name), s.Subject, err)
	}
	return stream, nil
}

// sameStream reports whether a trigger stream's stored configuration is
// the one ensureStream would write.
func sameStream(have, want jetstream.StreamConfig) bool {
	return have.Description == want.Description && slices.Equal(have.Subjects, want.Subjects) &&
		have.Retention == want.Retention && have.Storage == want.Storage && have.Duplicates == want.Duplicates
}

func bucket(ctx context.Context, js jetstream.JetStream, names subjects.Names, create bool) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, names.TriggerBucket())
	if errors.Is(err, jetstream.ErrBucketNotFound) && create {
		kv, err = js.CreateKeyValue(ctx, provision.TriggerBucketConfig(names, provision.ProvisionOptions{}))
	}
	if err != nil {
		return nil, fmt.Errorf("trigger: bucket %s: %w", names.TriggerBucket(), err)
	}
	return kv, nil
}

// Load reads every deployed trigger, ordered by name; none when the
// bucket does not exist.
func Load(ctx context.Context, js jetstream.JetStream, names subjects.Names) ([]*Spec, error) {
	kv, err := bucket(ctx, js, names, false)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("trigger: listing %s: %w", names.TriggerBucket(), err)
	}
	var out []*Spec
	for workflow := range lister.Keys() {
		e, err := kv.Get(ctx, workflow)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("trigger: reading the triggers of %s: %w", workflow, err)
		}
		specs, err := Parse(e.Value(), workflow, names)
		if err != nil {
			return nil, fmt.Errorf("trigger: the stored triggers of %s: %w", workflow, err)
		}
		out = append(out, specs...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Config configures a Runner.
type Config struct {
	JS     jetstream.JetStream
	Names  subjects.Names
	Client *client.Client
	// Logger default slog.Default().
	Logger *slog.Logger
}

// Runner consumes the messages of every deployed subject trigger and
// applies them. Every dispatcher runs one: they share each trigger's
// durable consumer, so a message is applied by one of them, and messages
// wait in the trigger's stream while none runs.
type Runner struct {
	cfg  Config
	log  *slog.Logger
	mu   sync.Mutex
	live []jetstream.ConsumeContext
	stop context.CancelFunc
	done chan struct{}
}

// NewRunner returns a runner; Start starts it.
func NewRunner(cfg Config) *Runner {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Runner{cfg: cfg, log: cfg.Logger}
}

// Start binds the triggers deployed now and follows the trigger bucket:
// a deploy that changes a workflow's triggers rebinds them all.
func (r *Runner) Start(ctx context.Context) error {
	kv, err := bucket(ctx, r.cfg.JS, r.cfg.Names, true)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w, err := kv.WatchAll(wctx, jetstream.MetaOnly())
	if err != nil {
		cancel()
		return fmt.Errorf("trigger: watching %s: %w", r.cfg.Names.TriggerBucket(), err)
	}
	r.stop, r.done = cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		defer func() { _ = w.Stop() }()
		initial := true
		for {
			select {
			case <-wctx.Done():
				return
			case u, ok := <-w.Updates():
				if !ok {
					return
				}
				// The initial values bind once, at the nil that ends them;
				// every update after rebinds. A burst rebinds once per
				// update: deploys are rare.
				if u == nil {
					initial = false
				} else if initial {
					continue
				}
				if err := r.bind(wctx); err != nil && wctx.Err() == nil {
					r.log.Error("trigger: binding the deployed triggers failed", slog.Any("error", err))
				}
			}
		}
	}()
	return nil
}

// bind stops every trigger consumer and starts those deployed now.
func (r *Runner) bind(ctx context.Context) error {
	r.unbind()
	specs, err := Load(ctx, r.cfg.JS, r.cfg.Names)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range specs {
		if s.Subject == "" {
			continue
		}
		if err := r.consume(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// consume makes sure of the trigger's stream and consumer and consumes.
// A stream, not a core subscription: a message published while no
// dispatcher runs waits in it, and the durable consumer shares messages
// among dispatchers and redelivers one whose dispatcher died.
func (r *Runner) consume(ctx context.Context, s *Spec) error {
	stream, err := ensureStream(ctx, r.cfg.JS, r.cfg.Names, s)
	if err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cons, err := stream.CreateOrUpdateConsumer(octx, jetstream.ConsumerConfig{
		Durable: r.cfg.Names.TriggerConsumer(), AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: 256,
	})
	if err != nil {
		return fmt.Errorf("trigger %s: consumer: %w", s.Name, err)
	}
	log := r.log.With(slog.String("trigger", s.Name), slog.String("workflow", s.Workflow))
	cc, err := cons.Consume(func(m jetstream.Msg) { r.handle(ctx, s, m, log) },
		jetstream.PullExpiry(provision.PullExpiry), jetstream.PullHeartbeat(provision.PullHeartbeat))
	if err != nil {
		return fmt.Errorf("trigger %s: consume: %w", s.Name, err)
	}
	r.mu.Lock()
	r.live = append(r.live, cc)
	r.mu.Unlock()
	return nil
}

func (r *Runner) handle(ctx context.Context, s *Spec, m jetstream.Msg, log *slog.Logger) {
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := Apply(actx, r.cfg.Client, s, Message{Subject: m.Subject(), Headers: m.Headers(), Data: m.Data()})
	switch {
	case errors.Is(err, ErrPermanent):
		log.Warn("trigger: message refused", slog.String("subject", m.Subject()), slog.Any("error", err))
		_ = m.TermWithReason(err.Error())
	case err != nil:
		log.Warn("trigger: applying a message failed; it is redelivered", slog.String("subject", m.Subject()), slog.Any("error", err))
		_ = m.NakWithDelay(time.Second)
	default:
		log.Debug("trigger: applied", slog.String("run_id", out.Run), slog.String("action", out.Action))
		_ = m.Ack()
	}
}

// unbind drains every trigger consumer: what a consumer has pulled and not
// yet handed over is handled (or, once Stop cancelled the context, handed
// back at once) instead of waiting out its AckWait in a stopped client.
func (r *Runner) unbind() {
	r.mu.Lock()
	live := r.live
	r.live = nil
	r.mu.Unlock()
	for _, cc := range live {
		cc.Drain()
		<-cc.Closed()
	}
}

// Stop stops consuming; safe before Start and twice.
func (r *Runner) Stop(ctx context.Context) error {
	if r.stop == nil {
		return nil
	}
	r.stop()
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.unbind()
	return nil
}
