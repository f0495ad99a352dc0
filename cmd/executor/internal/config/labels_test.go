package config

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDockerLabels(t *testing.T) {
	t.Parallel()
	c, err := Load(nil, env(nil), io.Discard)
	require.NoError(t, err)
	require.Nil(t, c.DockerLabels)
	c, err = Load([]string{"--docker-labels", " team=agents , dev.sandgate.test=t1,empty="}, env(nil), io.Discard)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"team": "agents", "dev.sandgate.test": "t1", "empty": ""}, c.DockerLabels)

	for _, tc := range []struct{ value, want string }{
		{"novalue", `"novalue": want key=value pairs`},
		{"=x", `"=x": want key=value`},
		{"a=1,,b=2", `"": want key=value`},
		{"a b=1", `"a b=1": want key=value`},
		{"dev.sandgate.session=ses_x", `"dev.sandgate.session" is set by sandgate itself`},
		{"dev.sandgate.role=gate", `"dev.sandgate.role" is set by sandgate itself`},
		{"a=1,a=2", `"a" is given twice`},
	} {
		_, err := Load(nil, env(map[string]string{"SANDGATE_DOCKER_LABELS": tc.value}), io.Discard)
		require.ErrorIs(t, err, ErrInvalid, tc.value)
		require.ErrorContains(t, err, "SANDGATE_DOCKER_LABELS: "+tc.want)
	}
}
