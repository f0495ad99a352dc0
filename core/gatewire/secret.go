package gatewire

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
)

// redacted is what every printing path shows instead of a secret's value.
const redacted = "[REDACTED]"

// Secret holds a credential's plaintext. Its value is unexported so that no
// printing path can reach it by accident: fmt (every verb and flag, including
// %#v and %+v of a struct that contains it), slog and String all show
// "[REDACTED]". Only Reveal returns the value, and only MarshalJSON writes it,
// because the config endpoint's wire format must carry it to the gate.
type Secret struct {
	value string
}

// NewSecret wraps a plaintext value.
func NewSecret(value string) Secret { return Secret{value: value} }

// Reveal returns the plaintext. Call it only where the value leaves for the
// upstream (substitution) or the wire (the config endpoint).
func (s Secret) Reveal() string { return s.value }

// Len returns the length of the plaintext in bytes (safe to log).
func (s Secret) Len() int { return len(s.value) }

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.value == "" }

// String implements fmt.Stringer without the value.
func (s Secret) String() string { return redacted }

// GoString implements fmt.GoStringer without the value.
func (s Secret) GoString() string { return redacted }

// Format implements fmt.Formatter so every verb prints the redaction marker:
// without it %x or %q would format the underlying struct field.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// LogValue implements slog.LogValuer: a Secret logged as an attribute shows
// the marker in every handler (the JSON handler would otherwise call
// MarshalJSON and print the value).
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON writes the plaintext as a JSON string: this is the wire format
// of the gate config, the one place the value must travel.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.value) }

// UnmarshalJSON reads a JSON string. Anything else is a type error that
// never quotes the input; encoding/json adds the field it is in, so both
// readers of a secret (the gate's Parse, the executor API's request) name it
// their way.
func (s *Secret) UnmarshalJSON(b []byte) error {
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return &json.UnmarshalTypeError{Value: "non-string", Type: reflect.TypeFor[string]()}
	}
	s.value = v
	return nil
}
