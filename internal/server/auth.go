package server

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/openai"
)

// requireKey answers 401 unless the request carries the API key.
func (s *Server) requireKey(h http.Handler) http.Handler {
	if s.cfg.APIKey == "" {
		return h
	}
	want := []byte("Bearer " + s.cfg.APIKey)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			s.fail(w, r, openai.Unauthorized())
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Credentials are the accepted Authorization headers of the metrics
// listener (--metrics-auth-file). The file holds one credential per line:
//
//	# comments and blank lines are ignored
//	s3cr3t-token          a bearer token: "Authorization: Bearer s3cr3t-token"
//	prometheus:pa55word   user:password: HTTP basic auth
//
// A line with a colon is a user and password (split at the first colon); a
// line without one is a bearer token. Any listed credential is accepted, so
// a secret can be rotated by listing old and new for a while. Leading and
// trailing spaces are trimmed.
type Credentials struct {
	// digests of the exact Authorization header values accepted; comparing
	// fixed-size digests keeps the check constant-time in the secret's length.
	digests [][sha256.Size]byte
}

// ParseCredentials reads a credentials file's content.
func ParseCredentials(data []byte) (*Credentials, error) {
	c := &Credentials{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.ContainsAny(line, " \t") && !strings.Contains(line, ":") {
			return nil, fmt.Errorf("parse credentials line %d: a bearer token has no spaces", n)
		}
		header := "Bearer " + line
		if user, _, ok := strings.Cut(line, ":"); ok {
			if user == "" {
				return nil, fmt.Errorf("parse credentials line %d: empty user name before ':'", n)
			}
			header = "Basic " + base64.StdEncoding.EncodeToString([]byte(line))
		}
		c.digests = append(c.digests, sha256.Sum256([]byte(header)))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parse credentials: %w", err)
	}
	if len(c.digests) == 0 {
		return nil, errors.New("parse credentials: the file lists no token or user:password")
	}
	return c, nil
}

// Allow reports whether r's Authorization header is one of the credentials.
func (c *Credentials) Allow(r *http.Request) bool {
	got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
	ok := 0
	for i := range c.digests {
		ok |= subtle.ConstantTimeCompare(got[:], c.digests[i][:])
	}
	return ok == 1
}

// Wrap answers 401 (with a WWW-Authenticate challenge, so a browser asks
// for a password) unless the request carries one of the credentials.
func (c *Credentials) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.Allow(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="glassbox metrics"`)
			openai.WriteError(w, openai.Unauthorized())
			return
		}
		h.ServeHTTP(w, r)
	})
}
