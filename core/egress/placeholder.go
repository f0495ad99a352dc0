package egress

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
)

// PlaceholderPrefix starts every placeholder (CONTRACT §0; the same value as
// gatewire.PlaceholderPrefix).
const PlaceholderPrefix = "sgph_"

// placeholderDomain separates this hash from every other use of SHA-256 over
// the same inputs; bump its version only together with a migration, since
// placeholders are baked into sandboxes' environments.
const placeholderDomain = "sandgate placeholder v1"

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Placeholder returns the stand-in the sandbox sees for the session's secret
// secretName: "sgph_" + 26 characters of lower-case base32 of the first 128
// bits of SHA-256 over a domain-separated, length-prefixed encoding of both
// (so ("a","bc") and ("ab","c") differ). It is deterministic, so a
// re-provisioned session keeps the same placeholders in its Env (the seed's
// Spec.Env contract); it is not a secret and reveals nothing about the value.
func Placeholder(sessionID domain.ID, secretName string) string {
	h := sha256.New()
	h.Write([]byte(placeholderDomain))
	for _, part := range []string{sessionID.String(), secretName} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	return gatewire.PlaceholderPrefix + lowerBase32.EncodeToString(h.Sum(nil)[:16])
}
