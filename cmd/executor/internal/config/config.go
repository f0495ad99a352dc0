// Package config is the configuration of `executor serve`: every SANDGATE_*
// setting of docs/DESIGN.md, each with a flag of the same meaning (the flag wins
// over the environment, the environment over the default), validated at
// startup with errors that name the setting. Defaults make `executor serve`
// work on a laptop with Docker and nothing else.
//
// Load reads and checks; it touches no file and no network. The secrets key
// file (KeyFile) is read or created later, by whoever opens the store
// (LoadOrCreateKey), so that a constructor never does I/O.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/sandgate/sandgate/core/sandbox"
)

// Defaults of the settings.
const (
	DefaultListen      = "127.0.0.1:7070"
	DefaultBackend     = BackendDocker
	DefaultDatabaseURL = "sqlite://./.sandgate/sandgate.db"
	DefaultKeyFile     = "./.sandgate/secret.key"
	DefaultImage       = "debian:bookworm"
	// DefaultGVisorRuntime is runsc's usual name, as a Docker runtime and
	// as a RuntimeClass (gVisor's own documentation uses both).
	DefaultGVisorRuntime = "runsc"
	DefaultGateImage     = "sandgate/gate:dev"
	// DefaultAgentImage is the in-sandbox agent's image that
	// SANDGATE_AGENT_IMAGE=auto (the default) means on Docker; on
	// Kubernetes auto means none, since every node would have to pull it.
	DefaultAgentImage      = "sandgate/agent:dev"
	DefaultGateNetwork     = "bridge"
	DefaultShutdownTimeout = 15 * time.Second
	// The reaper: checkpoints beside the default database, bounded to 1 GiB
	// each; idle sessions reaped after 30 minutes, looked for every minute;
	// orphans after 10 minutes (a provision in flight always has a record).
	DefaultCheckpointDir      = "./.sandgate/checkpoints"
	DefaultCheckpointMaxBytes = 1 << 30
	DefaultIdleTTL            = 30 * time.Minute
	DefaultReapInterval       = time.Minute
	DefaultOrphanGrace        = 10 * time.Minute
	// The HTTP edge (issue 11): a request's headers within 10 s, its body
	// never idle for 30 s, 64 bodies at once, 256 MiB for files:batch
	// members in flight.
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyIdleTimeout   = 30 * time.Second
	DefaultMaxBodies         = 64
	DefaultBatchMemory       = 256 << 20
	// Port forwarding (issue 14): 64 connections into a session at once,
	// each closed after 10 minutes without a byte.
	DefaultMaxStreams      = 64
	DefaultPortIdleTimeout = 10 * time.Minute
	// DefaultCheckpointRetention: a checkpoint not restored within a week
	// is deleted; a workspace abandoned that long is unlikely to be resumed,
	// and checkpoints are up to SANDGATE_CHECKPOINT_MAX_BYTES each.
	DefaultCheckpointRetention = 7 * 24 * time.Hour
	DefaultK8sNamespace        = "default"
	DefaultNetsetupImage       = "busybox:1.35"
)

// Backends of SANDGATE_BACKEND.
const (
	BackendDocker     = "docker"
	BackendKubernetes = "kubernetes"
)

// MinAPITokenLen is the shortest SANDGATE_API_TOKEN accepted: the token is
// all that stands between the network and every sandbox.
const MinAPITokenLen = 16

// ErrInvalid is wrapped by every validation error of Load.
var ErrInvalid = errors.New("invalid configuration")

// Config is the validated configuration of `executor serve`.
type Config struct {
	// Listen is the API's address (SANDGATE_LISTEN).
	Listen string
	// GateListen, when set, is a second address that serves only the gate
	// config endpoint (SANDGATE_GATE_LISTEN): the API can stay on loopback
	// while the gates, on a Docker network, reach the executor at the
	// network's gateway. Gate tokens authenticate it, so it needs no API
	// token.
	GateListen string
	// APIToken is the bearer token of /v1 (SANDGATE_API_TOKEN); required
	// when Listen is not loopback. Never logged.
	APIToken string
	// Backend is the provider (SANDGATE_BACKEND): "docker" or "kubernetes".
	Backend string
	// Kubeconfig is the kubeconfig file of the kubernetes backend
	// (SANDGATE_KUBECONFIG); empty means the in-cluster service account.
	Kubeconfig string
	// K8sNamespace holds the sandbox pods (SANDGATE_K8S_NAMESPACE).
	K8sNamespace string
	// NetsetupImage runs the route-flushing init container of ungated limited
	// sandboxes on kubernetes (SANDGATE_K8S_NETSETUP_IMAGE); it needs `ip`.
	NetsetupImage string
	// K8sSeccompProfile is the sandbox container's Localhost seccomp profile
	// (SANDGATE_K8S_SECCOMP_PROFILE): a path under the kubelet's seccomp
	// root holding `executor seccomp-profile`; empty runs RuntimeDefault.
	K8sSeccompProfile string
	// DatabaseURL names the store (SANDGATE_DATABASE_URL); it may hold a
	// password, so no error or log line carries it.
	DatabaseURL string
	// SecretKey is the 32-byte key sealing credential secrets at rest
	// (SANDGATE_SECRET_KEY, base64 or hex). Nil means KeyFile.
	SecretKey []byte
	// KeyFile holds the key when SecretKey is unset (SANDGATE_SECRET_KEY_FILE);
	// it is created with a random key, mode 0600, on first start.
	KeyFile string
	// Image is the sandbox image of a request that names none (SANDGATE_IMAGE).
	Image string
	// Isolation is the runtime of a request that names none
	// (SANDGATE_ISOLATION).
	Isolation sandbox.Isolation
	// GVisorRuntime names gVisor where this executor runs sandboxes: the
	// Docker runtime or the Kubernetes RuntimeClass (SANDGATE_GVISOR_RUNTIME).
	GVisorRuntime string
	// GateImage is the egress gate's image (SANDGATE_GATE_IMAGE); empty when
	// gates are off (see ControlplaneURL).
	GateImage string
	// AgentImage is the in-sandbox agent's image (SANDGATE_AGENT_IMAGE);
	// empty: no agent, every sandbox operation is an engine exec.
	AgentImage string
	// ControlplaneURL is where gates fetch their config
	// (SANDGATE_CONTROLPLANE_URL). Unset turns gates off: see GatesDisabled.
	ControlplaneURL string
	// GatesDisabled reports that a gate image was configured but no
	// control-plane URL, so GateImage was cleared; serve says so at start.
	GatesDisabled bool
	// GateNetwork is the Docker network gates join (SANDGATE_GATE_NETWORK).
	GateNetwork string
	// GateOTelEndpoint is the OTLP gRPC collector gates export their
	// egress_request spans to (SANDGATE_GATE_OTEL_ENDPOINT); empty: gates
	// export nothing. It is not OTEL_EXPORTER_OTLP_ENDPOINT, the executor's
	// own: gates reach the collector from the gate network, where the
	// executor's address for it (often loopback) may mean nothing.
	GateOTelEndpoint string
	// GateOTelInsecure makes gates export without TLS
	// (SANDGATE_GATE_OTEL_INSECURE); an http:// endpoint is plaintext anyway.
	GateOTelInsecure bool
	// DockerLabels are added to every container the executor creates
	// (SANDGATE_DOCKER_LABELS, key=value,…); nil for none.
	DockerLabels map[string]string
	// ShutdownTimeout bounds the graceful shutdown (SANDGATE_SHUTDOWN_TIMEOUT).
	ShutdownTimeout time.Duration
	// CheckpointDir holds the reaper's workdir checkpoints
	// (SANDGATE_CHECKPOINT_DIR), each at most CheckpointMaxBytes
	// (SANDGATE_CHECKPOINT_MAX_BYTES).
	CheckpointDir      string
	CheckpointMaxBytes int64
	// CheckpointRetention is how long a checkpoint is kept before the
	// reaper deletes it (SANDGATE_CHECKPOINT_RETENTION; 0 keeps them until
	// restored or deleted).
	CheckpointRetention time.Duration
	// IdleTTL reaps a session with no API call for that long
	// (SANDGATE_IDLE_TTL; 0 reaps no idle session); ReapInterval is how often
	// the reaper looks (SANDGATE_REAP_INTERVAL, at most half the TTL);
	// OrphanGrace is how long labelled assets without a record are left
	// (SANDGATE_ORPHAN_GRACE).
	IdleTTL      time.Duration
	ReapInterval time.Duration
	OrphanGrace  time.Duration
	// ReadHeaderTimeout bounds the reading of a request's headers
	// (SANDGATE_READ_HEADER_TIMEOUT).
	ReadHeaderTimeout time.Duration
	// BodyIdleTimeout fails a request whose body sends nothing for that
	// long (SANDGATE_BODY_IDLE_TIMEOUT); a body that keeps sending is never
	// cut, however long it takes. A streamed answer (exec:stream) whose
	// client takes nothing for that long is failed too, its exec cancelled.
	BodyIdleTimeout time.Duration
	// MaxBodies is how many request bodies are read at once
	// (SANDGATE_MAX_BODIES); more are answered 503 "busy".
	MaxBodies int
	// BatchMemory bounds the bytes every files:batch in flight holds
	// together (SANDGATE_BATCH_MEMORY_BYTES); beyond it, 503 "busy".
	BatchMemory int64
	// MaxStreams bounds the long-lived streams into one session at once
	// (SANDGATE_MAX_STREAMS): forwarded connections, streamed execs,
	// followed proc outputs, attaches; more are answered 429.
	MaxStreams int
	// PortIdleTimeout closes a forwarded connection that carried no byte
	// for that long (SANDGATE_PORT_IDLE_TIMEOUT).
	PortIdleTimeout time.Duration
	// Hardening is every sandbox's containment, from SANDBOX_*.
	Hardening sandbox.Hardening
}

// setting is one SANDGATE_* variable and its flag.
type setting struct {
	env, flag, def, usage string
	dst                   *string
}

// secret reports whether the setting is a secret: its environment value must
// not become the flag's default, which -h prints.
func (s setting) secret() bool {
	return s.env == "SANDGATE_API_TOKEN" || s.env == "SANDGATE_SECRET_KEY"
}

// raw holds the settings as strings before validation.
type raw struct {
	listen, gateListen, token, backend, dbURL, key, keyFile string
	image, gateImage, cpURL, gateNetwork, shutdown          string
	agentImage, isolation, gvisorRuntime                    string
	gateOTel, gateOTelInsecure                              string
	cpDir, cpMax, cpRetention                               string
	idleTTL, reapInterval, orphanGrace                      string
	kubeconfig, k8sNamespace, netsetupImage, k8sSeccomp     string
	labels                                                  string
	readHeader, bodyIdle, maxBodies, batchMemory            string
	maxStreams, portIdle                                    string
}

func (r *raw) settings() []setting {
	return []setting{
		{"SANDGATE_LISTEN", "listen", DefaultListen, "address of the API (host:port)", &r.listen},
		{"SANDGATE_GATE_LISTEN", "gate-listen", "", "extra address serving only the gate config endpoint", &r.gateListen},
		{"SANDGATE_API_TOKEN", "api-token", "", "bearer token of the API (prefer the environment: argv is visible to local users)", &r.token},
		{"SANDGATE_BACKEND", "backend", DefaultBackend, "sandbox backend: docker or kubernetes", &r.backend},
		{"SANDGATE_KUBECONFIG", "kubeconfig", "", "kubeconfig of the kubernetes backend; empty uses the in-cluster service account", &r.kubeconfig},
		{"SANDGATE_K8S_NAMESPACE", "k8s-namespace", DefaultK8sNamespace, "namespace of the sandbox pods (kubernetes backend)", &r.k8sNamespace},
		{"SANDGATE_K8S_SECCOMP_PROFILE", "k8s-seccomp-profile", "", "Localhost seccomp profile of the sandbox containers, relative to the kubelet's seccomp root, holding `executor seccomp-profile` (denies AF_VSOCK and the other socket families the firewall does not govern); empty: the runtime's default (kubernetes backend)", &r.k8sSeccomp},
		{"SANDGATE_K8S_NETSETUP_IMAGE", "k8s-netsetup-image", DefaultNetsetupImage, "image with `ip` for the route-flushing init container of ungated limited sandboxes (kubernetes backend)", &r.netsetupImage},
		{"SANDGATE_DATABASE_URL", "database-url", DefaultDatabaseURL, "store: sqlite://PATH or postgres://…", &r.dbURL},
		{"SANDGATE_SECRET_KEY", "secret-key", "", "32-byte key sealing secrets, base64 or hex (prefer the environment)", &r.key},
		{"SANDGATE_SECRET_KEY_FILE", "secret-key-file", DefaultKeyFile, "file holding the key when SANDGATE_SECRET_KEY is unset; created 0600 on first start", &r.keyFile},
		{"SANDGATE_IMAGE", "image", DefaultImage, "default sandbox image", &r.image},
		{"SANDGATE_ISOLATION", "isolation", string(sandbox.IsolationRunc), "runtime of a session that names none: runc, or gvisor (needs runsc registered with Docker, or a RuntimeClass in the cluster)", &r.isolation},
		{"SANDGATE_GVISOR_RUNTIME", "gvisor-runtime", DefaultGVisorRuntime, "name of the gVisor runtime: the Docker engine's runtime (daemon.json runtimes) or the cluster's RuntimeClass; empty: gVisor is not offered", &r.gvisorRuntime},
		{"SANDGATE_GATE_IMAGE", "gate-image", DefaultGateImage, "egress gate image; empty runs no gates", &r.gateImage},
		{"SANDGATE_AGENT_IMAGE", "agent-image", agentAuto, "image of the in-sandbox agent; auto: " + DefaultAgentImage + " on docker (a missing image falls back to engine execs, logged), none on kubernetes; empty: none, every sandbox operation is an engine exec", &r.agentImage},
		{"SANDGATE_CONTROLPLANE_URL", "controlplane-url", "", "URL gates reach this executor at; unset runs no gates", &r.cpURL},
		{"SANDGATE_GATE_NETWORK", "gate-network", DefaultGateNetwork, "Docker network gates join", &r.gateNetwork},
		{"SANDGATE_GATE_OTEL_ENDPOINT", "gate-otel-endpoint", "", "OTLP gRPC collector URL gates export spans to, as the gate network reaches it; empty: none", &r.gateOTel},
		{"SANDGATE_GATE_OTEL_INSECURE", "gate-otel-insecure", "false", "gates export to the collector without TLS", &r.gateOTelInsecure},
		{"SANDGATE_DOCKER_LABELS", "docker-labels", "", "extra labels key=value,… on every container", &r.labels},
		{"SANDGATE_SHUTDOWN_TIMEOUT", "shutdown-timeout", DefaultShutdownTimeout.String(), "bound of the graceful shutdown", &r.shutdown},
		{"SANDGATE_CHECKPOINT_DIR", "checkpoint-dir", DefaultCheckpointDir, "directory of the reaper's workdir checkpoints (created 0700)", &r.cpDir},
		{"SANDGATE_CHECKPOINT_MAX_BYTES", "checkpoint-max-bytes", strconv.Itoa(DefaultCheckpointMaxBytes), "largest checkpoint in bytes; a larger workdir is reaped without one", &r.cpMax},
		{"SANDGATE_CHECKPOINT_RETENTION", "checkpoint-retention", DefaultCheckpointRetention.String(), "delete a checkpoint not restored within this long (0: keep until restored or deleted)", &r.cpRetention},
		{"SANDGATE_IDLE_TTL", "idle-ttl", DefaultIdleTTL.String(), "reap a session idle this long (0: never)", &r.idleTTL},
		{"SANDGATE_REAP_INTERVAL", "reap-interval", DefaultReapInterval.String(), "how often the reaper looks (at most half the idle TTL)", &r.reapInterval},
		{"SANDGATE_ORPHAN_GRACE", "orphan-grace", DefaultOrphanGrace.String(), "reap labelled sandboxes without a session record after this long", &r.orphanGrace},
		{"SANDGATE_READ_HEADER_TIMEOUT", "read-header-timeout", DefaultReadHeaderTimeout.String(), "a request's headers must arrive within this long", &r.readHeader},
		{"SANDGATE_BODY_IDLE_TIMEOUT", "body-idle-timeout", DefaultBodyIdleTimeout.String(), "a request body that sends nothing for this long fails with 408 (a body that keeps sending is never cut); so does a streamed answer whose client takes nothing", &r.bodyIdle},
		{"SANDGATE_MAX_BODIES", "max-bodies", strconv.Itoa(DefaultMaxBodies), "request bodies read at once; more are answered 503 busy", &r.maxBodies},
		{"SANDGATE_BATCH_MEMORY_BYTES", "batch-memory-bytes", strconv.Itoa(DefaultBatchMemory), "bytes all files:batch uploads in flight may hold in memory together; beyond, 503 busy", &r.batchMemory},
		{"SANDGATE_MAX_STREAMS", "max-streams", strconv.Itoa(DefaultMaxStreams), "long-lived streams into one session at once (port-forward and preview connections, exec:stream, followed proc output, attach); more are answered 429 too_many_streams", &r.maxStreams},
		{"SANDGATE_PORT_IDLE_TIMEOUT", "port-idle-timeout", DefaultPortIdleTimeout.String(), "a forwarded connection that carries no byte for this long is closed", &r.portIdle},
	}
}

// Load parses args (the flags after `serve`) over the environment read
// through lookupEnv (os.LookupEnv) and validates the result. A variable set
// to the empty string counts as set: SANDGATE_GATE_IMAGE= runs no gates. Usage goes to out on -h. Errors
// wrap ErrInvalid (or flag.ErrHelp) and name the setting; none carries a
// secret or the database URL.
func Load(args []string, lookupEnv func(string) (string, bool), out io.Writer) (Config, error) {
	var r raw
	fs := flag.NewFlagSet("executor serve", flag.ContinueOnError)
	fs.SetOutput(out)
	settings := r.settings()
	for _, s := range settings {
		def := s.def
		if v, ok := lookupEnv(s.env); ok && !s.secret() {
			def = v
		}
		fs.StringVar(s.dst, s.flag, def, s.usage+" ("+s.env+")")
	}
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, s := range settings {
		if v, ok := lookupEnv(s.env); ok && s.secret() && !given[s.flag] {
			*s.dst = v
		}
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("%w: unexpected argument %q", ErrInvalid, fs.Arg(0))
	}
	h, err := sandbox.HardeningFromEnv(func(k string) string { v, _ := lookupEnv(k); return v })
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	c, err := r.validate()
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	c.Hardening = h
	return c, nil
}

// Names returns the SANDGATE_* variable of every setting (deploy files are
// checked against it).
func Names() []string {
	var r raw
	var out []string
	for _, s := range r.settings() {
		out = append(out, s.env)
	}
	return out
}
