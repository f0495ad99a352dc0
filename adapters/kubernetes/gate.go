package kubernetes

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// The gated pod (CONTRACT §0, C-GATE-1). Its init containers run in order:
//
//	netsetup  the gate image's `gate -firewall`: root with NET_ADMIN alone,
//	          installs and verifies the owner-match firewall in the pod's
//	          network namespace, then exits (C-FW-1's first step)
//	gate      the native sidecar (restartPolicy Always): the gate itself as
//	          the gate uid with no capability at all (GATE_FIREWALL=
//	          preinstalled); the kubelet starts the next container only once
//	          its startup probe (`gate -healthcheck`, B-3) passes
//	trust     the sandbox image as the sandbox's user: refuses to go on as
//	          the gate uid (B-2) and installs the gate's CA (B-1)
//
// and only then the sandbox container starts. The pod is created with a
// scheduling gate that Provision lifts once the gate token is persisted
// (C-GATE-2): before that no container runs, so the gate never asks for
// its config with a token the control plane does not know yet.
const (
	containerGate  = "gate"
	containerTrust = "trust"
	// schedulingGate holds a new gated pod until its token is persisted.
	schedulingGate = "sandgate.dev/gate-token"
	// volGateCA is the gate's CA directory (gatewire.CAFile's), written by the
	// gate and read by trust and the sandbox under gateCAMount.
	volGateCA = "gate-ca"
	// volSandboxCA is SandboxCADir in the sandbox (written by trust).
	volSandboxCA = "sandbox-ca"
	// volFirewallRun is netsetup's /run (the iptables lock).
	volFirewallRun = "firewall-run"
	// gateCAMount is where trust and the sandbox see the gate's CA
	// directory, read-only.
	gateCAMount = "/etc/sandgate-gate"
	// exitGateUID is trust's exit code when it runs as the gate uid.
	exitGateUID = 86
)

// Probe timings of the gate sidecar: the startup probe every second (a
// gate is ready within a second or two of its start; the provider's own
// ReadyTimeout bounds the whole wait), readiness every ten.
var (
	gateStartupProbe   = gateProbe(1, 600)
	gateReadinessProbe = gateProbe(10, 3)
	// gateMemory caps the gate like the Docker one (512 MiB); the request
	// is small so that scheduling does not reserve the cap per sandbox.
	gateMemoryLimit   = resource.MustParse("512Mi")
	gateMemoryRequest = resource.MustParse("32Mi")
)

func gateProbe(period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"gate", "-healthcheck"}}},
		PeriodSeconds:    period,
		TimeoutSeconds:   5,
		FailureThreshold: failures,
	}
}

// trustScript is the trust container's (and the re-trust exec's) script:
// refuse the gate uid, then write the CA alone and the image's system
// bundle with the CA appended (sandbox.CABundle's rule: the CA starts on a
// line of its own), each through a temporary file and a rename.
var trustScript = `set -eu
if [ "$(id -u)" = ` + strconv.Itoa(gatewire.UID) + ` ]; then
	echo "sandgate: the sandbox image runs as the gate uid ` + strconv.Itoa(gatewire.UID) + `" >&2
	exit ` + strconv.Itoa(exitGateUID) + `
fi
ca=` + gateCAMount + `/ca.pem
dir=` + gatewire.SandboxCADir + `
[ -s "$ca" ] || { echo "sandgate: the gate wrote no CA at $ca" >&2; exit 1; }
cat "$ca" >"$dir/.ca.tmp"
cat ` + gatewire.SystemCABundle + ` >"$dir/.bundle.tmp" 2>/dev/null || : >"$dir/.bundle.tmp"
if [ -s "$dir/.bundle.tmp" ] && [ "$(tail -c 1 "$dir/.bundle.tmp" | wc -l)" = 0 ]; then echo >>"$dir/.bundle.tmp"; fi
cat "$ca" >>"$dir/.bundle.tmp"
chmod 644 "$dir/.ca.tmp" "$dir/.bundle.tmp"
mv -f "$dir/.ca.tmp" ` + gatewire.SandboxCACert + `
mv -f "$dir/.bundle.tmp" ` + gatewire.SandboxCABundle + `
`

// gatePod turns the pod of an ungated spec into the gated one: the three
// init containers, the proxy and CA variables and the CA volumes in the
// sandbox, and the scheduling gate. token is the gate token, which lives in
// the gate container's environment (see docs/SECURITY.md).
func gatePod(pod *corev1.Pod, spec sandbox.Spec, token string) {
	sb := &pod.Spec.Containers[0]
	env := make(map[string]string, len(spec.Env)+12)
	for k, v := range spec.Env {
		env[k] = v
	}
	for k, v := range sandbox.GateSandboxEnv() {
		env[k] = v
	}
	sb.Env = append(envVars(env), podUIDEnv)
	caMounts := []corev1.VolumeMount{
		{Name: volSandboxCA, MountPath: gatewire.SandboxCADir},
		{Name: volGateCA, MountPath: gateCAMount, ReadOnly: true},
	}
	sb.VolumeMounts = append(sb.VolumeMounts, caMounts...)
	trust := corev1.Container{
		Name:            containerTrust,
		Image:           spec.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"/bin/sh", "-c", escape(trustScript)},
		SecurityContext: sb.SecurityContext.DeepCopy(),
		VolumeMounts:    caMounts,
	}
	for _, name := range []string{volGateCA, volSandboxCA, volFirewallRun} {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}})
	}
	// Ahead of what podFor put there (the agent's install step).
	pod.Spec.InitContainers = append([]corev1.Container{firewallContainer(spec.Gate.Image), gateContainer(spec, token), trust},
		pod.Spec.InitContainers...)
	pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: schedulingGate}}
}

// firewallContainer is netsetup on a gated pod: `gate -firewall` as root
// with NET_ADMIN alone (its /run on an emptyDir for the iptables lock).
func firewallContainer(image string) corev1.Container {
	c := netsetupContainer(image)
	c.Command = nil // the image's entrypoint: the gate
	c.Args = []string{"-firewall"}
	c.Env = []corev1.EnvVar{{Name: gatewire.EnvUID, Value: strconv.Itoa(gatewire.UID)}}
	ro := true
	c.SecurityContext.ReadOnlyRootFilesystem = &ro
	c.VolumeMounts = []corev1.VolumeMount{{Name: volFirewallRun, MountPath: "/run"}}
	return c
}

// gateContainer is the native sidecar: the gate uid, no capability, a
// read-only root with its CA directory on the shared emptyDir.
func gateContainer(spec sandbox.Spec, token string) corev1.Container {
	uid := int64(gatewire.UID)
	yes, no := true, false
	always := corev1.ContainerRestartPolicyAlways
	var env []corev1.EnvVar
	genv := spec.Gate.Env(spec.SessionID, token)
	genv.FirewallPreinstalled = true
	for _, kv := range genv.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, corev1.EnvVar{Name: k, Value: escape(v)})
	}
	return corev1.Container{
		Name:            containerGate,
		Image:           spec.Gate.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		RestartPolicy:   &always,
		Env:             env,
		SecurityContext: &corev1.SecurityContext{
			RunAsUser:                &uid,
			RunAsGroup:               &uid,
			RunAsNonRoot:             &yes,
			ReadOnlyRootFilesystem:   &yes,
			AllowPrivilegeEscalation: &no,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		VolumeMounts:   []corev1.VolumeMount{{Name: volGateCA, MountPath: dirOf(gatewire.CAFile)}},
		StartupProbe:   gateStartupProbe,
		ReadinessProbe: gateReadinessProbe,
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceMemory: gateMemoryLimit},
			Requests: corev1.ResourceList{corev1.ResourceMemory: gateMemoryRequest},
		},
	}
}

func dirOf(p string) string { return p[:strings.LastIndex(p, "/")] }

// gated reports whether pod is a gated sandbox (it has the gate sidecar).
func gated(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == containerGate {
			return true
		}
	}
	return false
}

// held reports whether pod still waits for its token (scheduling gate on).
func held(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name == schedulingGate {
			return true
		}
	}
	return false
}

// gateStatus returns the gate sidecar's status, nil when there is none yet.
func gateStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.InitContainerStatuses {
		if pod.Status.InitContainerStatuses[i].Name == containerGate {
			return &pod.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

// refusedGateUID reports whether trust refused the image's user (B-2).
func refusedGateUID(pod *corev1.Pod) bool {
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.Name == containerTrust && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == exitGateUID {
			return true
		}
	}
	return false
}

// errGateUID wraps sandbox.ErrGateUIDImage for a refused image.
func errGateUID(image string) error {
	return fmt.Errorf("gated sandbox from %q: %w", image, sandbox.ErrGateUIDImage)
}

// release lifts the scheduling gate of the pod this call created (a merge
// patch with the pod's UID, so a newer pod of the same name is never
// touched) and returns the pod as it is now.
func (p *Provider) release(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	patch := fmt.Sprintf(`{"metadata":{"uid":%q},"spec":{"schedulingGates":null}}`, pod.UID)
	got, err := p.cli.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return nil, translate(err, "release pod "+pod.Name)
	}
	return got, nil
}

// gateLogs returns the gate's last log lines for an error message (the
// gate never logs a secret).
func (p *Provider) gateLogs(pod *corev1.Pod) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tail := int64(15)
	raw, err := p.cli.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: containerGate, TailLines: &tail}).DoRaw(ctx)
	if err != nil {
		return "the gate's logs cannot be read: " + err.Error()
	}
	w := sandbox.NewCapture(8 << 10)
	_, _ = w.Write(raw)
	if text := strings.TrimSpace(w.String()); text != "" {
		return "gate log: " + text
	}
	return "the gate logged nothing"
}

// retrustAfterRestart reinstalls the gate's CA in a ready gated sandbox
// whose gate the kubelet has restarted: a restarted gate mints a new CA
// (its key never leaves its memory), and trust ran only for the first one.
// Adoption calls it; a never-restarted gate costs nothing.
func (p *Provider) retrustAfterRestart(ctx context.Context, pod *corev1.Pod, workdir string) error {
	gs := gateStatus(pod)
	if gs == nil || gs.RestartCount == 0 {
		return nil
	}
	code, stderr, err := p.handle(pod, workdir).run(ctx, []string{"/bin/sh", "-c", trustScript}, nil, nil)
	switch {
	case err != nil:
		return fmt.Errorf("reinstall the restarted gate's CA: %w", err)
	case code != 0:
		return fmt.Errorf("reinstall the restarted gate's CA: exit %d: %s", code, strings.TrimSpace(stderr))
	}
	return nil
}
