package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/core/sandbox"
)

// agentAuto is SANDGATE_AGENT_IMAGE's default: the backend's choice.
const agentAuto = "auto"

// validate turns the raw settings into a Config, naming the setting of the
// first one that is wrong.
func (r *raw) validate() (Config, error) {
	c := Config{
		Listen: r.listen, GateListen: r.gateListen, APIToken: r.token,
		Backend: r.backend, DatabaseURL: r.dbURL, KeyFile: r.keyFile,
		Image: r.image, GateImage: r.gateImage, ControlplaneURL: r.cpURL,
		GateNetwork: r.gateNetwork, Kubeconfig: r.kubeconfig, K8sNamespace: r.k8sNamespace,
		NetsetupImage: r.netsetupImage, K8sSeccompProfile: r.k8sSeccomp, AgentImage: r.agentImage,
	}
	if c.AgentImage == agentAuto {
		c.AgentImage = ""
		if r.backend == BackendDocker {
			c.AgentImage = DefaultAgentImage
		}
	}
	loopback, err := checkAddr("SANDGATE_LISTEN", r.listen)
	if err != nil {
		return Config{}, err
	}
	if r.gateListen != "" {
		if _, err := checkAddr("SANDGATE_GATE_LISTEN", r.gateListen); err != nil {
			return Config{}, err
		}
	}
	if err := checkToken(r.token, loopback); err != nil {
		return Config{}, err
	}
	if err := checkBackend(r.backend); err != nil {
		return Config{}, err
	}
	if err := checkDatabaseURL(r.dbURL); err != nil {
		return Config{}, err
	}
	if c.SecretKey, err = parseKey("SANDGATE_SECRET_KEY", r.key); err != nil {
		return Config{}, err
	}
	if c.SecretKey == nil && r.keyFile == "" {
		return Config{}, fmt.Errorf("SANDGATE_SECRET_KEY_FILE: required when SANDGATE_SECRET_KEY is unset")
	}
	if err := checkImages(r.image, r.gateNetwork); err != nil {
		return Config{}, err
	}
	if c.Isolation, err = sandbox.ParseIsolation(r.isolation); err != nil || c.Isolation == "" {
		return Config{}, fmt.Errorf("SANDGATE_ISOLATION: want runc or gvisor, not %q", r.isolation)
	}
	c.GVisorRuntime = strings.TrimSpace(r.gvisorRuntime)
	if c.Isolation == sandbox.IsolationGVisor && c.GVisorRuntime == "" {
		return Config{}, fmt.Errorf("SANDGATE_ISOLATION: gvisor needs SANDGATE_GVISOR_RUNTIME, the runtime's name, such as %s", DefaultGVisorRuntime)
	}
	if err := c.checkGates(); err != nil {
		return Config{}, err
	}
	if err := c.checkGateOTel(r.gateOTel, r.gateOTelInsecure); err != nil {
		return Config{}, err
	}
	if err := c.checkKubernetes(); err != nil {
		return Config{}, err
	}
	if c.DockerLabels, err = parseLabels(r.labels); err != nil {
		return Config{}, err
	}
	if c.ShutdownTimeout, err = time.ParseDuration(r.shutdown); err != nil || c.ShutdownTimeout <= 0 {
		return Config{}, fmt.Errorf("SANDGATE_SHUTDOWN_TIMEOUT: must be a positive duration such as 15s")
	}
	if err := r.validateReaper(&c); err != nil {
		return Config{}, err
	}
	if err := r.validateEdge(&c); err != nil {
		return Config{}, err
	}
	return c, nil
}

// minBatchMemory is the least SANDGATE_BATCH_MEMORY_BYTES: one batch of the
// largest size the API takes must fit.
const minBatchMemory = 64 << 20

// validateEdge checks the HTTP edge's bounds.
func (r *raw) validateEdge(c *Config) error {
	var err error
	if c.ReadHeaderTimeout, err = time.ParseDuration(r.readHeader); err != nil || c.ReadHeaderTimeout <= 0 {
		return fmt.Errorf("SANDGATE_READ_HEADER_TIMEOUT: must be a positive duration such as %s", DefaultReadHeaderTimeout)
	}
	if c.BodyIdleTimeout, err = time.ParseDuration(r.bodyIdle); err != nil || c.BodyIdleTimeout <= 0 {
		return fmt.Errorf("SANDGATE_BODY_IDLE_TIMEOUT: must be a positive duration such as %s", DefaultBodyIdleTimeout)
	}
	if c.MaxBodies, err = strconv.Atoi(r.maxBodies); err != nil || c.MaxBodies <= 0 {
		return fmt.Errorf("SANDGATE_MAX_BODIES: must be a positive number, such as %d", DefaultMaxBodies)
	}
	if c.BatchMemory, err = strconv.ParseInt(r.batchMemory, 10, 64); err != nil || c.BatchMemory < minBatchMemory {
		return fmt.Errorf("SANDGATE_BATCH_MEMORY_BYTES: must be a number of bytes of at least %d (one whole batch)", minBatchMemory)
	}
	return r.validatePorts(c)
}

// validatePorts checks the port forwarding bounds.
func (r *raw) validatePorts(c *Config) error {
	var err error
	if c.MaxStreams, err = strconv.Atoi(r.maxStreams); err != nil || c.MaxStreams <= 0 {
		return fmt.Errorf("SANDGATE_MAX_STREAMS: must be a positive number, such as %d", DefaultMaxStreams)
	}
	if c.PortIdleTimeout, err = time.ParseDuration(r.portIdle); err != nil || c.PortIdleTimeout <= 0 {
		return fmt.Errorf("SANDGATE_PORT_IDLE_TIMEOUT: must be a positive duration such as %s", DefaultPortIdleTimeout)
	}
	return nil
}

// validateReaper checks the reaper's settings. The interval is at most half
// the TTL: it is also the heartbeat that tells other executors sharing the
// store that a long call is still running.
func (r *raw) validateReaper(c *Config) error {
	if strings.TrimSpace(r.cpDir) == "" {
		return fmt.Errorf("SANDGATE_CHECKPOINT_DIR: must name a directory, such as %s", DefaultCheckpointDir)
	}
	c.CheckpointDir = r.cpDir
	n, err := strconv.ParseInt(r.cpMax, 10, 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("SANDGATE_CHECKPOINT_MAX_BYTES: must be a positive number of bytes, such as %d", DefaultCheckpointMaxBytes)
	}
	c.CheckpointMaxBytes = n
	if c.CheckpointRetention, err = time.ParseDuration(r.cpRetention); err != nil || c.CheckpointRetention < 0 {
		return fmt.Errorf("SANDGATE_CHECKPOINT_RETENTION: must be a duration such as 168h, or 0 to keep checkpoints until restored or deleted")
	}
	if c.IdleTTL, err = time.ParseDuration(r.idleTTL); err != nil || c.IdleTTL < 0 {
		return fmt.Errorf("SANDGATE_IDLE_TTL: must be a duration such as 30m, or 0 to reap no idle session")
	}
	if c.ReapInterval, err = time.ParseDuration(r.reapInterval); err != nil || c.ReapInterval <= 0 {
		return fmt.Errorf("SANDGATE_REAP_INTERVAL: must be a positive duration such as 1m")
	}
	if c.IdleTTL > 0 && c.ReapInterval > c.IdleTTL/2 {
		return fmt.Errorf("SANDGATE_REAP_INTERVAL: %s is more than half of SANDGATE_IDLE_TTL (%s)", c.ReapInterval, c.IdleTTL)
	}
	if c.OrphanGrace, err = time.ParseDuration(r.orphanGrace); err != nil || c.OrphanGrace < 0 {
		return fmt.Errorf("SANDGATE_ORPHAN_GRACE: must be a duration such as 10m")
	}
	return nil
}

// checkAddr checks a host:port to listen on and reports whether it is a
// loopback address. An empty host or a name other than localhost listens
// beyond loopback (a name may resolve anywhere).
func checkAddr(name, addr string) (loopback bool, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("%s: must be host:port, such as %s", name, DefaultListen)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return false, fmt.Errorf("%s: port must be a number from 0 to 65535", name)
	}
	if host == "localhost" {
		return true, nil
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback(), nil
}

// checkToken refuses an API open beyond loopback and a guessable token. The
// token itself never appears in the error.
func checkToken(token string, loopback bool) error {
	switch {
	case token == "" && !loopback:
		return fmt.Errorf("SANDGATE_API_TOKEN: required when SANDGATE_LISTEN is not a loopback address")
	case token != "" && len(token) < MinAPITokenLen:
		return fmt.Errorf("SANDGATE_API_TOKEN: must be at least %d characters", MinAPITokenLen)
	case strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Errorf("SANDGATE_API_TOKEN: must not contain spaces or control characters")
	}
	return nil
}

func checkBackend(b string) error {
	switch b {
	case BackendDocker, BackendKubernetes:
		return nil
	}
	return fmt.Errorf("SANDGATE_BACKEND: must be docker or kubernetes")
}

// checkKubernetes checks the kubernetes backend's settings; the namespace
// and placement are checked again, with the API server's rules, when the
// provider is built.
func (c *Config) checkKubernetes() error {
	if c.Backend != BackendKubernetes {
		return nil
	}
	if strings.TrimSpace(c.K8sNamespace) == "" {
		return fmt.Errorf("SANDGATE_K8S_NAMESPACE: must name a namespace, such as %s", DefaultK8sNamespace)
	}
	if strings.TrimSpace(c.NetsetupImage) == "" {
		return fmt.Errorf("SANDGATE_K8S_NETSETUP_IMAGE: must name an image with ip, such as %s", DefaultNetsetupImage)
	}
	return nil
}

// checkDatabaseURL checks the scheme only; the URL may carry a password, so
// it is never quoted.
func checkDatabaseURL(u string) error {
	switch {
	case strings.HasPrefix(u, "sqlite://"):
		if strings.TrimPrefix(u, "sqlite://") == "" {
			return fmt.Errorf("SANDGATE_DATABASE_URL: sqlite:// needs a path, such as %s", DefaultDatabaseURL)
		}
		return nil
	case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
		return nil
	}
	return fmt.Errorf("SANDGATE_DATABASE_URL: must start with sqlite:// or postgres://")
}

func checkImages(image, network string) error {
	if strings.TrimSpace(image) == "" {
		return fmt.Errorf("SANDGATE_IMAGE: must name an image, such as %s", DefaultImage)
	}
	if strings.TrimSpace(network) == "" {
		return fmt.Errorf("SANDGATE_GATE_NETWORK: must name a Docker network, such as %s", DefaultGateNetwork)
	}
	return nil
}

// checkGates checks the control-plane URL gates are given. Without one, no
// gate runs (GatesDisabled): that fails closed, since BuildSpec then refuses
// sessions with credentials and runs limited ones under the backend's own
// no-network containment. Guessing the URL from the Docker bridge is left to
// `make run`, which knows its machine. A loopback URL is refused unless the
// gates share the host's network: from a container, 127.0.0.1 is the gate
// itself.
func (c *Config) checkGates() error {
	if c.GateImage == "" {
		return nil
	}
	if c.ControlplaneURL == "" {
		c.GateImage, c.GatesDisabled = "", true
		return nil
	}
	u, err := url.Parse(c.ControlplaneURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("SANDGATE_CONTROLPLANE_URL: must be http(s)://host[:port] with no path, user or query")
	}
	if c.GateNetwork == "host" {
		return nil
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); host == "localhost" || (err == nil && ip.IsLoopback()) {
		return fmt.Errorf("SANDGATE_CONTROLPLANE_URL: a loopback host is unreachable from gates on network %q; "+
			"use an address of that network (and SANDGATE_GATE_LISTEN)", c.GateNetwork)
	}
	return nil
}

// checkGateOTel checks the collector handed to gates: an http(s) URL with a
// host and nothing but an optional port, and not loopback unless gates share
// the host's network (from a gate, 127.0.0.1 is the gate itself).
func (c *Config) checkGateOTel(endpoint, insecure string) error {
	var err error
	if c.GateOTelInsecure, err = strconv.ParseBool(insecure); err != nil {
		return fmt.Errorf("SANDGATE_GATE_OTEL_INSECURE: must be true or false")
	}
	if endpoint == "" {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("SANDGATE_GATE_OTEL_ENDPOINT: must be http(s)://host[:port] with no path, user or query")
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); c.GateNetwork != "host" && (host == "localhost" || (err == nil && ip.IsLoopback())) {
		return fmt.Errorf("SANDGATE_GATE_OTEL_ENDPOINT: a loopback host is unreachable from gates on network %q; "+
			"use the collector's address on that network", c.GateNetwork)
	}
	c.GateOTelEndpoint = endpoint
	return nil
}
