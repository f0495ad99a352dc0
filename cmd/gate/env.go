package main

import (
	"fmt"
	"net/netip"

	"github.com/sandgate/sandgate/core/gatewire"
)

// The gate's environment is gatewire.Env: the providers write it with
// Environ, the gate reads it whole with gatewire.ParseEnv. The one-shot
// modes read only the variables they need, with the same parsers.

// firewallEnv reads what `gate -firewall` needs: GATE_UID.
func firewallEnv(getenv func(string) string) (uint32, error) {
	uid, err := gatewire.ParseID(getenv(gatewire.EnvUID))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", gatewire.EnvUID, err)
	}
	return uid, nil
}

// healthEnv reads what `gate -healthcheck` needs: GATE_ADDR and GATE_CA_FILE.
func healthEnv(getenv func(string) string) (netip.AddrPort, string, error) {
	addr, err := gatewire.ParseAddr(getenv(gatewire.EnvAddr))
	if err != nil {
		return netip.AddrPort{}, "", fmt.Errorf("%s: %w", gatewire.EnvAddr, err)
	}
	caFile, err := gatewire.ParseCAFile(getenv(gatewire.EnvCAFile))
	if err != nil {
		return netip.AddrPort{}, "", fmt.Errorf("%s: %w", gatewire.EnvCAFile, err)
	}
	return addr, caFile, nil
}
