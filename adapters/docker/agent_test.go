package docker

import (
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
)

// TestAgentMount: a sandbox mounts the agent's volume read-only once the
// daemon has filled it (a throwaway container of the agent image, removed
// at once); without the image it mounts nothing (the fallback path) and
// the delivery is not retried on every create.
func TestAgentMount(t *testing.T) {
	f := newFakeEngine()
	p := newProvider(f, Options{AgentImage: "agent:x"})
	var host container.HostConfig
	p.agentMount(t.Context(), &host)
	require.Empty(t, host.Mounts, "no image: the fallback path")
	p.agentMount(t.Context(), &host)
	require.NotContains(t, f.calls, "volume create sandgate-agent-agent:x")

	f.images["agent:x"] = true
	p.agents.failedAt = p.agents.failedAt.Add(-2 * agentRetry) // the retry is due
	p.agentMount(t.Context(), &host)
	require.Equal(t, []mount.Mount{{Type: mount.TypeVolume, Source: "sandgate-agent-agent:x", Target: agentwire.Dir,
		ReadOnly: true, VolumeOptions: &mount.VolumeOptions{NoCopy: true}}}, host.Mounts)
	require.True(t, mountsAgent(&host))
	require.Contains(t, f.calls, "volume create sandgate-agent-agent:x")
	require.Contains(t, f.calls, "start c1", "the filler ran")
	require.Empty(t, f.containers, "and was removed")

	disabled := newProvider(newFakeEngine(), Options{})
	host = container.HostConfig{}
	disabled.agentMount(t.Context(), &host)
	require.False(t, mountsAgent(&host))
}
