package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"golang.org/x/crypto/bcrypt"
)

// Authentication of the console's own (docs/CONSOLE.md#authentication):
// a bearer token, a basic-auth user, or the user a trusted proxy names in
// a header. Any configured mode lets a request in; with none, everyone
// who reaches the port is "anonymous". A browser signs in once through
// the login form and then carries a signed session cookie.

// Anonymous is the identity of every request to a console without
// authentication.
const Anonymous = "anonymous"

// TokenIdentity is the identity of a request that gave the bearer token.
const TokenIdentity = "token"

// Auth says who may use the console. The zero value lets everyone in.
type Auth struct {
	// Token is a bearer token ("Authorization: Bearer TOKEN", or typed
	// into the login form). Default "": off.
	Token string
	// Basic is a user and its password ("Authorization: Basic", or the
	// login form). Default nil: off.
	Basic *BasicCredential
	// ForwardHeader names the header a trusted proxy sets to the user it
	// authenticated ("X-Forwarded-User"); it is believed only from a peer
	// in TrustedProxies, and ignored from any other. Default "": off.
	ForwardHeader string
	// TrustedProxies are the peers ForwardHeader is believed from.
	// Required with ForwardHeader.
	TrustedProxies []netip.Prefix
}

// On reports whether any mode is configured.
func (a Auth) On() bool { return a.Token != "" || a.Basic != nil || a.ForwardHeader != "" }

// login reports whether the login form has a mode to sign in with.
func (a Auth) login() bool { return a.Token != "" || a.Basic != nil }

func (a Auth) validate() error {
	var errs []error
	if a.ForwardHeader != "" && len(a.TrustedProxies) == 0 {
		errs = append(errs, fmt.Errorf("console: the forward-auth header %s needs the proxies it is trusted from (--console-trusted-proxies CIDR,...)", a.ForwardHeader))
	}
	if a.ForwardHeader == "" && len(a.TrustedProxies) > 0 {
		errs = append(errs, errors.New("console: trusted proxies without a forward-auth header to trust (--console-forward-auth-header X-Forwarded-User)"))
	}
	if a.Token != "" && len(a.Token) < 16 {
		errs = append(errs, errors.New("console: the token is shorter than 16 characters: use a random one (openssl rand -hex 32)"))
	}
	return errors.Join(errs...)
}

// BasicCredential is a basic-auth user and its password, kept as a bcrypt
// hash or as plain text.
type BasicCredential struct {
	User  string
	hash  []byte
	plain []byte
	// ok remembers credentials that matched a hash, by their SHA-256,
	// so that a client sending basic auth on every request pays for
	// bcrypt once.
	mu sync.Mutex
	ok map[[32]byte]bool
}

// ParseBasic reads "user:secret". A secret that starts with $2a$, $2b$ or
// $2y$ is a bcrypt hash (`htpasswd -nbB USER PASSWORD` prints the
// line); anything else is the password in plain text.
func ParseBasic(s string) (*BasicCredential, error) {
	user, secret, ok := strings.Cut(s, ":")
	switch {
	case !ok:
		return nil, errors.New("basic credentials must be user:bcrypt-hash or user:password (no ':' found)")
	case user == "" || secret == "":
		return nil, errors.New("basic credentials must name a user and a secret (user:bcrypt-hash or user:password)")
	case strings.IndexFunc(user, unicode.IsControl) >= 0:
		return nil, errors.New("the basic-auth user holds a control character")
	}
	c := &BasicCredential{User: user, ok: map[[32]byte]bool{}}
	if isBcrypt(secret) {
		if _, err := bcrypt.Cost([]byte(secret)); err != nil {
			return nil, fmt.Errorf("the basic-auth secret of %s looks like a bcrypt hash but is not one: %w", user, err)
		}
		c.hash = []byte(secret)
	} else {
		c.plain = []byte(secret)
	}
	return c, nil
}

func isBcrypt(s string) bool {
	return strings.HasPrefix(s, "$2a$") || strings.HasPrefix(s, "$2b$") || strings.HasPrefix(s, "$2y$")
}

// Hashed reports whether the password is kept as a bcrypt hash.
func (c *BasicCredential) Hashed() bool { return c.hash != nil }

// check compares in constant time (bcrypt's own for a hash).
func (c *BasicCredential) check(user, password string) bool {
	userOK := equal(user, c.User)
	if c.hash == nil {
		return subtle.ConstantTimeCompare([]byte(password), c.plain)&userOK == 1
	}
	key := sha256.Sum256([]byte(user + "\x00" + password))
	c.mu.Lock()
	known := c.ok[key]
	c.mu.Unlock()
	if known {
		return userOK == 1
	}
	if bcrypt.CompareHashAndPassword(c.hash, []byte(password)) != nil || userOK != 1 {
		return false
	}
	c.mu.Lock()
	if len(c.ok) < 64 {
		c.ok[key] = true
	}
	c.mu.Unlock()
	return true
}

// equal compares in time independent of where a and b differ and of
// their lengths (both are hashed first); 1 when equal.
func equal(a, b string) int {
	x, y := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(x[:], y[:])
}

// ParseTrustedProxies reads a comma-separated list of CIDRs or addresses
// ("10.0.0.0/8,127.0.0.1").
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q is neither a CIDR (10.0.0.0/8) nor an address (127.0.0.1)", f)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// CheckExposure refuses actions on addr, where the console is served,
// when it is not loopback and no authentication is on: anyone who
// reached the port could act on runs. An empty addr is not checked.
func CheckExposure(addr string, actions bool, a Auth) error {
	if actions && !a.On() && addr != "" && !IsLoopback(addr) {
		return fmt.Errorf("console: actions on %s, which is not a loopback address, without authentication: anyone who reaches it could act on runs; give --console-token, --console-basic or --console-forward-auth-header with --console-trusted-proxies, or serve it on 127.0.0.1", addr)
	}
	return nil
}

// IsLoopback reports whether a listen address (host:port) is reachable
// only from this machine: a loopback IP or "localhost".
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && a.IsLoopback()
}

// identityKey carries the request's identity in its context.
type identityKey struct{}

// Identity is who made the request, as the console authenticated it.
func Identity(ctx context.Context) string {
	if who, ok := ctx.Value(identityKey{}).(string); ok {
		return who
	}
	return Anonymous
}

// maxIdentity bounds an identity from a header or a session.
const maxIdentity = 256

// authenticate returns the request's identity, or why it has none.
func (c *Console) authenticate(r *http.Request) (string, string) {
	a := c.cfg.Auth
	if !a.On() {
		return Anonymous, ""
	}
	var why []string
	if a.ForwardHeader != "" {
		if v := r.Header.Get(a.ForwardHeader); v != "" {
			switch peer, trusted := c.trustedPeer(r); {
			case !trusted:
				why = append(why, fmt.Sprintf("the %s header is ignored from %s, which is not a trusted proxy", a.ForwardHeader, peer))
			case !goodIdentity(v):
				why = append(why, fmt.Sprintf("the %s header holds no usable user name", a.ForwardHeader))
			default:
				return v, ""
			}
		}
	}
	if kind, cred, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok {
		switch {
		case strings.EqualFold(kind, "Bearer") && a.Token != "":
			if equal(strings.TrimSpace(cred), a.Token) == 1 {
				return TokenIdentity, ""
			}
			why = append(why, "the bearer token is wrong")
		case strings.EqualFold(kind, "Basic") && a.Basic != nil:
			if user, pw, ok := r.BasicAuth(); ok && a.Basic.check(user, pw) {
				return a.Basic.User, ""
			}
			why = append(why, "the basic-auth user or password is wrong")
		}
	}
	if ck, err := r.Cookie(sessionCookie); err == nil {
		if who, ok := c.readSession(ck.Value); ok {
			return who, ""
		}
		why = append(why, "the session has expired: sign in again")
	}
	if len(why) == 0 {
		why = append(why, "no credentials: "+c.modes())
	}
	return "", strings.Join(why, "; ")
}

// modes says how to authenticate, for a 401.
func (c *Console) modes() string {
	a := c.cfg.Auth
	var m []string
	if a.Token != "" {
		m = append(m, "Authorization: Bearer TOKEN")
	}
	if a.Basic != nil {
		m = append(m, "Authorization: Basic (user and password)")
	}
	if a.login() {
		m = append(m, "the login form at "+c.cfg.Base+"/login")
	}
	if a.ForwardHeader != "" {
		m = append(m, "the "+a.ForwardHeader+" header set by a trusted proxy")
	}
	return "send " + strings.Join(m, ", or ")
}

func (c *Console) trustedPeer(r *http.Request) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	peer := ap.Addr().Unmap()
	for _, p := range c.cfg.Auth.TrustedProxies {
		if p.Contains(peer) {
			return peer, true
		}
	}
	return peer, false
}

func goodIdentity(v string) bool {
	v = strings.TrimSpace(v)
	return v != "" && len(v) <= maxIdentity && strings.IndexFunc(v, unicode.IsControl) < 0
}

// Sessions: after the login form, a cookie holding the identity and an
// expiry, signed with a key made at New (a restart signs everyone out).

const (
	sessionCookie = "jetflow_console"
	sessionTTL    = 12 * time.Hour
)

type session struct {
	Who     string `json:"u"`
	Expires int64  `json:"e"`
}

func newSessionKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // never fails (crypto/rand)
	return k
}

func (c *Console) signSession(who string) string {
	body, _ := json.Marshal(session{Who: who, Expires: timeNow().Add(sessionTTL).Unix()})
	m := hmac.New(sha256.New, c.sessionKey)
	m.Write(body)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(body) + "." + enc.EncodeToString(m.Sum(nil))
}

// readSession checks a session cookie's signature and expiry.
func (c *Console) readSession(v string) (string, bool) {
	b64, sig64, ok := strings.Cut(v, ".")
	if !ok {
		return "", false
	}
	enc := base64.RawURLEncoding
	body, err1 := enc.DecodeString(b64)
	sig, err2 := enc.DecodeString(sig64)
	if err1 != nil || err2 != nil {
		return "", false
	}
	m := hmac.New(sha256.New, c.sessionKey)
	m.Write(body)
	if !hmac.Equal(sig, m.Sum(nil)) {
		return "", false
	}
	var s session
	if json.Unmarshal(body, &s) != nil || !goodIdentity(s.Who) || timeNow().Unix() >= s.Expires {
		return "", false
	}
	return s.Who, true
}

// refuse answers a request without a valid identity: the login form for
// a page, 401 for the API (event streams included).
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, why string) {
	c.log.Info("console: request refused", slog.String("path", r.URL.Path), slog.String("remote", r.RemoteAddr), slog.String("reason", why))
	if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, c.cfg.Base+"/api/") && c.cfg.Auth.login() {
		http.Redirect(w, r, c.cfg.Base+"/login?next="+url.QueryEscape(r.URL.Path), http.StatusSeeOther)
		return
	}
	if c.cfg.Auth.Token != "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="jetflow console"`)
	} else if c.cfg.Auth.Basic != nil {
		if _, err := r.Cookie(sessionCookie); err != nil {
			// Not after a session expired: the page's own requests must
			// not raise the browser's password dialog.
			w.Header().Set("WWW-Authenticate", `Basic realm="jetflow console"`)
		}
	}
	writeError(w, http.StatusUnauthorized, "not authenticated: "+why)
}
