package domain

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewIDFormat(t *testing.T) {
	t.Parallel()
	seen := map[ID]bool{}
	for range 1000 {
		id := NewID("ses")
		require.Len(t, id.String(), len("ses_")+24)
		require.True(t, strings.HasPrefix(id.String(), "ses_"))
		got, err := ParseID("ses", id.String())
		require.NoError(t, err)
		require.Equal(t, id, got)
		_, err = ParseSessionID(id.String())
		require.NoError(t, err, "every NewID is a valid session id")
		require.False(t, seen[id], "duplicate id %s", id)
		seen[id] = true
		require.False(t, id.IsZero())
	}
	require.True(t, ID{}.IsZero())
}

func TestNewIDPanicsOnBadPrefix(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", "Ses", "s-s", strings.Repeat("a", 17), "ses_"} {
		require.Panics(t, func() { NewID(p) }, "prefix %q", p)
	}
}

func TestEncodeBase32(t *testing.T) {
	t.Parallel()
	require.Equal(t, strings.Repeat("0", 24), encodeBase32(make([]byte, 15)))
	all := make([]byte, 15)
	for i := range all {
		all[i] = 0xff
	}
	require.Equal(t, strings.Repeat("z", 24), encodeBase32(all))
	// 0x08 0x42 0x10 0x84 0x21 = 00001 00001 00001 00001 00001 00001 00001 00001
	require.Equal(t, "11111111", encodeBase32([]byte{0x08, 0x42, 0x10, 0x84, 0x21}))
}

func TestParseIDRejects(t *testing.T) {
	t.Parallel()
	good := "ses_" + strings.Repeat("a", 24)
	for _, tc := range []struct {
		prefix, in, want string
	}{
		{"ses", "", "must start with"},
		{"ses", "usr_" + strings.Repeat("a", 24), "must start with"},
		{"ses", "ses_" + strings.Repeat("a", 23), "want 24 characters"},
		{"ses", "ses_" + strings.Repeat("a", 25), "want 24 characters"},
		{"ses", "ses_" + strings.Repeat("a", 23) + "A", "not lower-case Crockford"},
		{"ses", "ses_" + strings.Repeat("a", 23) + "u", "not lower-case Crockford"},
		{"ses", "ses_" + strings.Repeat("a", 23) + "\x00", "not lower-case Crockford"},
		{"", good, "prefix"},
		{"SES", good, "prefix"},
		{"ses", strings.Repeat("x", 500), "must start with"},
	} {
		_, err := ParseID(tc.prefix, tc.in)
		require.ErrorIs(t, err, ErrInvalidID, "%q", tc.in)
		require.ErrorContains(t, err, tc.want)
		require.Less(t, len(err.Error()), 300, "hostile input must be clipped")
	}
	id, err := ParseID("ses", good)
	require.NoError(t, err)
	require.Equal(t, good, id.String())
}

func TestParseSessionID(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a", "ses_abc", "0", "a_b_c9", strings.Repeat("a", 54)} {
		id, err := ParseSessionID(ok)
		require.NoError(t, err, ok)
		require.Equal(t, ok, id.String())
		require.NoError(t, id.Required())
	}
	for _, bad := range []string{"", "A", "a-b", "_a", "a_", "a b", "a/b", "a.b", "é", strings.Repeat("a", 55), "a\x00"} {
		id, err := ParseSessionID(bad)
		require.ErrorIs(t, err, ErrInvalidID, "%q", bad)
		require.True(t, id.IsZero(), "a refused id is the zero ID")
		require.Panics(t, func() { MustParseSessionID(bad) }, "%q", bad)
	}
	require.ErrorIs(t, ID{}.Required(), ErrInvalidID)
	require.Equal(t, "a", MustParseSessionID("a").String())
}

// TestIDText pins the wire form: an ID marshals as its string, so JSON,
// labels and logs see what they saw when ID was a string type; unmarshalling
// is an edge and parses.
func TestIDText(t *testing.T) {
	t.Parallel()
	type doc struct {
		ID  ID            `json:"id"`
		Map map[ID]string `json:"map"`
	}
	sid := MustParseSessionID("ses_x")
	b, err := json.Marshal(doc{ID: sid, Map: map[ID]string{sid: "v"}})
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"ses_x","map":{"ses_x":"v"}}`, string(b))
	var got doc
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, sid, got.ID)
	require.Equal(t, "v", got.Map[sid])
	require.NoError(t, json.Unmarshal([]byte(`{"id":""}`), &got))
	require.True(t, got.ID.IsZero(), "empty text is the zero ID")
	require.ErrorIs(t, json.Unmarshal([]byte(`{"id":"Bad ID"}`), &got), ErrInvalidID)
	require.Equal(t, "session ses_x", fmt.Sprintf("session %s", sid))
	require.Equal(t, `"ses_x"`, fmt.Sprintf("%q", sid))
	require.Equal(t, -1, MustParseSessionID("a").Compare(sid))
}

func FuzzParseID(f *testing.F) {
	f.Add("ses_" + strings.Repeat("a", 24))
	f.Add("ses_")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID("ses", s)
		if err == nil {
			_, err := ParseSessionID(id.String())
			require.NoError(t, err)
			require.Equal(t, s, id.String())
		}
	})
}
