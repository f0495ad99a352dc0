package docker

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, "sandgate-ses_abc", ContainerName("ses_abc"))
	require.Equal(t, "sandgate-gate-ses_abc", GateName("ses_abc"))
}
