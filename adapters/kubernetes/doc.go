// Package kubernetes implements ports.Provider and ports.Sandbox on a
// Kubernetes cluster through k8s.io/client-go.
//
// Every session's sandbox is one pod named PodName(sid), labelled
// with the session id, whose container "sandbox" runs sandbox.KeepAliveArgv;
// an ungated limited sandbox also gets the "netsetup" init container, which
// flushes the pod's routes and fails the pod closed if any survives.
// Commands, reads, writes, bulk writes and exports are all execs through the
// API server (remotecommand, WebSocket with an SPDY fallback) running the
// core's scripts; commands run under a relay (relay.go) so that a background
// process holding stdout cannot hold the exec open. API errors are
// translated once, here, into the core's sentinels.
package kubernetes
