package token

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

// Key is the workflow-bucket key that holds a deployment's generated
// secret. The registry's keys start with "doc." and "name.", so it never
// collides with them. Server permissions should let only dispatchers and
// operators read it (docs/SECURITY.md).
const Key = "secret.token"

// loadFor bounds how long Load retries while another dispatcher's
// creation of the secret is not yet visible on the replica it reads.
const loadFor = 10 * time.Second

// Load returns the signer of the deployment named by names: the secret
// stored under Key in its workflow bucket, created there first if absent.
// Concurrent first calls from several dispatchers agree on one secret,
// because the key is written by create-only compare-and-swap. When the
// deployment's dispatchers are configured with a secret (Claim), the key
// holds only its fingerprint and Load fails with ErrDisagree.
func Load(ctx context.Context, js jetstream.JetStream, names subjects.Names) (*Signer, error) {
	kv, err := js.KeyValue(ctx, names.WorkflowBucket())
	if err != nil {
		return nil, fmt.Errorf("token: bind workflow bucket %q (is it provisioned?): %w", names.WorkflowBucket(), err)
	}
	deadline := time.Now().Add(loadFor)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		s, err := loadOnce(ctx, kv)
		if err == nil || errors.Is(err, ErrSecret) || errors.Is(err, ErrDisagree) || ctx.Err() != nil || time.Now().After(deadline) {
			if err != nil {
				return nil, fmt.Errorf("token: load secret %q from bucket %q: %w", Key, names.WorkflowBucket(), err)
			}
			return s, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
	}
}

func loadOnce(ctx context.Context, kv jetstream.KeyValue) (*Signer, error) {
	e, err := kv.Get(ctx, Key)
	if err == nil {
		if fp, ok := parseMarker(e.Value()); ok {
			return nil, fmt.Errorf("%w: the deployment's dispatchers are configured with a secret (fingerprint %s) and the bucket holds only its fingerprint: configure this process with the same secret", ErrDisagree, fp)
		}
		b, err := base64.StdEncoding.DecodeString(string(e.Value()))
		if err != nil {
			return nil, fmt.Errorf("%w: stored value is not base64", ErrSecret)
		}
		return New(b)
	}
	if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, err
	}
	b, err := Generate()
	if err != nil {
		return nil, err
	}
	if _, err := kv.Create(ctx, Key, []byte(base64.StdEncoding.EncodeToString(b))); err != nil {
		// Another dispatcher created it first: read theirs next time.
		return nil, err
	}
	return New(b)
}

// Store saves secret under Key, replacing any secret there: an operator
// uses it to install a configured secret for dispatchers that load theirs.
// Dispatchers already running keep the secret they loaded until restarted.
func Store(ctx context.Context, js jetstream.JetStream, names subjects.Names, secret []byte) error {
	if _, err := New(secret); err != nil {
		return err
	}
	kv, err := js.KeyValue(ctx, names.WorkflowBucket())
	if err != nil {
		return fmt.Errorf("token: bind workflow bucket %q: %w", names.WorkflowBucket(), err)
	}
	if _, err := kv.Put(ctx, Key, []byte(base64.StdEncoding.EncodeToString(secret))); err != nil {
		return fmt.Errorf("token: store secret %q in bucket %q: %w", Key, names.WorkflowBucket(), err)
	}
	return nil
}
