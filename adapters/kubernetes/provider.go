package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandgate/sandgate/adapters/internal/agentclient"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// Options configure a Provider. Only NetsetupImage has no default, and only
// ungated limited sandboxes need it.
type Options struct {
	// Namespace holds every pod this provider creates, lists and deletes;
	// it is what shards the reaper (Owned is namespace-local). Default
	// "default".
	Namespace string
	// RuntimeClassName, NodeSelector, Tolerations and ImagePullSecrets place
	// the sandbox pods; they are validated by New, before anything is
	// created.
	RuntimeClassName string
	// GVisorRuntimeClass is the RuntimeClass of sandboxes whose spec asks
	// for gVisor (it replaces RuntimeClassName for them). Empty: gVisor is
	// not offered, and such a spec is refused
	// (sandbox.ErrIsolationUnavailable), as it is when the cluster has no
	// RuntimeClass of that name.
	GVisorRuntimeClass string
	NodeSelector       map[string]string
	Tolerations        []corev1.Toleration
	ImagePullSecrets   []string
	// NetsetupImage runs the "netsetup" init container of an ungated limited
	// sandbox: it needs `ip` (iproute2 or busybox) and runs as root with
	// NET_ADMIN alone. A limited ungated provision without it is refused
	// before anything is created.
	NetsetupImage string
	// Logger receives the few things worth saying once (ignored hardening
	// fields). Default: slog.Default().
	Logger *slog.Logger
	// Tokens mints the gate token of a gated sandbox (C-GATE-2) and
	// revokes a session's token before Reap removes anything (C-REAP-1) and
	// when a reshape dismantles a gate. A provider without it refuses gated
	// specs (before the first API call) and reaps without revoking.
	Tokens ports.GateTokenIssuer
	// Labels are added to every pod this provider creates (tests mark their
	// pods so a cleanup can find them), and Owned lists only pods carrying
	// all of them (executors sharing a namespace with different labels never
	// reap each other's pods as orphans). Validated by New.
	Labels map[string]string
	// ReadyTimeout bounds the wait for a pod to become ready (C-PROV-8).
	// Default defaultReadyTimeout, 2 min.
	ReadyTimeout time.Duration
	// RemoveTimeout bounds the wait for a deletion to finish. Default 30 s.
	RemoveTimeout time.Duration
	// SeccompProfile, when set, is the sandbox container's seccomp profile:
	// a Localhost profile, the path of a file under each node's kubelet
	// seccomp root (/var/lib/kubelet/seccomp by default) holding `executor
	// seccomp-profile`'s JSON — the profile Docker sandboxes run, which
	// denies the socket families the pod's firewall does not govern
	// (AF_VSOCK…). Unset: the runtime's default profile (RuntimeDefault),
	// which may leave them open (docs/SECURITY.md). A node without the file
	// fails the sandbox's start, never runs it unconfined. Validated by New:
	// a relative path within the root.
	SeccompProfile string
	// StaleTempAge is how long a write's temporary must have gone
	// unmodified before an adoption's sweep removes it (sweep.go). Default
	// sandbox.DefaultStaleTempAge.
	StaleTempAge time.Duration
	// AgentImage is the image that carries the in-sandbox agent (`docker
	// build --target agent`): an init container copies its binary into an
	// emptyDir that the sandbox mounts read-only. Empty: no agent, every
	// operation is an engine exec (the fallback path). The image must be
	// pullable by the nodes, like the sandbox's.
	AgentImage string
	// AgentKey returns the key each sandbox's agent token derives from
	// (agentwire.Token), read when an agent starts: with one, every agent
	// stream is a relay to one daemon per pod, whose procs outlive the
	// stream (an executor restart: keep the key). Nil or empty: each
	// stream's agent serves alone and its procs end with it.
	AgentKey func() []byte
	// ObserveDataPlane, when set, is told which path each Exec and file
	// operation takes (agent true, fallback false).
	ObserveDataPlane func(ctx context.Context, agent bool)
}

// Provider is ports.Provider on one namespace of one cluster.
type Provider struct {
	cli  kubernetes.Interface
	ex   execer
	opts Options

	pidsOnce sync.Once
	// swept holds the UIDs of the pods this provider has swept for stale
	// write temporaries (sweep.go); a pod's containers never restart
	// (restartPolicy Never), so its UID is swept once.
	swept sync.Map
	// agents holds the agent Conn of each session's pod, tagged with its UID.
	agents agentclient.Registry
}

var _ ports.Provider = (*Provider)(nil)

// Client-side rate limits New applies when cfg leaves them unset (0):
// client-go's own defaults (5 QPS, burst 10) throttle an executor whose
// every exec, file transfer, readiness poll and group probe is an API call —
// a few busy sessions would queue behind each other in the client. The API
// server's own priority and fairness still protects it; a cfg that sets
// QPS or Burst (or a RateLimiter) is used as given.
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)

// New returns a Provider on the cluster cfg names. It validates opts (the
// placement above all) and starts nothing. cfg is not modified.
func New(cfg *rest.Config, opts Options) (*Provider, error) {
	cfg = withRateLimits(cfg)
	cli, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	ex, err := newRemoteExecer(cfg, cli)
	if err != nil {
		return nil, err
	}
	return newProvider(cli, ex, opts)
}

// withRateLimits is a copy of cfg with DefaultQPS and DefaultBurst where it
// has none.
func withRateLimits(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS = DefaultQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	return cfg
}

// NewFromKubeconfig is New on the kubeconfig file at path (empty: the
// in-cluster config of a pod's service account).
func NewFromKubeconfig(path string, opts Options) (*Provider, error) {
	var cfg *rest.Config
	var err error
	if path == "" {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", path)
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes config: %w", err)
	}
	return New(cfg, opts)
}

func newProvider(cli kubernetes.Interface, ex execer, opts Options) (*Provider, error) {
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = defaultReadyTimeout
	}
	if opts.RemoveTimeout <= 0 {
		opts.RemoveTimeout = 30 * time.Second
	}
	if opts.StaleTempAge <= 0 {
		opts.StaleTempAge = sandbox.DefaultStaleTempAge
	}
	if err := validateOptions(opts); err != nil {
		return nil, err
	}
	return &Provider{cli: cli, ex: ex, opts: opts}, nil
}

// validateOptions checks the placement and labels with the API server's own
// rules, so a typo fails the constructor instead of every provision.
func validateOptions(o Options) error {
	var errs []error
	add := func(field string, msgs []string) {
		if len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("kubernetes options: %s: %s", field, strings.Join(msgs, "; ")))
		}
	}
	add("namespace "+quote(o.Namespace), validation.IsDNS1123Label(o.Namespace))
	if o.GVisorRuntimeClass != "" {
		add("gVisor runtime class "+quote(o.GVisorRuntimeClass), validation.IsDNS1123Subdomain(o.GVisorRuntimeClass))
	}
	if o.RuntimeClassName != "" {
		add("runtime class "+quote(o.RuntimeClassName), validation.IsDNS1123Subdomain(o.RuntimeClassName))
	}
	for _, k := range sortedKeys(o.NodeSelector) {
		add("node selector key "+quote(k), validation.IsQualifiedName(k))
		add("node selector value "+quote(o.NodeSelector[k]), validation.IsValidLabelValue(o.NodeSelector[k]))
	}
	for i, t := range o.Tolerations {
		errs = append(errs, validateToleration(i, t)...)
	}
	for _, s := range o.ImagePullSecrets {
		add("image pull secret "+quote(s), validation.IsDNS1123Subdomain(s))
	}
	if o.SeccompProfile != "" && !filepath.IsLocal(o.SeccompProfile) {
		errs = append(errs, fmt.Errorf("kubernetes options: seccomp profile %q: must be relative to the kubelet's seccomp root and stay inside it", o.SeccompProfile))
	}
	for _, k := range sortedKeys(o.Labels) {
		if k == sandbox.LabelSession || k == labelRole {
			errs = append(errs, fmt.Errorf("kubernetes options: label %q is the provider's own", k))
			continue
		}
		add("label key "+quote(k), validation.IsQualifiedName(k))
		add("label value "+quote(o.Labels[k]), validation.IsValidLabelValue(o.Labels[k]))
	}
	return errors.Join(errs...)
}

// validateToleration applies the API server's toleration rules: a known
// operator and effect, Exists without a value, a key unless Exists matches
// every taint, tolerationSeconds only with NoExecute.
func validateToleration(i int, t corev1.Toleration) []error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("kubernetes options: toleration %d: "+format, append([]any{i}, a...)...))
	}
	if t.Key != "" {
		if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
			bad("key %q: %s", t.Key, strings.Join(msgs, "; "))
		}
	}
	switch t.Operator {
	case corev1.TolerationOpEqual, "":
		if t.Key == "" {
			bad("operator Equal needs a key")
		}
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
			bad("value %q: %s", t.Value, strings.Join(msgs, "; "))
		}
	case corev1.TolerationOpExists:
		if t.Value != "" {
			bad("operator Exists takes no value")
		}
	default:
		bad("unknown operator %q", t.Operator)
	}
	switch t.Effect {
	case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		bad("unknown effect %q", t.Effect)
	}
	if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
		bad("tolerationSeconds needs effect NoExecute")
	}
	return errs
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
