package docker

import (
	"github.com/sandgate/sandgate/adapters/internal/agentclient"
	"github.com/sandgate/sandgate/ports"
)

// AgentConn is the agent connection of a sandbox this provider returned
// (nil without an agent): the procs' tests reach the agent through it until
// procs have a port.
func AgentConn(sb ports.Sandbox) *agentclient.Conn { return sb.(*handle).Conn }
