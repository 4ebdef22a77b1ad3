package console

import (
	"strings"
	"testing"
)

var basicCases = []struct {
	in     string
	user   string
	hashed bool
	ok     bool
}{
	{"ana:s3cret", "ana", false, true},
	{"ana:pass:with:colons", "ana", false, true},
	{"ana:$2b$10$short", "", false, false}, // looks like bcrypt, is not
	{"ana:$2a$04$4BrC7v3Rb1xXVn0nEtf9ZOuw3yFbO8k2pRS7n5QmZkR7lq0iC0Gm6", "ana", true, true},
	{"ana", "", false, false},
	{":pw", "", false, false},
	{"ana:", "", false, false},
	{"a\x00na:pw", "", false, false},
}

func TestParseBasic(t *testing.T) {
	t.Parallel()
	for _, tc := range basicCases {
		c, err := ParseBasic(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseBasic(%q): %v, want ok=%v", tc.in, err, tc.ok)
			continue
		}
		if err == nil && (c.User != tc.user || c.Hashed() != tc.hashed) {
			t.Errorf("ParseBasic(%q) = user %q hashed %v", tc.in, c.User, c.Hashed())
		}
	}
	c, err := ParseBasic("ana:s3cret")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		user, pw string
		ok       bool
	}{{"ana", "s3cret", true}, {"ana", "s3cre", false}, {"an", "s3cret", false}, {"ana", "s3cret ", false}} {
		if c.check(tc.user, tc.pw) != tc.ok {
			t.Errorf("check(%q, %q) != %v", tc.user, tc.pw, tc.ok)
		}
	}
}

var proxyCases = []struct {
	in   string
	want string
	ok   bool
}{
	{"10.0.0.0/8", "10.0.0.0/8", true},
	{"10.1.2.3/8, 127.0.0.1", "10.0.0.0/8 127.0.0.1/32", true},
	{"::1,fd00::/8", "::1/128 fd00::/8", true},
	{"", "", true},
	{"10.0.0.0/33", "", false},
	{"proxy.local", "", false},
}

func TestParseTrustedProxies(t *testing.T) {
	t.Parallel()
	for _, tc := range proxyCases {
		ps, err := ParseTrustedProxies(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseTrustedProxies(%q): %v", tc.in, err)
			continue
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.String())
		}
		if err == nil && strings.Join(got, " ") != tc.want {
			t.Errorf("ParseTrustedProxies(%q) = %v, want %s", tc.in, got, tc.want)
		}
	}
}

var nextCases = []struct{ in, want string }{
	{"/console/jobs", "/console/jobs"},
	{"/console/runs/a?x=1", "/console/runs/a?x=1"},
	{"//evil.example/console/", "/console/"},
	{"https://evil.example/console/", "/console/"},
	{"/console/\\evil", "/console/"},
	{"/other", "/console/"},
	{"", "/console/"},
}

func TestSafeNext(t *testing.T) {
	t.Parallel()
	for _, tc := range nextCases {
		if got := safeNext("/console", tc.in); got != tc.want {
			t.Errorf("safeNext(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzAuthParsers: no input makes a parser panic, a session that was not
// signed is never accepted, and a redirect never leaves the console.
func FuzzAuthParsers(f *testing.F) {
	for _, tc := range basicCases {
		f.Add(tc.in)
	}
	for _, tc := range proxyCases {
		f.Add(tc.in)
	}
	for _, tc := range nextCases {
		f.Add(tc.in)
	}
	c := &Console{sessionKey: newSessionKey()}
	c.cfg.Base = "/console"
	f.Add(c.signSession("ana"))
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseBasic(s)
		_, _ = ParseTrustedProxies(s)
		_ = IsLoopback(s)
		if next := safeNext("/console", s); !strings.HasPrefix(next, "/console/") || strings.HasPrefix(next, "//") {
			t.Fatalf("safeNext(%q) = %q", s, next)
		}
		other := &Console{sessionKey: newSessionKey()}
		if who, ok := other.readSession(s); ok {
			t.Fatalf("a session signed with another key was accepted: %q as %q", s, who)
		}
		_, _ = c.readSession(s)
	})
}
