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
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
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
}

// New returns a signer that signs with secret and also accepts tokens
// signed with any of previous (secrets being rotated out).
func New(secret []byte, previous ...[]byte) (*Signer, error) {
	s := &Signer{}
	for i, k := range append([][]byte{secret}, previous...) {
		if len(k) < MinSecretSize {
			return nil, fmt.Errorf("%w: secret %d is %d bytes, at least %d are needed", ErrSecret, i, len(k), MinSecretSize)
		}
		s.keys = append(s.keys, append([]byte(nil), k...))
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
	return version + base64.RawURLEncoding.EncodeToString(mac(s.keys[0], runID, activation, node, attempt))
}

// Verify reports whether tok is the token of the invocation, under the
// current secret or a previous one. It compares in constant time.
func (s *Signer) Verify(runID, activation, node string, attempt int, tok string) bool {
	raw, ok := strings.CutPrefix(tok, version)
	if !ok || base64.RawURLEncoding.DecodedLen(len(raw)) != sha256.Size {
		return false
	}
	// Strict: a token has one spelling (no variants in the unused bits).
	got, err := base64.RawURLEncoding.Strict().DecodeString(raw)
	if err != nil {
		return false
	}
	valid := false
	for _, k := range s.keys {
		// Every key is tried, so the time taken does not say which matched.
		if hmac.Equal(got, mac(k, runID, activation, node, attempt)) {
			valid = true
		}
	}
	return valid
}

// mac is HMAC-SHA256 over the length-prefixed fields, so that no two
// distinct invocations share an input ("ab"+"c" vs "a"+"bc").
func mac(key []byte, runID, activation, node string, attempt int) []byte {
	h := hmac.New(sha256.New, key)
	var n [binary.MaxVarintLen64]byte
	for _, f := range []string{domain, runID, activation, node} {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
		h.Write([]byte(f))
	}
	h.Write(n[:binary.PutVarint(n[:], int64(attempt))])
	return h.Sum(nil)
}
