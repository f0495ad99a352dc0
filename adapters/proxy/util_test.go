package proxy

import (
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func itoa(i int) string { return strconv.Itoa(i) }

// hostOf returns host:port of an http URL (port 80 by default).
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		panic(err)
	}
	if u.Port() == "" {
		return u.Hostname() + ":80"
	}
	return u.Host
}

// attr returns the span's attribute key (the zero Value when absent).
func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// requireNoSecrets scans every attribute of every span for the secrets.
func requireNoSecrets(t *testing.T, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			v := kv.Value.String()
			require.NotContains(t, v, secretA, "span attribute %s", kv.Key)
			require.NotContains(t, v, secretB, "span attribute %s", kv.Key)
		}
		require.NotContains(t, s.Status().Description, secretA)
	}
}
