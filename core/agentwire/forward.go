package agentwire

// PathForward: POST ?port=N (1..65535) connects to a TCP port listening
// inside the sandbox: the agent dials 127.0.0.1:N, then [::1]:N when that
// is refused. Nothing listening is Error code CodeConnectionRefused (502);
// a bad port is CodeInvalid. Otherwise the agent answers 101 Switching
// Protocols (Upgrade: ForwardProtocol) and from then on the stream carries
// the connection's bytes both ways: each side's end of input is passed on
// as a half-close (the agent's CloseWrite on the TCP connection, a yamux
// close on the stream), and the stream ends when both directions have.
//
// The route dials the sandbox's own loopback from inside its network
// namespace, so it reaches a server whatever the sandbox's networking
// (none, gated, open) and opens nothing to the outside.
const PathForward = "/v1/forward"

// QueryPort names PathForward's port parameter.
const QueryPort = "port"

// ForwardProtocol is the Upgrade token of PathForward's 101 answer.
const ForwardProtocol = "sandgate-tcp"

// CodeConnectionRefused: nothing listens on PathForward's port
// (sandbox.ErrPortClosed).
const CodeConnectionRefused = "connection_refused"
