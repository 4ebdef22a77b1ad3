package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"sync"
	"testing"
)

// referenceToken is the token format as first shipped, spelt out with a
// fresh HMAC per token: tokens already handed to workers must keep
// verifying, so Sign must write exactly these bytes.
func referenceToken(key []byte, runID, activation, node string, attempt int) string {
	h := hmac.New(sha256.New, key)
	var n [binary.MaxVarintLen64]byte
	for _, f := range []string{domain, runID, activation, node} {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
		h.Write([]byte(f))
	}
	h.Write(n[:binary.PutVarint(n[:], int64(attempt))])
	return version + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

func TestSignKeepsTheFormat(t *testing.T) {
	t.Parallel()
	s := signer(t, 3, make([]byte, MinSecretSize))
	long := strings.Repeat("x", 300) // longer than the scratch a state starts with
	for _, c := range []struct {
		run, act, node string
		attempt        int
	}{
		{"r1", `["r1","/states/a",1]`, "task", 1},
		{"", "", "", 0},
		{"r", "a", "n", -7},
		{long, long, long, 1 << 40},
		{"r2", "ä\x00", "n", 2},
	} {
		want := referenceToken(s.keys[0], c.run, c.act, c.node, c.attempt)
		if got := s.Sign(c.run, c.act, c.node, c.attempt); got != want {
			t.Errorf("Sign(%q,%q,%q,%d) = %s, want %s", c.run, c.act, c.node, c.attempt, got, want)
		}
		if !s.Verify(c.run, c.act, c.node, c.attempt, want) {
			t.Errorf("the reference token of (%q,%q,%q,%d) does not verify", c.run, c.act, c.node, c.attempt)
		}
		if prev := referenceToken(s.keys[1], c.run, c.act, c.node, c.attempt); !s.Verify(c.run, c.act, c.node, c.attempt, prev) {
			t.Errorf("the previous secret's token of (%q,%q,%q,%d) does not verify", c.run, c.act, c.node, c.attempt)
		}
	}
}

// TestVerifyRefusesOtherSpellings: the last of a token's 43 characters
// carries 2 unused bits; a token with them set decodes to the same MAC
// under a lenient decoder and must still be refused.
func TestVerifyRefusesOtherSpellings(t *testing.T) {
	t.Parallel()
	s := signer(t, 4)
	tok := s.Sign("r", "a", "n", 1)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, tok[len(tok)-1])
	for unused := 1; unused < 4; unused++ {
		variant := tok[:len(tok)-1] + string(alphabet[last|unused])
		if variant != tok && s.Verify("r", "a", "n", 1, variant) {
			t.Errorf("the spelling %s of %s verifies", variant, tok)
		}
	}
}

// TestSignConcurrently shares the signer's states between goroutines
// (run with -race).
func TestSignConcurrently(t *testing.T) {
	t.Parallel()
	s := signer(t, 5)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				run := string(rune('a' + g))
				if got, want := s.Sign(run, "act", "n", i), referenceToken(s.keys[0], run, "act", "n", i); got != want {
					t.Errorf("Sign(%s, %d) = %s, want %s", run, i, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkSign and BenchmarkVerify: what each invocation and each result
// costs a dispatcher.
//
//	go test ./token -run '^$' -bench 'Sign|Verify' -benchmem
func BenchmarkSign(b *testing.B) {
	s := signer(b, 6)
	b.ReportAllocs()
	for range b.N {
		_ = s.Sign("ot-0-1234", `["ot-0-1234","/states/work",1]`, "task", 1)
	}
}

func BenchmarkVerify(b *testing.B) {
	s := signer(b, 6)
	tok := s.Sign("ot-0-1234", `["ot-0-1234","/states/work",1]`, "task", 1)
	b.ReportAllocs()
	for range b.N {
		if !s.Verify("ot-0-1234", `["ot-0-1234","/states/work",1]`, "task", 1, tok) {
			b.Fatal("refused")
		}
	}
}
