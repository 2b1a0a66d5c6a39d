package ui

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Who may act, and how a request proves it: a person logs in with a
// token of theirs (Operators) and gets a session, named after them, a random id in a
// cookie (HttpOnly, SameSite=Strict) that the server keeps for
// sessionLife; every form the page shows carries the session's own
// random form token, and every POST must come from the page's own origin
// (Origin or Sec-Fetch-Site, when the browser sends them) and carry both
// the cookie and the form token. A site in another tab can neither send
// the cookie (SameSite), nor read the form token (the same-origin
// policy), nor pass the origin check.

// sessionCookie is the name of the session's cookie.
const sessionCookie = "handoff_session"

// sessionLife is how long a session lasts after its login.
const sessionLife = 8 * time.Hour

// maxSessions bounds the sessions kept: the oldest goes first.
const maxSessions = 1000

// session is a logged-in person's: its form token, and when it ends.
type session struct {
	form     string
	expires  time.Time
	operator string // who logged in: the audit's actor
	token    string // the token they logged in with, checked again at each repair
	// told is what the last repair did, shown once on its row's page.
	told, toldKey string
}

// sessions are the live sessions, by id.
type sessions struct {
	mu  sync.Mutex
	all map[string]session
}

// randomToken is 32 random bytes, base64url.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// start begins a session and returns its id.
func (s *sessions) start(now time.Time, operator, token string) (id string, sess session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.all == nil {
		s.all = map[string]session{}
	}
	for id, sess := range s.all {
		if !now.Before(sess.expires) {
			delete(s.all, id)
		}
	}
	for len(s.all) >= maxSessions {
		var oldest string
		for id, sess := range s.all {
			if oldest == "" || sess.expires.Before(s.all[oldest].expires) {
				oldest = id
			}
		}
		delete(s.all, oldest)
	}
	id, sess = randomToken(), session{form: randomToken(), expires: now.Add(sessionLife), operator: operator, token: token}
	s.all[id] = sess
	return id, sess
}

// of returns the live session of r's cookie.
func (s *sessions) of(r *http.Request, now time.Time) (string, session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", session{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.all[c.Value]
	if !ok || !now.Before(sess.expires) {
		return "", session{}, false
	}
	return c.Value, sess, true
}

// tell keeps what a repair of key did, for the session's next view of
// that row.
func (s *sessions) tell(id, key, what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.all[id]; ok {
		sess.told, sess.toldKey = what, key
		s.all[id] = sess
	}
}

// told returns, once, what the session's last repair of key did.
func (s *sessions) told(id, key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.all[id]
	if !ok || sess.toldKey != key {
		return ""
	}
	what := sess.told
	sess.told, sess.toldKey = "", ""
	s.all[id] = sess
	return what
}

// end ends the session id.
func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.all, id)
}

// equal compares two secrets in a time that says nothing of where they
// differ, nor of their lengths.
func equal(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// sameOrigin reports whether r, a POST, comes from a page of this server:
// its Origin, when the browser sends one, is this server's (https when
// the page is reached over TLS or through the proxy of PublicHost);
// otherwise its Sec-Fetch-Site, when sent, says same-origin. A request
// that carries neither (not a browser's) passes this check, and must
// still carry the session and the form token.
func (p *page) sameOrigin(r *http.Request) bool {
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil {
			return false
		}
		scheme := "http"
		if p.secure(r) {
			scheme = "https"
		}
		return u.Scheme == scheme && strings.EqualFold(u.Host, r.Host)
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin" || site == "none"
	}
	return true
}

// loopbackHost reports whether the Host r names is this machine's
// loopback (localhost, 127.0.0.0/8, ::1): a page that listens on loopback
// answers no other name, so that a site whose name an attacker points at
// 127.0.0.1 (DNS rebinding) cannot read it.
func loopbackHost(r *http.Request) bool {
	host := hostName(r.Host)
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostName is the name of a Host header, without its port or an IPv6
// address's brackets.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}
