// Package gate is the egress gate's run logic, out of package main so that
// it can be driven and tested without the binary: the fail-closed startup
// order of CONTRACT C-FW-1 (Serve), the config loop that keeps the proxy's
// policy fresh and says when the gate is ready (C-GW-1, B-3), and the loop
// that reports the proxy's verdicts to the control plane.
//
// Its collaborators are ports (ports.GateSystem, ports.GateProxy,
// ports.GateConfigFetcher, ports.GateReporter); cmd/gate wires the real
// ones by hand from the environment (gatewire.Env).
package gate
