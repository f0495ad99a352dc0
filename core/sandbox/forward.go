package sandbox

import (
	"errors"
	"fmt"
)

// Errors of a port forward (Sandbox.DialPort).
var (
	// ErrPortClosed: nothing listens on the port on the sandbox's loopback
	// (the connection was refused on 127.0.0.1 and on ::1).
	ErrPortClosed = errors.New("nothing listens on the port in the sandbox")
	// ErrNoAgent: the sandbox has no in-sandbox agent, and port forwarding
	// and procs need it: the engine-exec fallback has no way to carry a raw
	// byte stream into the sandbox's loopback, nor to own a process past
	// the call that started it.
	ErrNoAgent = errors.New("the sandbox has no in-sandbox agent (port forwarding and procs need it)")
	// ErrInvalidPort: a port outside 1..65535.
	ErrInvalidPort = errors.New("invalid port")
)

// CheckPort returns ErrInvalidPort, naming port, unless it is a TCP port
// (1..65535).
func CheckPort(port int) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("port %d (want 1..65535): %w", port, ErrInvalidPort)
	}
	return nil
}
