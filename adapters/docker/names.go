package docker

// ContainerName is the Docker container name of the session's sandbox. It
// is derived from the session id alone, so any executor finds a session's
// sandbox again from the session.
func ContainerName(sid string) string { return "sandgate-" + sid }

// GateName is the Docker container name of the session's gate.
func GateName(sid string) string { return "sandgate-gate-" + sid }
