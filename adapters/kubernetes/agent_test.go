package kubernetes

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// TestPodAgentShape: with an agent image, the install step runs last among
// the init containers, as root without capabilities, into an emptyDir the
// sandbox mounts read-only; without one, the pod has no trace of it.
func TestPodAgentShape(t *testing.T) {
	t.Parallel()
	spec := resolved(t, sandbox.Spec{SessionID: domain.MustParseSessionID("ses_0123456789abcdefghjkmnpq"), Image: "debian:bookworm"})
	plain := podFor(spec, Options{Namespace: "sbx"})
	require.False(t, hasAgent(plain))
	require.Empty(t, plain.Spec.InitContainers)

	pod := podFor(spec, Options{Namespace: "sbx", AgentImage: "sandgate/agent:dev"})
	require.True(t, hasAgent(pod))
	inits := pod.Spec.InitContainers
	require.Len(t, inits, 1)
	in := inits[0]
	require.Equal(t, containerAgent, in.Name)
	require.Equal(t, []string{agentImageBinary, "install", agentwire.Dir}, in.Command)
	require.EqualValues(t, 0, *in.SecurityContext.RunAsUser)
	require.False(t, *in.SecurityContext.AllowPrivilegeEscalation)
	require.Equal(t, "ALL", string(in.SecurityContext.Capabilities.Drop[0]))
	require.False(t, in.VolumeMounts[0].ReadOnly)
	sb := pod.Spec.Containers[0]
	mount := sb.VolumeMounts[len(sb.VolumeMounts)-1]
	require.Equal(t, volAgent, mount.Name)
	require.Equal(t, agentwire.Dir, mount.MountPath)
	require.True(t, mount.ReadOnly, "the sandbox must not replace its agent")
	vol := pod.Spec.Volumes[len(pod.Spec.Volumes)-1]
	require.Equal(t, volAgent, vol.Name)
	require.NotNil(t, vol.EmptyDir)
}
