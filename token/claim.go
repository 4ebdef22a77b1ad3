package token

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

// ErrDisagree is wrapped when a process's secret is not the one the
// deployment's dispatchers use: starting would refuse every result the
// others signed, and theirs would refuse its.
var ErrDisagree = errors.New("token secret disagrees with the deployment's")

// markerPrefix starts the value Claim stores under Key in place of a
// secret. ':' is not in the base64 alphabet, so a marker never reads as a
// stored secret, also to releases that predate it.
const markerPrefix = "configured:v1:"

func marker(key []byte) []byte { return []byte(markerPrefix + fingerprint(key)) }

// parseMarker returns the fingerprint in a marker value.
func parseMarker(v []byte) (string, bool) {
	return strings.CutPrefix(string(v), markerPrefix)
}

// Claim binds a configured signer to the deployment named by names, so
// that dispatchers that disagree on the secret refuse to start. It stores
// the signing secret's fingerprint, never the secret, under Key in the
// workflow bucket, and checks what it finds there:
//
//   - nothing: it records s's fingerprint (create-only, so one of several
//     dispatchers starting at once wins and the others check theirs
//     against it);
//   - s's fingerprint, or a secret equal to s's signing secret (installed
//     by an operator with Store): s is the deployment's secret;
//   - the fingerprint of, or a secret equal to, one of s's previous
//     secrets: the deployment is moving to s (a rotation, or from the
//     generated secret to a configured one), so s's fingerprint replaces
//     it and dispatchers loading the secret from the bucket stop starting;
//   - anything else: an error wrapping ErrDisagree that says which.
//
// Dispatchers already running are not checked again: rotate by giving
// every dispatcher the new secret with the old one as previous, then
// dropping the old one.
func Claim(ctx context.Context, js jetstream.JetStream, names subjects.Names, s *Signer) error {
	if s == nil {
		return errors.New("token: claim: no signer")
	}
	bucket := names.WorkflowBucket()
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return fmt.Errorf("token: bind workflow bucket %q (is it provisioned?): %w", bucket, err)
	}
	deadline := time.Now().Add(loadFor)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		err := claimOnce(ctx, kv, s, bucket)
		if err == nil || errors.Is(err, ErrDisagree) || errors.Is(err, ErrSecret) || ctx.Err() != nil || time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("token: claim key %q of bucket %q for the configured secret: %w", Key, bucket, err)
			}
			return nil
		}
		// A lost compare-and-swap: read what the winner wrote.
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
	}
}

func claimOnce(ctx context.Context, kv jetstream.KeyValue, s *Signer, bucket string) error {
	e, err := kv.Get(ctx, Key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		_, err = kv.Create(ctx, Key, marker(s.keys[0]))
		return err
	}
	if err != nil {
		return err
	}
	mine := s.Fingerprint()
	if fp, ok := parseMarker(e.Value()); ok {
		switch {
		case hmac.Equal([]byte(fp), []byte(mine)):
			return nil
		case s.retires(func(k []byte) bool { return hmac.Equal([]byte(fp), []byte(fingerprint(k))) }):
			_, err := kv.Update(ctx, Key, marker(s.keys[0]), e.Revision())
			return err
		}
		return fmt.Errorf("%w: the deployment's dispatchers are configured with another secret (fingerprint %s; this one's is %s): give every dispatcher the same secret, or this one theirs as its previous secret to rotate",
			ErrDisagree, fp, mine)
	}
	stored, err := base64.StdEncoding.DecodeString(string(e.Value()))
	if err != nil {
		return fmt.Errorf("%w: the key holds neither a secret nor a fingerprint", ErrSecret)
	}
	switch {
	case hmac.Equal(stored, s.keys[0]):
		return nil
	case s.retires(func(k []byte) bool { return hmac.Equal(stored, k) }):
		_, err := kv.Update(ctx, Key, marker(s.keys[0]), e.Revision())
		return err
	}
	return fmt.Errorf("%w: the bucket holds another secret, which dispatchers without a configured secret load and sign with (fingerprint %s; this one's is %s): "+
		"either configure none here, or stop those dispatchers and give this one the bucket's secret as its previous secret, which replaces it in the bucket with this one's fingerprint (deleting key %q of bucket %q instead makes the results of invocations in flight stale)",
		ErrDisagree, fingerprint(stored), mine, Key, bucket)
}

// retires reports whether match holds for one of s's previous secrets.
func (s *Signer) retires(match func(key []byte) bool) bool {
	for _, k := range s.keys[1:] {
		if match(k) {
			return true
		}
	}
	return false
}
