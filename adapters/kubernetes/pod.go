package kubernetes

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/core/sandbox"
)

// Names and labels of the pods this provider creates (CONTRACT §0). The role
// label tells a sandbox pod from anything else a later version adds (the
// gate runs inside the pod, so today every labelled pod is a sandbox).
const (
	containerSandbox  = "sandbox"
	containerNetsetup = "netsetup"
	labelRole         = "dev.sandgate.role"
	roleSandbox       = "sandbox"
	// annotationWorkdir records the resolved workdir, which adoption
	// compares (the container's workingDir says the same, but an annotation
	// is what a reader of the pod sees first).
	annotationWorkdir = "dev.sandgate.workdir"
	// labelIsolation marks a pod made under gVisor, for adoption.
	labelIsolation = "dev.sandgate.isolation"
)

// Pod-level constants: a small CPU request, because a quota is not a
// reservation (C-HARD-1); a grace period of one second, because PID 1 is a
// bash that ignores SIGTERM and deletes would otherwise wait the default 30 s.
var (
	cpuRequest  = resource.MustParse("10m")
	gracePeriod = int64(1)
)

// netsetupScript flushes every route of the pod's main tables, then fails
// closed if one survives (C-PROV-7): a pod whose init container fails never
// starts its sandbox. It runs before the sandbox container, in the network
// namespace the sandbox shares; the sandbox has no NET_ADMIN to add routes
// back.
const netsetupScript = `set -u
ip -4 route flush table main 2>/dev/null
ip -6 route flush table main 2>/dev/null
for dev in $(ls /sys/class/net); do
	[ "$dev" = lo ] || ip link set dev "$dev" down || exit 1
done
left=$(ip -4 route show table main; ip -6 route show table main 2>/dev/null)
if [ -n "$left" ]; then
	echo "netsetup: routes survived the flush: $left" >&2
	exit 1
fi
`

// podFor builds the pod of a resolved, ungated spec. Pure, so every field's
// mapping is unit-tested without a cluster.
func podFor(spec sandbox.Spec, o Options) *corev1.Pod {
	sid := spec.SessionID.String()
	labels := map[string]string{sandbox.LabelSession: sid, labelRole: roleSandbox}
	for k, v := range o.Labels {
		labels[k] = v
	}
	no := false
	grace := gracePeriod
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        PodName(sid),
			Namespace:   o.Namespace,
			Labels:      labels,
			Annotations: map[string]string{annotationWorkdir: spec.Workdir},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			TerminationGracePeriodSeconds: &grace,
			SecurityContext: &corev1.PodSecurityContext{
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			NodeSelector: o.NodeSelector,
			Tolerations:  o.Tolerations,
			Containers:   []corev1.Container{sandboxContainer(spec)},
		},
	}
	if o.SeccompProfile != "" {
		path := o.SeccompProfile
		pod.Spec.Containers[0].SecurityContext.SeccompProfile = &corev1.SeccompProfile{
			Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &path}
	}
	if o.RuntimeClassName != "" {
		rc := o.RuntimeClassName
		pod.Spec.RuntimeClassName = &rc
	}
	if spec.Isolation == sandbox.IsolationGVisor {
		rc := o.GVisorRuntimeClass
		pod.Spec.RuntimeClassName = &rc
		labels[labelIsolation] = string(sandbox.IsolationGVisor)
	}
	for _, s := range o.ImagePullSecrets {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	if spec.Hardening.ReadOnlyRootfs {
		// emptyDirs, not tmpfs: node disk like the rest of the pod, and
		// created world-writable, so a RunAsUser can write there (C-HARD-4).
		for i, p := range sandbox.WritablePaths(spec.Workdir) {
			name := fmt.Sprintf("writable-%d", i)
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name,
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts,
				corev1.VolumeMount{Name: name, MountPath: p})
		}
	}
	if spec.Networking.Limited() && spec.Gate == nil {
		pod.Spec.InitContainers = []corev1.Container{netsetupContainer(o.NetsetupImage)}
	}
	if o.AgentImage != "" {
		withAgent(pod, o.AgentImage)
	}
	return pod
}

// sandboxContainer is the "sandbox" container: the keep-alive, the env, and
// the hardening Kubernetes can express (C-HARD-1..5; PidsLimit cannot be,
// see docs/DIVERGENCES.md).
func sandboxContainer(spec sandbox.Spec) corev1.Container {
	h := spec.Hardening
	argv := sandbox.KeepAliveArgv(spec.Workdir)
	c := corev1.Container{
		Name:            containerSandbox,
		Image:           spec.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         escapeAll(argv[:1]),
		Args:            escapeAll(argv[1:]),
		WorkingDir:      spec.Workdir,
		Env:             append(envVars(spec.Env), podUIDEnv),
		SecurityContext: &corev1.SecurityContext{},
	}
	sc := c.SecurityContext
	if h.RunAsUser != nil {
		uid := *h.RunAsUser
		sc.RunAsUser = &uid
	}
	if h.ReadOnlyRootfs {
		ro := true
		sc.ReadOnlyRootFilesystem = &ro
	}
	if drop := h.EffectiveCapDrop(spec.Gate != nil); len(drop) > 0 {
		sc.Capabilities = &corev1.Capabilities{}
		for _, d := range drop {
			sc.Capabilities.Drop = append(sc.Capabilities.Drop, corev1.Capability(d))
		}
		no := false
		sc.AllowPrivilegeEscalation = &no
	}
	limits := corev1.ResourceList{}
	requests := corev1.ResourceList{}
	if h.CPUMillis > 0 {
		limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(h.CPUMillis, resource.DecimalSI)
		req := cpuRequest
		if h.CPUMillis < req.MilliValue() {
			req = *resource.NewMilliQuantity(h.CPUMillis, resource.DecimalSI)
		}
		requests[corev1.ResourceCPU] = req
	}
	if h.MemoryBytes > 0 {
		q := *resource.NewQuantity(h.MemoryBytes, resource.BinarySI)
		limits[corev1.ResourceMemory], requests[corev1.ResourceMemory] = q, q
	}
	if h.EphemeralStorageBytes > 0 {
		// The request stays 0: a limit alone would default the request to
		// it, and scheduling would then reserve the node's disk.
		limits[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(h.EphemeralStorageBytes, resource.BinarySI)
		requests[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(0, resource.BinarySI)
	}
	if len(limits) > 0 {
		c.Resources = corev1.ResourceRequirements{Limits: limits, Requests: requests}
	}
	return c
}

// netsetupContainer is the init container that takes every route away
// (C-PROV-7): root with NET_ADMIN and nothing else.
func netsetupContainer(image string) corev1.Container {
	root := int64(0)
	no := false
	return corev1.Container{
		Name:            containerNetsetup,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"/bin/sh", "-c", escape(netsetupScript)},
		SecurityContext: &corev1.SecurityContext{
			RunAsUser:                &root,
			AllowPrivilegeEscalation: &no,
			Capabilities: &corev1.Capabilities{
				Drop: []corev1.Capability{"ALL"},
				Add:  []corev1.Capability{"NET_ADMIN"},
			},
		},
	}
}

// envVars renders env sorted, each value escaped so that the kubelet's
// $(VAR) expansion leaves it verbatim (C-VAL-3).
func envVars(env map[string]string) []corev1.EnvVar {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []corev1.EnvVar
	for _, k := range keys {
		out = append(out, corev1.EnvVar{Name: k, Value: escape(env[k])})
	}
	return out
}

// escape protects s from the kubelet's expansion of $(VAR) in env values,
// command and args: "$$" is how a literal "$" is written there, and doubling
// every "$" leaves any text verbatim.
func escape(s string) string { return strings.ReplaceAll(s, "$", "$$") }

func escapeAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = escape(s)
	}
	return out
}

// observe reads back what adoption compares from an existing pod.
func observe(pod *corev1.Pod) sandbox.Observed {
	o := sandbox.Observed{Net: sandbox.NetShapeOpen, Workdir: pod.Annotations[annotationWorkdir],
		Isolation: sandbox.Isolation(pod.Labels[labelIsolation])}
	for _, c := range pod.Spec.Containers {
		if c.Name == containerSandbox {
			o.Image = c.Image
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == containerNetsetup {
			o.Net = sandbox.NetShapeNone
		}
	}
	if gated(pod) {
		// The gate is in the pod: the pairing cannot go stale.
		o.Gated, o.PairedGate, o.CurrentGate = true, string(pod.UID), string(pod.UID)
	}
	return o
}

// owned reports whether pod carries sid's ownership label.
func owned(pod *corev1.Pod, sid string) bool { return pod.Labels[sandbox.LabelSession] == sid }

// ready reports whether pod is running with its sandbox container (and its
// gate, when gated: C-PROV-8) ready and not being deleted: what a handle
// can be used against (C-ATT-1).
func ready(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	if gated(pod) {
		if gs := gateStatus(pod); gs == nil || !gs.Ready {
			return false
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == containerSandbox {
			return cs.Ready
		}
	}
	return false
}

// dead reports whether pod has ended for good: restartPolicy Never makes
// Failed and Succeeded final (B-6).
func dead(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

// stuck returns why pod can never become ready without someone's help — an
// image that cannot be pulled, a config the runtime refused, an init
// container that failed — or "" while it may still get there. Waiting out
// the readiness bound on these would only delay the error.
func stuck(pod *corev1.Pod) string {
	if dead(pod) {
		return "pod " + string(pod.Status.Phase) + podMessage(pod)
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if w := cs.State.Waiting; w != nil {
				switch w.Reason {
				case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
					"CreateContainerConfigError", "CreateContainerError", "RunContainerError",
					"CrashLoopBackOff": // a gate sidecar that keeps failing
					return fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message)
				}
			}
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				return fmt.Sprintf("container %s exited %d (%s)", cs.Name, t.ExitCode, t.Reason)
			}
		}
	}
	return ""
}

// stuckClass tells the caller's mistakes among stuck pods, from the sandbox
// container's status alone: an image that cannot be named or pulled is
// sandbox.ErrImageUnavailable; a keep-alive that could not start or exited
// 127 (no /bin/bash in the image) is sandbox.ErrImageUnusable; a workdir
// the runtime could not enter because a file is in its way is
// sandbox.ErrInvalidWorkdir. Anything else (the gate's image, netsetup,
// the node) is the operator's: nil.
func stuckClass(pod *corev1.Pod) error {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != containerSandbox {
			continue
		}
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
				return sandbox.ErrImageUnavailable
			}
			return startFailure(w.Message)
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			if t.ExitCode == 127 {
				return sandbox.ErrImageUnusable
			}
			return startFailure(t.Message)
		}
	}
	return nil
}

// startFailure classifies the runtime's message for a sandbox container
// that could not start (StartError, RunContainerError): runc says "chdir to
// cwd ... not a directory" for a workdir that is a file and "exec:
// \"/bin/bash\": ... no such file or directory" for a missing shell.
func startFailure(msg string) error {
	switch {
	case strings.Contains(msg, "not a directory"):
		return sandbox.ErrInvalidWorkdir
	case strings.Contains(msg, "/bin/bash") && strings.Contains(msg, "no such file"):
		return sandbox.ErrImageUnusable
	}
	return nil
}

func podMessage(pod *corev1.Pod) string {
	if pod.Status.Message == "" {
		return ""
	}
	return ": " + pod.Status.Message
}
