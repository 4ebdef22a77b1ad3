// Package payload moves message bodies too large for a NATS message
// through the JetStream Object Store bucket <prefix>_payloads: the sender
// stores the body as an object and publishes an empty message whose
// headers name the object, its size and its SHA-256 digest; the receiver
// reads the object back and checks both (docs/PROTOCOL.md 2.4). The client,
// the worker SDK and the dispatchers share it, so it depends on the names
// alone.
package payload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// Headers of a message whose body travels by reference, declared in wire.
const (
	HeaderName   = wire.HeaderPayload
	HeaderSize   = wire.HeaderPayloadSize
	HeaderDigest = wire.HeaderPayloadDigest
)

// Defaults of Config.
const (
	// DefaultThreshold: a body larger than 512 KiB travels by reference,
	// half of nats-server's default max_payload (1 MiB), which leaves
	// room for the headers and for the JSON a dispatcher wraps around a
	// task input when it renders an invocation.
	DefaultThreshold = 512 << 10
	// DefaultMaxBytes: a reference to a body larger than 256 MiB is
	// refused without reading it.
	DefaultMaxBytes = 256 << 20
)

// Errors of a reference that cannot be resolved. Each wraps ErrBadRef;
// no retry cures them.
var (
	// ErrBadRef is wrapped by every refusal of a reference.
	ErrBadRef = errors.New("bad payload reference")
	// ErrMissing: the named object is not in the bucket.
	ErrMissing = fmt.Errorf("%w: object not found", ErrBadRef)
	// ErrDigest: the object is not the body the reference names.
	ErrDigest = fmt.Errorf("%w: digest mismatch", ErrBadRef)
	// ErrOversize: the reference names a body larger than Config.MaxBytes.
	ErrOversize = fmt.Errorf("%w: larger than the payload limit", ErrBadRef)
	// ErrNoBucket: the payload bucket is not provisioned.
	ErrNoBucket = errors.New("payload bucket not found (provision it: jetflow dispatcher --provision, or serve)")
)

// Ref names a body in the payload bucket.
type Ref struct {
	Name   string
	Size   int64
	Digest string
}

// Digest is the digest header of body: "SHA-256=" and the base64url
// encoding (with padding) of its SHA-256, the form the Object Store keeps
// in an object's info.
func Digest(body []byte) string {
	sum := sha256.Sum256(body)
	return "SHA-256=" + base64.URLEncoding.EncodeToString(sum[:])
}

// RefOf reads the reference a message's headers carry; ok is false when
// they carry none. A partial or unreadable reference is an error wrapping
// ErrBadRef.
func RefOf(h nats.Header) (ref Ref, ok bool, err error) {
	name := h.Get(HeaderName)
	if name == "" {
		return Ref{}, false, nil
	}
	ref.Name, ref.Digest = name, h.Get(HeaderDigest)
	size, err := strconv.ParseInt(h.Get(HeaderSize), 10, 64)
	if err != nil || size < 0 {
		return ref, true, fmt.Errorf("%w: %s header %q is not a size in bytes", ErrBadRef, HeaderSize, h.Get(HeaderSize))
	}
	ref.Size = size
	if !strings.HasPrefix(ref.Digest, "SHA-256=") {
		return ref, true, fmt.Errorf("%w: %s header %q is not SHA-256=<base64url>", ErrBadRef, HeaderDigest, ref.Digest)
	}
	return ref, true, nil
}

// Set writes the reference into h.
func (r Ref) Set(h nats.Header) {
	h.Set(HeaderName, r.Name)
	h.Set(HeaderSize, strconv.FormatInt(r.Size, 10))
	h.Set(HeaderDigest, r.Digest)
}

// Clear removes a reference from h.
func Clear(h nats.Header) {
	h.Del(HeaderName)
	h.Del(HeaderSize)
	h.Del(HeaderDigest)
}

// Object names. Every object of a run starts with "<run>/": run ids
// cannot hold a '/', so retention removes a run's objects by that prefix.
func Name(runID, kind, id string) string { return runID + "/" + kind + "/" + id }

// Object kinds, the middle part of a name.
const (
	KindStart  = "start"
	KindEvent  = "event"
	KindInvoke = "invoke"
	KindResult = "result"
	KindStatus = "status"
)

// Config configures a Store.
type Config struct {
	// Names builds the bucket name. Default: subjects.Must("").
	Names subjects.Names
	// Threshold is the largest body sent inline; a larger one goes by
	// reference. Default: DefaultThreshold (512 KiB).
	Threshold int
	// MaxBytes is the largest body a reference may name. Default:
	// DefaultMaxBytes (256 MiB).
	MaxBytes int64
}

// WithDefaults returns a copy of c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Names == (subjects.Names{}) {
		c.Names = subjects.Must("")
	}
	if c.Threshold <= 0 {
		c.Threshold = DefaultThreshold
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	return c
}

// Store puts and resolves payloads in the payload bucket. A nil *Store
// sends every body inline and refuses every reference with ErrNoBucket.
type Store struct {
	js  jetstream.JetStream
	obs jetstream.ObjectStore
	cfg Config
	// stream is the bucket's stream, which reads get chunks from.
	stream jetstream.Stream
}

// Open binds the payload bucket. It returns ErrNoBucket (wrapped) when the
// bucket does not exist.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Store, error) {
	cfg = cfg.WithDefaults()
	obs, err := js.ObjectStore(ctx, cfg.Names.PayloadBucket())
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("payload: bucket %q: %w", cfg.Names.PayloadBucket(), ErrNoBucket)
	}
	if err != nil {
		return nil, fmt.Errorf("payload: bind bucket %q: %w", cfg.Names.PayloadBucket(), err)
	}
	st, err := js.Stream(ctx, cfg.Names.ObjectStream(cfg.Names.PayloadBucket()))
	if err != nil {
		return nil, fmt.Errorf("payload: bind stream of bucket %q: %w", cfg.Names.PayloadBucket(), err)
	}
	return &Store{js: js, obs: obs, cfg: cfg, stream: st}, nil
}

// Threshold is the largest body sent inline.
func (s *Store) Threshold() int {
	if s == nil {
		return int(^uint(0) >> 1)
	}
	return s.cfg.Threshold
}

// chunkSize is the size of an object's chunks: a quarter of nats-server's
// default max_payload (the Object Store's own default is 128 KiB, which
// costs a round of flow control per 128 KiB read).
const chunkSize = 256 << 10

// patience returns ctx with at least the time moving size bytes may take
// on a busy server: 30 s and two seconds per MiB (5 s and one per MiB
// was not enough on a machine at ten times its cores' load, where every
// retry then timed out again). A caller's shorter
// deadline is stretched to it (an operation timeout sized for small
// messages would fail every large one); a cancellation still ends it.
func patience(ctx context.Context, size int64) (context.Context, context.CancelFunc) {
	need := 30*time.Second + time.Duration(size>>20)*2*time.Second
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) >= need {
		return ctx, func() {}
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), need)
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel()
		}
	})
	return c, func() { stop(); cancel() }
}

// Put stores body under name and returns its reference. Putting the same
// body under the same name again is harmless. It may take longer than
// ctx's deadline allows (see patience), never past its cancellation.
func (s *Store) Put(ctx context.Context, name string, body []byte) (Ref, error) {
	if s == nil {
		return Ref{}, ErrNoBucket
	}
	ctx, cancel := patience(ctx, int64(len(body)))
	defer cancel()
	ref := Ref{Name: name, Size: int64(len(body)), Digest: Digest(body)}
	if info, err := s.obs.GetInfo(ctx, name); err == nil && info.Digest == ref.Digest && int64(info.Size) == ref.Size {
		return ref, nil // a redelivery or re-publish: the object is there
	}
	meta := jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: chunkSize}}
	if _, err := s.obs.Put(ctx, meta, bytes.NewReader(body)); err != nil {
		return Ref{}, fmt.Errorf("payload: put %q (%d bytes) in bucket %q: %w", name, len(body), s.cfg.Names.PayloadBucket(), err)
	}
	return ref, nil
}

// Resolve reads the body ref names and checks its size and digest. Its
// errors wrap ErrMissing, ErrDigest or ErrOversize when the reference is
// bad, and name the object and what differs.
func (s *Store) Resolve(ctx context.Context, ref Ref) ([]byte, error) {
	return s.resolve(ctx, ref, s.maxBytes())
}

// ResolveOwn is Resolve without Config.MaxBytes, for what jetflow itself
// wrote (a value of a run record, which may gather several inputs).
func (s *Store) ResolveOwn(ctx context.Context, ref Ref) ([]byte, error) {
	return s.resolve(ctx, ref, 1<<62)
}

func (s *Store) maxBytes() int64 {
	if s == nil {
		return DefaultMaxBytes
	}
	return s.cfg.MaxBytes
}

func (s *Store) resolve(ctx context.Context, ref Ref, limit int64) ([]byte, error) {
	if s == nil {
		return nil, fmt.Errorf("payload: resolve %q: %w", ref.Name, ErrNoBucket)
	}
	if ref.Size > limit {
		return nil, fmt.Errorf("payload: object %q: %w: %d bytes, limit %d", ref.Name, ErrOversize, ref.Size, limit)
	}
	ctx, cancel := patience(ctx, ref.Size)
	defer cancel()
	info, err := s.obs.GetInfo(ctx, ref.Name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("payload: object %q in bucket %q: %w", ref.Name, s.cfg.Names.PayloadBucket(), ErrMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("payload: object %q: %w", ref.Name, err)
	}
	if int64(info.Size) != ref.Size || info.Digest != ref.Digest {
		return nil, fmt.Errorf("payload: object %q: %w: the reference names %d bytes with %s, the bucket holds %d bytes with %s",
			ref.Name, ErrDigest, ref.Size, ref.Digest, info.Size, info.Digest)
	}
	body, err := s.read(ctx, info, ref.Size)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("payload: object %q in bucket %q: %w", ref.Name, s.cfg.Names.PayloadBucket(), ErrMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("payload: read object %q: %w", ref.Name, err)
	}
	// The object may have been replaced between the two reads.
	if int64(len(body)) != ref.Size || Digest(body) != ref.Digest {
		return nil, fmt.Errorf("payload: object %q: %w: read %d bytes with %s, the reference names %d bytes with %s",
			ref.Name, ErrDigest, len(body), Digest(body), ref.Size, ref.Digest)
	}
	return body, nil
}

// read reads the object info describes, of size bytes, chunk by chunk
// with direct gets (the next message on its chunk subject), into one
// buffer of that size. It creates no consumer: the creator of a consumer
// chooses where the server delivers its messages, a right that would let
// a worker or publisher copy its own chunks onto run-input subjects, so
// none of them holds it (docs/SECURITY.md).
func (s *Store) read(ctx context.Context, info *jetstream.ObjectInfo, size int64) ([]byte, error) {
	subject := s.cfg.Names.ObjectChunks(s.cfg.Names.PayloadBucket(), info.NUID)
	body := make([]byte, 0, size)
	var seq uint64
	for n := uint32(0); n < info.Chunks; n++ {
		m, err := s.stream.GetMsg(ctx, seq+1, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, jetstream.ErrObjectNotFound // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		if int64(len(body)+len(m.Data)) > size {
			return nil, fmt.Errorf("the object holds more than %d bytes", size)
		}
		body = append(body, m.Data...)
		seq = m.Sequence
	}
	return body, nil
}

// Body returns a message's body: its data, or, when its headers carry a
// reference, the object they name. ref is the reference, if any.
func (s *Store) Body(ctx context.Context, h nats.Header, data []byte) (body []byte, ref *Ref, err error) {
	r, ok, err := RefOf(h)
	if !ok {
		return data, nil, nil
	}
	if err != nil {
		return nil, &r, fmt.Errorf("payload: %w", err)
	}
	if len(bytes.TrimSpace(data)) > 0 {
		return nil, &r, fmt.Errorf("payload: %w: the message names object %q and has a body of %d bytes too (a message by reference has an empty body)", ErrBadRef, r.Name, len(data))
	}
	body, err = s.Resolve(ctx, r)
	return body, &r, err
}

// Send prepares m, a message of run runID, for publishing: when its body
// is larger than the threshold it is put in the bucket as object
// "<run>/<kind>/<hex SHA-256 of the body>" and m carries the reference
// instead. It reports whether it did. Names follow content, so two
// messages with one body share an object and a re-sent message rewrites
// nothing.
func (s *Store) Send(ctx context.Context, m *nats.Msg, runID, kind string) (bool, error) {
	if s == nil || len(m.Data) <= s.cfg.Threshold {
		return false, nil
	}
	sum := sha256.Sum256(m.Data)
	ref, err := s.Put(ctx, Name(runID, kind, hex.EncodeToString(sum[:])), m.Data)
	if err != nil {
		return false, err
	}
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	ref.Set(m.Header)
	m.Data = nil
	return true, nil
}

// Delete removes one object, its info included; a missing one is no
// error. The Object Store's own delete would leave the info behind as a
// mark of the deletion, for ever (the bucket has no TTL): one message per
// object of every run retention removed, each read again by every
// listing (ByRun). Delete purges the chunks, then the info, so that
// nothing stays; the same three requests (the info's read, two purges).
// A reader between the two purges finds the chunks gone and reports the
// object missing (read); a failure between them leaves the info, which
// the run's next removal lists and deletes.
func (s *Store) Delete(ctx context.Context, name string) error {
	if s == nil {
		return nil
	}
	bucket := s.cfg.Names.PayloadBucket()
	info, err := s.obs.GetInfo(ctx, name, jetstream.GetObjectInfoShowDeleted())
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("payload: delete %q: read its info: %w", name, err)
	}
	if info.NUID != "" {
		if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(s.cfg.Names.ObjectChunks(bucket, info.NUID))); err != nil {
			return fmt.Errorf("payload: delete %q: purge its chunks from bucket %q: %w", name, bucket, err)
		}
	}
	if err := s.purgeInfo(ctx, name); err != nil {
		return fmt.Errorf("payload: delete %q: purge its info from bucket %q: %w", name, bucket, err)
	}
	return nil
}

// RemoveRun deletes every object of a run and returns how many it
// deleted. It lists the bucket (one read of its object infos), after a
// look at the bucket's size that makes it free while the bucket is empty.
func (s *Store) RemoveRun(ctx context.Context, runID string) (int, error) {
	byRun, err := s.ByRun(ctx)
	if err != nil {
		return 0, err
	}
	return s.DeleteAll(ctx, byRun[runID])
}

// ByRun lists the bucket's objects by the run they belong to (the part
// of the name before its first "/"): one look at the bucket's size, and
// one read of its object infos unless it is empty (nil then). Removing
// many runs, one listing serves them all. The marks of deletions that
// earlier releases left (Delete's comment) are purged in passing, once:
// nothing else would ever remove them.
func (s *Store) ByRun(ctx context.Context) (map[string][]string, error) {
	if s == nil {
		return nil, nil
	}
	st, err := s.obs.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("payload: status of bucket %q: %w", s.cfg.Names.PayloadBucket(), err)
	}
	if st.Size() == 0 {
		return nil, nil
	}
	infos, err := s.obs.List(ctx, jetstream.ListObjectsShowDeleted())
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("payload: list bucket %q: %w", s.cfg.Names.PayloadBucket(), err)
	}
	out := map[string][]string{}
	for _, info := range infos {
		if info.Deleted {
			// A failure is left to the next listing: the mark costs a
			// listing a few hundred bytes, not a removal.
			_ = s.purgeInfo(ctx, info.Name)
			continue
		}
		if run, _, ok := strings.Cut(info.Name, "/"); ok && run != "" {
			out[run] = append(out[run], info.Name)
		}
	}
	return out, nil
}

// purgeInfo purges the info of object name, or the mark an earlier
// release's delete left of it.
func (s *Store) purgeInfo(ctx context.Context, name string) error {
	return s.stream.Purge(ctx, jetstream.WithPurgeSubject(s.cfg.Names.ObjectMeta(s.cfg.Names.PayloadBucket(), name)))
}

// DeleteAll deletes the named objects (those ByRun lists for a run) and
// returns how many it deleted before the first failure.
func (s *Store) DeleteAll(ctx context.Context, names []string) (int, error) {
	for i, name := range names {
		if err := s.Delete(ctx, name); err != nil {
			return i, err
		}
	}
	return len(names), nil
}
