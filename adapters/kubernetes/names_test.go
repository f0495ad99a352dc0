package kubernetes

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPodName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "sandgate-ses-abc", PodName("ses_abc"))
	require.Equal(t, "sandgate-ses-abc", PodName("SES_ABC"))
}
