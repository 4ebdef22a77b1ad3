package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
)

// Codes of refused starts.
const (
	CodeSingletonActive = "SINGLETON_ACTIVE" // 409: another run holds the start's singleton key
)

// startKeys are the gateway's KV buckets of start controls, bound once.
type startKeys struct {
	mu           sync.Mutex
	idem, single jetstream.KeyValue
}

func keyDigest(k string) string {
	sum := sha256.Sum256([]byte(k))
	return hex.EncodeToString(sum[:])
}

// bucket binds (creating if missing) one of the start control buckets.
func (g *Gateway) bucket(ctx context.Context, which *jetstream.KeyValue, name string, ttl time.Duration) (jetstream.KeyValue, error) {
	g.keys.mu.Lock()
	defer g.keys.mu.Unlock()
	if *which != nil {
		return *which, nil
	}
	kv, err := g.js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = g.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, TTL: ttl, Description: "jetflow gateway start controls"})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = g.js.KeyValue(ctx, name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", name, err)
	}
	*which = kv
	return kv, nil
}

// claimIdempotency records that key starts run id; when the key was
// claimed within the window, it returns the run it named instead (and
// true). kv.Create is the compare-and-swap: of two starts with one key at
// once, one claims it and the other answers its run.
func (g *Gateway) claimIdempotency(ctx context.Context, key, id string) (string, bool, error) {
	kv, err := g.bucket(ctx, &g.keys.idem, g.names.StartKeyBucket(), g.cfg.IdempotencyWindow)
	if err != nil {
		return "", false, err
	}
	_, err = kv.Create(ctx, keyDigest(key), []byte(id))
	if err == nil {
		return id, false, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return "", false, err
	}
	e, err := kv.Get(ctx, keyDigest(key))
	if err != nil {
		return "", false, err
	}
	return string(e.Value()), true, nil
}

// claimSingleton makes run id the holder of singleton key: refused, naming
// the holder, while the holder has not settled. A holder with no record
// is taken to have failed to start once its claim is older than
// singletonGrace (its gateway died between the claim and the start).
func (g *Gateway) claimSingleton(ctx context.Context, key, id string) (string, error) {
	kv, err := g.bucket(ctx, &g.keys.single, g.names.SingletonBucket(), 0)
	if err != nil {
		return "", err
	}
	k := keyDigest(key)
	for {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			if _, err := kv.Create(ctx, k, []byte(id)); errors.Is(err, jetstream.ErrKeyExists) {
				continue // lost the race: look at the winner
			} else if err != nil {
				return "", err
			}
			return "", nil
		}
		if err != nil {
			return "", err
		}
		holder := string(e.Value())
		if holder == id {
			return "", nil
		}
		st, err := g.client.Status(ctx, holder)
		switch {
		case err == nil && !run.Status(st.Status).Terminal():
			return holder, nil
		case errors.Is(err, client.ErrRunNotFound) && time.Since(e.Created()) < singletonGrace:
			return holder, nil
		case err != nil && !errors.Is(err, client.ErrRunNotFound):
			return "", err
		}
		if _, err := kv.Update(ctx, k, []byte(id), e.Revision()); errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			continue
		} else if err != nil {
			return "", err
		}
		return "", nil
	}
}

// singletonGrace is how long a singleton claim whose run has no record
// still holds the key: the start is on its way.
const singletonGrace = time.Minute

// startControls applies a start's idempotency and singleton keys: it
// answers (and returns true) when the start must not be published.
func (g *Gateway) startControls(w http.ResponseWriter, r *http.Request, req *StartRequest) bool {
	ctx, cancel := opContext(r)
	defer cancel()
	if req.IdempotencyKey != "" {
		prev, dup, err := g.claimIdempotency(ctx, req.IdempotencyKey, req.ID)
		if err != nil {
			g.natsError(w, r, "idempotency key", err)
			return true
		}
		if dup {
			req.ID = prev
			req.replay = true
		}
	}
	if req.Singleton != "" {
		holder, err := g.claimSingleton(ctx, req.Singleton, req.ID)
		if err != nil {
			g.natsError(w, r, "singleton key", err)
			return true
		}
		if holder != "" {
			if req.IdempotencyKey != "" && !req.replay {
				// Refused: the key did not start anything, and a retry
				// should be judged again.
				_ = g.keys.idem.Delete(ctx, keyDigest(req.IdempotencyKey))
			}
			writeError(w, &Error{
				Status: http.StatusConflict, Code: CodeSingletonActive, Run: holder, Pointer: "/singleton",
				Message: fmt.Sprintf("run %s holds singleton key %q and has not settled: this start is refused (retry once it settles)", holder, req.Singleton),
			})
			return true
		}
	}
	if req.replay {
		// The first start may not have reached the stream (its gateway
		// died after the claim): publish it again only then.
		if _, err := g.client.Status(ctx, req.ID); err == nil {
			req.published = true
		}
	}
	return false
}
