package console

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
)

// The login form: a browser cannot send a bearer token by itself, so it
// signs in here once (with the token, or the basic-auth user) and then
// carries the session cookie. Plain HTML, no script.

// loginData is what the login template receives.
type loginData struct {
	Base         string
	Token, Basic bool
	Next, Error  string
}

func (c *Console) serveLogin(w http.ResponseWriter, r *http.Request) {
	c.renderLogin(w, http.StatusOK, loginData{Next: safeNext(c.cfg.Base, r.URL.Query().Get("next"))})
}

func (c *Console) renderLogin(w http.ResponseWriter, status int, d loginData) {
	h := w.Header()
	// The page's one form posts to itself.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	// With no-referrer a browser posts the form with Origin "null",
	// which postLogin refuses; same-origin lets it say where it is.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	d.Base, d.Token, d.Basic = c.cfg.Base, c.cfg.Auth.Token != "", c.cfg.Auth.Basic != nil
	w.WriteHeader(status)
	if err := c.login.Execute(w, d); err != nil {
		c.log.Warn("console: render login", slog.Any("error", err))
	}
}

// postLogin checks the form and sets the session cookie.
func (c *Console) postLogin(w http.ResponseWriter, r *http.Request) {
	next := safeNext(c.cfg.Base, r.FormValue("next"))
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || u.Host != r.Host {
			c.renderLogin(w, http.StatusForbidden, loginData{Next: next, Error: "a sign-in from another site is refused"})
			return
		}
	}
	a := c.cfg.Auth
	who := ""
	switch {
	case !a.login():
		c.renderLogin(w, http.StatusNotFound, loginData{Next: next, Error: "this console signs nobody in: it has no token or basic-auth user"})
		return
	case r.FormValue("token") != "" && a.Token != "":
		if equal(r.FormValue("token"), a.Token) == 1 {
			who = TokenIdentity
		}
	case r.FormValue("user") != "" && a.Basic != nil:
		if a.Basic.check(r.FormValue("user"), r.FormValue("password")) {
			who = a.Basic.User
		}
	}
	if who == "" {
		c.log.Info("console: sign-in refused", slog.String("remote", r.RemoteAddr))
		c.renderLogin(w, http.StatusUnauthorized, loginData{Next: next, Error: "Wrong credentials."})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: c.signSession(who), Path: c.cfg.Base,
		MaxAge: int(sessionTTL.Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https"),
	})
	c.log.Info("console: signed in", slog.String("who", who), slog.String("remote", r.RemoteAddr))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout clears the session cookie.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: c.cfg.Base, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, c.cfg.Base+"/login", http.StatusSeeOther)
}

// safeNext keeps a redirect inside the console: a path under base, never
// another host ("//evil", "/\evil").
func safeNext(base, next string) string {
	if strings.HasPrefix(next, base+"/") && !strings.ContainsAny(next, "\\\r\n") && !strings.HasPrefix(next, "//") {
		if u, err := url.Parse(next); err == nil && u.Host == "" && u.Scheme == "" {
			return next
		}
	}
	return base + "/"
}
