// Package token makes and checks per-invocation tokens. A dispatcher puts
// a token in every task invocation and accepts a result only if it echoes
// that token, so that only whoever received the invocation can answer it:
// a result for another run's task, or a guessed one, does not verify.
//
// A token is an HMAC-SHA256, under the deployment's secret, of the run id,
// activation key, node and attempt the invocation names. Every dispatcher
// of a deployment must hold the same secret: it comes from configuration,
// and then only its fingerprint is kept in the workflow bucket (Claim), or
// it is generated once and kept there (Load). Either way a dispatcher whose
// secret is not the deployment's refuses to start (ErrDisagree) instead of
// refusing every result signed by the others.
package token

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
	"sync"
)

// SecretSize is the size of a generated secret, in bytes.
const SecretSize = 32

// MinSecretSize is the shortest secret New accepts (a secret stored by
// an older release, or one being retired); ParseSecret, which reads
// configured secrets, wants SecretSize.
const MinSecretSize = 16

// version prefixes every token, so that the format can change without a
// token of one format ever verifying as another.
const version = "v1."

// domain separates these MACs from any other use of the same secret.
const domain = "jetflow invocation token v1"

// ErrSecret is wrapped by every refusal of a secret.
var ErrSecret = errors.New("invalid token secret")

// Signer signs and verifies tokens. It is safe for concurrent use.
type Signer struct {
	// keys[0] signs; every key verifies (the others are retired secrets
	// still accepted while invocations signed with them are in flight).
	keys [][]byte
	// macs[i] holds HMAC states keyed with keys[i], reset between uses:
	// keying one (hmac.New) costs two SHA-256 blocks and six
	// allocations, paid once per state instead of once per token.
	macs []*sync.Pool
}

// macState is one keyed HMAC and the scratch its input is built in.
type macState struct {
	h   hash.Hash
	buf []byte
	sum [sha256.Size]byte
}

// New returns a signer that signs with secret and also accepts tokens
// signed with any of previous (secrets being rotated out).
func New(secret []byte, previous ...[]byte) (*Signer, error) {
	s := &Signer{}
	for i, k := range append([][]byte{secret}, previous...) {
		if len(k) < MinSecretSize {
			return nil, fmt.Errorf("%w: secret %d is %d bytes, at least %d are needed", ErrSecret, i, len(k), MinSecretSize)
		}
		key := append([]byte(nil), k...)
		s.keys = append(s.keys, key)
		s.macs = append(s.macs, &sync.Pool{New: func() any {
			return &macState{h: hmac.New(sha256.New, key), buf: make([]byte, 0, 128)}
		}})
	}
	return s, nil
}

// Generate returns a new random secret of SecretSize bytes.
func Generate() ([]byte, error) {
	b := make([]byte, SecretSize)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("token: generate secret: %w", err)
	}
	return b, nil
}

// ParseSecret reads a configured secret written as hex (tried first) or
// as standard or URL-safe base64, padded or not, as configuration files
// and environment variables carry it. It must hold at least SecretSize
// bytes, the HMAC-SHA256 output size (`openssl rand -hex 32` makes one).
// The error never quotes the text, which may be a mistyped secret.
func ParseSecret(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	var b []byte
	var err error
	if b, err = hex.DecodeString(s); err != nil {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err = enc.DecodeString(s); err == nil {
				break
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: neither hex nor base64", ErrSecret)
	}
	if len(b) < SecretSize {
		return nil, fmt.Errorf("%w: %d bytes, at least %d are needed", ErrSecret, len(b), SecretSize)
	}
	return b, nil
}

// fingerprintDomain separates fingerprints from tokens made with the same
// secret.
const fingerprintDomain = "jetflow token secret fingerprint v1"

// Fingerprint identifies the signing secret without revealing it: the hex
// of the first 16 bytes of HMAC-SHA256(secret, a fixed label). Dispatchers
// record it to detect a deployment whose dispatchers disagree (Claim), and
// it may be logged. It lets no one sign or guess tokens: every invocation
// already shows workers an HMAC under the same secret.
func (s *Signer) Fingerprint() string { return fingerprint(s.keys[0]) }

func fingerprint(key []byte) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(fingerprintDomain))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Sign returns the token of one invocation.
func (s *Signer) Sign(runID, activation, node string, attempt int) string {
	var b [len(version) + tokenLen]byte
	copy(b[:], version)
	s.encoded(0, b[len(version):], runID, activation, node, attempt)
	return string(b[:])
}

// tokenLen is the length of a token's MAC in base64url without padding.
const tokenLen = (sha256.Size*8 + 5) / 6

// Verify reports whether tok is the token of the invocation, under the
// current secret or a previous one. It compares in constant time.
//
// A token has one spelling: it is compared with the MAC's canonical
// encoding, which accepts exactly what a strict decoding compared with
// the MAC would (no variants in the unused bits, no other alphabet).
func (s *Signer) Verify(runID, activation, node string, attempt int, tok string) bool {
	raw, ok := strings.CutPrefix(tok, version)
	if !ok || len(raw) != tokenLen {
		return false
	}
	var want [tokenLen]byte
	valid := 0
	for i := range s.keys {
		// Every key is tried, so the time taken does not say which matched.
		s.encoded(i, want[:], runID, activation, node, attempt)
		valid |= subtle.ConstantTimeCompare(want[:], []byte(raw))
	}
	return valid == 1
}

// encoded writes the base64url MAC of an invocation under keys[key] into
// dst (tokenLen bytes).
func (s *Signer) encoded(key int, dst []byte, runID, activation, node string, attempt int) {
	st := s.macs[key].Get().(*macState)
	base64.RawURLEncoding.Encode(dst, st.mac(runID, activation, node, attempt))
	s.macs[key].Put(st)
}

// mac is HMAC-SHA256 over the length-prefixed fields, so that no two
// distinct invocations share an input ("ab"+"c" vs "a"+"bc"). The result
// is st's until its next use.
func (st *macState) mac(runID, activation, node string, attempt int) []byte {
	b := st.buf[:0]
	for _, f := range [...]string{domain, runID, activation, node} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	b = binary.AppendVarint(b, int64(attempt))
	st.buf = b
	st.h.Reset()
	st.h.Write(b)
	return st.h.Sum(st.sum[:0])
}
