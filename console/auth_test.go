package console

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// front is a second console over a bundle's deployment, with its own
// configuration, behind a real HTTP server.
type front struct {
	c   *Console
	url string // the console's base URL
}

func (b *bundle) front(t *testing.T, cfg Config) *front {
	t.Helper()
	cfg.Logger = quiet()
	c, err := New(fromFleet(b.f, cfg))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	c.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { stopCtx(t, c.Stop) })
	return &front{c: c, url: srv.URL + "/console"}
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// do sends a request with the given headers and returns the status, the
// Location header and the body.
func (f *front) do(t *testing.T, method, path, body string, hdr http.Header) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if method == http.MethodPost && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(actionHeader, "1")
	}
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Location"), string(raw)
}

func bearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

func basic(user, pw string) http.Header {
	r, _ := http.NewRequest(http.MethodGet, "http://x", nil)
	r.SetBasicAuth(user, pw)
	return r.Header
}

const testToken = "t0ken-for-the-console-tests"

// TestAuthModes: with each mode on, every endpoint (pages, the JSON API,
// event streams, actions) refuses a request without credentials or with
// wrong ones, and answers one with the right ones.
func TestAuthModes(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	hashed, err := ParseBasic("ana:" + string(hash))
	if err != nil || !hashed.Hashed() {
		t.Fatalf("ParseBasic of a bcrypt hash: %v", err)
	}
	plain, err := ParseBasic("ben:pl@in:text")
	if err != nil || plain.Hashed() {
		t.Fatalf("ParseBasic of a password: %v", err)
	}
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	modes := []struct {
		name        string
		auth        Auth
		good, wrong http.Header
		who         string
	}{
		{"token", Auth{Token: testToken}, bearer(testToken), bearer(testToken + "x"), TokenIdentity},
		{"basic bcrypt", Auth{Basic: hashed}, basic("ana", "s3cret"), basic("ana", "s3cre"), "ana"},
		{"basic plain", Auth{Basic: plain}, basic("ben", "pl@in:text"), basic("bob", "pl@in:text"), "ben"},
		{
			"forward",
			Auth{ForwardHeader: "X-Forwarded-User", TrustedProxies: loopback},
			http.Header{"X-Forwarded-User": {"carla"}},
			http.Header{"X-Other-User": {"carla"}},
			"carla",
		},
	}
	paths := []struct{ method, path, body string }{
		{http.MethodGet, "/api/overview", ""},
		{http.MethodGet, "/api/runs", ""},
		{http.MethodGet, "/api/audit", ""},
		{http.MethodGet, "/api/events", ""},
		{http.MethodGet, "/api/jobs/events", ""},
		{http.MethodPost, "/api/runs/nobody/cancel", `{}`},
		{http.MethodGet, "/", ""},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			f := b.front(t, Config{Actions: true, Auth: m.auth, Addr: "0.0.0.0:7070"})
			for _, p := range paths {
				for _, hdr := range []http.Header{nil, m.wrong} {
					status, loc, body := f.do(t, p.method, p.path, p.body, hdr)
					page := p.path == "/" && m.auth.login()
					switch {
					case page && (status != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/login?next=")):
						t.Errorf("%s %s with %v: %d %q, want a redirect to the login form", p.method, p.path, hdr, status, loc)
					case !page && status != http.StatusUnauthorized:
						t.Errorf("%s %s with %v: %d %s, want 401", p.method, p.path, hdr, status, body)
					}
				}
			}
			// Events streams answer with the right credentials (the first
			// bytes suffice); the rest answer in full.
			if status, _, body := f.do(t, http.MethodGet, "/api/overview", "", m.good); status != http.StatusOK {
				t.Fatalf("overview with credentials: %d %s", status, body)
			}
			if status, _, body := f.do(t, http.MethodGet, "/", "", m.good); status != http.StatusOK || !strings.Contains(body, `id="who"`) || !strings.Contains(body, m.who) {
				t.Fatalf("the page with credentials: %d, want the identity %q shown in\n%s", status, m.who, body)
			}
			// Static files (code and style, no data) and the login form
			// need none.
			if status, _, _ := f.do(t, http.MethodGet, "/static/app.js", "", nil); status != http.StatusOK {
				t.Fatalf("static file without credentials: %d", status)
			}
		})
	}
}

// TestForwardAuthTrustedOnlyFromProxies: the header is believed from a
// trusted proxy's address and ignored from any other peer.
func TestForwardAuthTrustedOnlyFromProxies(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	user := http.Header{"X-Forwarded-User": {"dora"}}
	untrusted := b.front(t, Config{Auth: Auth{ForwardHeader: "X-Forwarded-User", TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}})
	status, _, body := untrusted.do(t, http.MethodGet, "/api/overview", "", user)
	if status != http.StatusUnauthorized || !strings.Contains(body, "not a trusted proxy") {
		t.Fatalf("the header from an untrusted peer: %d %s, want 401 saying the peer is not trusted", status, body)
	}
	trusted := b.front(t, Config{Auth: Auth{ForwardHeader: "X-Forwarded-User", TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}}})
	if status, _, body := trusted.do(t, http.MethodGet, "/api/overview", "", user); status != http.StatusOK {
		t.Fatalf("the header from a trusted proxy: %d %s", status, body)
	}
	if status, _, body := trusted.do(t, http.MethodGet, "/api/overview", "", http.Header{"X-Forwarded-User": {"a\tb"}}); status != http.StatusUnauthorized {
		t.Fatalf("a control character in the header: %d %s, want 401", status, body)
	}
}

// TestLoginForm: the form signs a browser in with the token or the
// basic-auth user; the session cookie then stands for them, and a forged
// one does not.
func TestLoginForm(t *testing.T) {
	b := setup(t, setupOptions{})
	cred, err := ParseBasic("ana:s3cret")
	if err != nil {
		t.Fatal(err)
	}
	f := b.front(t, Config{Auth: Auth{Token: testToken, Basic: cred}})
	form := func(v url.Values) (int, string, *http.Cookie) {
		res, err := noRedirect.PostForm(f.url+"/login", v)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = res.Body.Close() }()
		for _, c := range res.Cookies() {
			if c.Name == sessionCookie {
				return res.StatusCode, res.Header.Get("Location"), c
			}
		}
		return res.StatusCode, res.Header.Get("Location"), nil
	}
	if status, _, body := f.do(t, http.MethodGet, "/login?next=/console/jobs", "", nil); status != http.StatusOK || !strings.Contains(body, `name="token"`) || !strings.Contains(body, `name="password"`) || !strings.Contains(body, `value="/console/jobs"`) {
		t.Fatalf("the login form: %d\n%s", status, body)
	}
	// A sign-in posted from another site is refused.
	req, err := http.NewRequest(http.MethodPost, f.url+"/login", strings.NewReader(url.Values{"token": {testToken}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusForbidden || len(res.Cookies()) != 0 {
		t.Fatalf("a sign-in from another origin: %d, cookies %v", res.StatusCode, res.Cookies())
	}
	if status, _, c := form(url.Values{"token": {"wrong-token-of-some-length"}}); status != http.StatusUnauthorized || c != nil {
		t.Fatalf("a wrong token: %d, cookie %v", status, c)
	}
	if status, _, c := form(url.Values{"user": {"ana"}, "password": {"nope"}}); status != http.StatusUnauthorized || c != nil {
		t.Fatalf("a wrong password: %d, cookie %v", status, c)
	}
	for _, tc := range []struct {
		v         url.Values
		who, next string
	}{
		{url.Values{"token": {testToken}, "next": {"/console/jobs"}}, TokenIdentity, "/console/jobs"},
		{url.Values{"user": {"ana"}, "password": {"s3cret"}, "next": {"//evil.example/console/"}}, "ana", "/console/"},
	} {
		status, loc, c := form(tc.v)
		if status != http.StatusSeeOther || loc != tc.next || c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
			t.Fatalf("sign-in as %s: %d to %q, cookie %+v", tc.who, status, loc, c)
		}
		cookie := http.Header{"Cookie": {c.Name + "=" + c.Value}}
		if status, _, body := f.do(t, http.MethodGet, "/", "", cookie); status != http.StatusOK || !strings.Contains(body, tc.who) {
			t.Fatalf("the page with %s's session: %d", tc.who, status)
		}
		// A session whose identity is changed is refused.
		forged := http.Header{"Cookie": {c.Name + "=" + forge(t, c.Value, "mallory")}}
		if status, _, body := f.do(t, http.MethodGet, "/api/overview", "", forged); status != http.StatusUnauthorized {
			t.Fatalf("a forged session: %d %s", status, body)
		}
	}
	// An expired session is refused.
	was := timeNow
	timeNow = func() time.Time { return was().Add(-sessionTTL - time.Minute) }
	old := f.c.signSession("ana")
	timeNow = was
	if status, _, body := f.do(t, http.MethodGet, "/api/overview", "", http.Header{"Cookie": {sessionCookie + "=" + old}}); status != http.StatusUnauthorized || !strings.Contains(body, "expired") {
		t.Fatalf("an expired session: %d %s", status, body)
	}
}

// forge replaces a session's identity and keeps its signature.
func forge(t *testing.T, v, who string) string {
	t.Helper()
	_, sig, _ := strings.Cut(v, ".")
	body, err := json.Marshal(session{Who: who, Expires: time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(body) + "." + sig
}

// TestExposedActionsNeedAuth: actions on an address others can reach
// need authentication; New refuses and names the flags.
func TestExposedActionsNeedAuth(t *testing.T) {
	b := setup(t, setupOptions{})
	for _, tc := range []struct {
		addr    string
		auth    Auth
		actions bool
		refused bool
	}{
		{"0.0.0.0:7070", Auth{}, true, true},
		{":7070", Auth{}, true, true},
		{"192.0.2.1:7070", Auth{}, true, true},
		{"0.0.0.0:7070", Auth{}, false, false},
		{"0.0.0.0:7070", Auth{Token: testToken}, true, false},
		{"127.0.0.1:7070", Auth{}, true, false},
		{"[::1]:7070", Auth{}, true, false},
		{"localhost:7070", Auth{}, true, false},
	} {
		_, err := New(fromFleet(b.f, Config{Actions: tc.actions, Auth: tc.auth, Addr: tc.addr}))
		if tc.refused != (err != nil) {
			t.Errorf("%s actions=%v auth=%v: %v", tc.addr, tc.actions, tc.auth.On(), err)
		}
		if err != nil && (!strings.Contains(err.Error(), "--console-token") || !strings.Contains(err.Error(), "--console-forward-auth-header")) {
			t.Errorf("the refusal names no flag: %v", err)
		}
	}
	if _, err := New(fromFleet(b.f, Config{Auth: Auth{ForwardHeader: "X-Forwarded-User"}})); err == nil || !strings.Contains(err.Error(), "--console-trusted-proxies") {
		t.Fatalf("a forward-auth header without trusted proxies: %v", err)
	}
}
