package strictjson

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type inner struct {
	Name string `json:"name"`
}

type Embedded struct {
	Deep string `json:"deep,omitempty"`
}

type doc struct {
	Embedded
	Command string            `json:"command"`
	Timeout int64             `json:"timeout_ms,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Items   []inner           `json:"items,omitempty"`
	Ptr     *inner            `json:"ptr,omitempty"`
	Raw     any               `json:"raw,omitempty"`
}

func TestUnmarshalAccepts(t *testing.T) {
	t.Parallel()
	var d doc
	require.NoError(t, Unmarshal([]byte(`{"command":"é \u00ff","timeout_ms":5,"env":{"A":"1","a":"2"},`+
		`"items":[{"name":"x"}],"ptr":{"name":"y"},"deep":"z","raw":{"Any":[1,{"k":1}]}}`+" \n"), &d))
	assert.Equal(t, "é \u00ff", d.Command)
	assert.Equal(t, map[string]string{"A": "1", "a": "2"}, d.Env, "map keys differing in case are distinct keys")
	assert.Equal(t, "x", d.Items[0].Name)
	assert.Equal(t, "y", d.Ptr.Name)
	assert.Equal(t, "z", d.Deep)
}

func TestUnmarshalRefuses(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ body, msg string }{
		"invalid UTF-8":          {"{\"command\":\"a\xffb\"}", "not valid UTF-8 at byte 13"},
		"invalid UTF-8 in a key": {"{\"comm\xc3and\":\"x\"}", "not valid UTF-8"},
		"duplicate key":          {`{"command":"a","command":"b"}`, "$.command: duplicate key"},
		"duplicate in a map":     {`{"env":{"A":"1","A":"2"}}`, "$.env.A: duplicate key"},
		"duplicate in an array":  {`{"items":[{"name":"a"},{"name":"a","name":"b"}]}`, "$.items[1].name: duplicate key"},
		"duplicate in any":       {`{"raw":{"k":1,"k":2}}`, "$.raw.k: duplicate key"},
		"key in another case":    {`{"Command":"a"}`, "$.Command: unknown field"},
		"nested key case":        {`{"ptr":{"NAME":"a"}}`, "$.ptr.NAME: unknown field"},
		"embedded key case":      {`{"Deep":"a"}`, "$.Deep: unknown field"},
		"unknown field":          {`{"command":"a","extra":1}`, "$.extra: unknown field"},
		"trailing data":          {`{"command":"a"} {}`, "trailing data"},
		"empty":                  {``, "unexpected end"},
		"truncated":              {`{"command":"a"`, "unexpected end"},
		"wrong type":             {`{"timeout_ms":"x"}`, "field timeout_ms"},
		"syntax":                 {`{"command":x}`, "invalid"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var d doc
			err := Unmarshal([]byte(tc.body), &d)
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestUnmarshalQuotesNoValue(t *testing.T) {
	t.Parallel()
	var d doc
	err := Unmarshal([]byte(`{"timeout_ms":"s3cr3t"}`), &d)
	require.ErrorIs(t, err, ErrInvalid)
	assert.NotContains(t, err.Error(), "s3cr3t")
}
