package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/core/domain"
)

// Signed preview URLs: a browser cannot send the API token, so
// POST …/ports/{port}:sign hands out a URL carrying an expiry and an HMAC
// over (session, port, expiry). The first request presents it in the
// query; the answer sets it as a cookie scoped to the preview's path, so
// the page's own relative requests are let in too.
const (
	// sigParam is the query parameter and the cookie carrying a signature.
	sigParam = "sandgate_sig"
	// DefaultSignTTL and MaxSignTTL bound a signed URL's life.
	DefaultSignTTL = time.Hour
	MaxSignTTL     = 24 * time.Hour
)

// urlSigner signs and checks preview URLs with a key derived from the
// executor's secret key.
type urlSigner struct{ key []byte }

// newURLSigner derives the URL key from secret (the key sealing stored
// secrets): one key file serves both, and a leaked URL key opens no
// sealed secret. A nil secret: signing is off.
func newURLSigner(secret []byte) *urlSigner {
	if secret == nil {
		return nil
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("sandgate preview URL signing v1"))
	return &urlSigner{key: m.Sum(nil)}
}

// sign returns the signature of (sid, port) valid until exp: the expiry in
// Unix seconds, a dot, the MAC in unpadded base64url.
func (s *urlSigner) sign(sid domain.ID, port int, exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 10)
	return e + "." + base64.RawURLEncoding.EncodeToString(s.mac(sid, port, e))
}

// valid reports whether sig is a signature of (sid, port) unexpired at now.
func (s *urlSigner) valid(sig string, sid domain.ID, port int, now time.Time) bool {
	e, m, ok := strings.Cut(sig, ".")
	if !ok {
		return false
	}
	exp, err := strconv.ParseInt(e, 10, 64)
	if err != nil || now.Unix() >= exp {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(m)
	return err == nil && hmac.Equal(got, s.mac(sid, port, e))
}

func (s *urlSigner) mac(sid domain.ID, port int, exp string) []byte {
	m := hmac.New(sha256.New, s.key)
	// NUL-separated: no field can contain one, so no two tuples collide.
	m.Write([]byte(sid.String() + "\x00" + strconv.Itoa(port) + "\x00" + exp))
	return m.Sum(nil)
}
