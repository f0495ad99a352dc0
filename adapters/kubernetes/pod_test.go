package kubernetes

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

func resolved(t *testing.T, spec sandbox.Spec) sandbox.Spec {
	t.Helper()
	spec, err := sandbox.ResolveSpec(spec)
	require.NoError(t, err)
	return spec
}

func TestPodShape(t *testing.T) {
	t.Parallel()
	uid := int64(1000)
	spec := resolved(t, sandbox.Spec{
		SessionID: domain.MustParseSessionID("ses_0123456789abcdefghjkmnpq"),
		Image:     "debian:bookworm",
		Workdir:   "/srv/$(HOME) dir",
		Env:       map[string]string{"B": "$(PATH) $lit $$", "A": "plain"},
		Hardening: sandbox.Hardening{CPUMillis: 1500, MemoryBytes: 256 << 20, EphemeralStorageBytes: 1 << 30,
			PidsLimit: 64, CapDrop: []string{"NET_RAW"}, ReadOnlyRootfs: true, RunAsUser: &uid},
	})
	o := Options{Namespace: "sbx", Labels: map[string]string{"dev.sandgate.test": "x"}, RuntimeClassName: "gvisor",
		NodeSelector: map[string]string{"pool": "sandboxes"}, ImagePullSecrets: []string{"regcred"}}
	pod := podFor(spec, o)

	require.Equal(t, "sandgate-ses-0123456789abcdefghjkmnpq", pod.Name)
	require.Equal(t, "sbx", pod.Namespace)
	require.Equal(t, map[string]string{sandbox.LabelSession: "ses_0123456789abcdefghjkmnpq", labelRole: roleSandbox,
		"dev.sandgate.test": "x"}, pod.Labels)
	ps := pod.Spec
	require.Equal(t, corev1.RestartPolicyNever, ps.RestartPolicy)
	require.False(t, *ps.AutomountServiceAccountToken)
	require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, ps.SecurityContext.SeccompProfile.Type)
	require.Nil(t, ps.Containers[0].SecurityContext.SeccompProfile, "no Localhost profile configured")
	withProfile := podFor(spec, Options{SeccompProfile: "sandgate/sandbox.json"}).Spec.Containers[0].SecurityContext.SeccompProfile
	require.Equal(t, corev1.SeccompProfileTypeLocalhost, withProfile.Type)
	require.Equal(t, "sandgate/sandbox.json", *withProfile.LocalhostProfile)
	require.LessOrEqual(t, *ps.TerminationGracePeriodSeconds, int64(2))
	require.Equal(t, "gvisor", *ps.RuntimeClassName)
	require.Equal(t, "sandboxes", ps.NodeSelector["pool"])
	require.Equal(t, "regcred", ps.ImagePullSecrets[0].Name)
	require.Empty(t, ps.InitContainers, "unrestricted: no netsetup")

	c := ps.Containers[0]
	require.Equal(t, containerSandbox, c.Name)
	require.Equal(t, corev1.PullIfNotPresent, c.ImagePullPolicy)
	// The kubelet expands $(VAR) in command, args and env: every "$" is
	// doubled so the keep-alive and the values arrive verbatim (C-VAL-3).
	argv := sandbox.KeepAliveArgv("/srv/$(HOME) dir")
	require.Equal(t, []string{argv[0]}, c.Command)
	require.Equal(t, "$$(HOME)", c.Args[len(c.Args)-1][len("mkdir -p '/srv/"):][:8])
	require.Equal(t, []corev1.EnvVar{{Name: "A", Value: "plain"}, {Name: "B", Value: "$$(PATH) $$lit $$$$"}, podUIDEnv}, c.Env,
		"the pod UID last, so it wins over a same-named env (the handle checks it)")
	require.Equal(t, "/srv/$(HOME) dir", pod.Annotations[annotationWorkdir])

	sc := c.SecurityContext
	require.Equal(t, uid, *sc.RunAsUser)
	require.True(t, *sc.ReadOnlyRootFilesystem)
	require.False(t, *sc.AllowPrivilegeEscalation)
	require.Equal(t, []corev1.Capability{"NET_RAW"}, sc.Capabilities.Drop)

	cpu := c.Resources.Limits[corev1.ResourceCPU]
	require.Equal(t, int64(1500), cpu.MilliValue())
	req := c.Resources.Requests[corev1.ResourceCPU]
	require.Equal(t, int64(10), req.MilliValue(), "a quota, not a reservation (C-HARD-1)")
	require.True(t, c.Resources.Limits[corev1.ResourceMemory].Equal(c.Resources.Requests[corev1.ResourceMemory]))
	mem := c.Resources.Limits[corev1.ResourceMemory]
	require.Equal(t, int64(256<<20), mem.Value())
	eph := c.Resources.Limits[corev1.ResourceEphemeralStorage]
	require.Equal(t, int64(1<<30), eph.Value())
	require.True(t, c.Resources.Requests[corev1.ResourceEphemeralStorage].Equal(resource.MustParse("0")))

	var mounts []string
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, m.MountPath)
	}
	require.Equal(t, sandbox.WritablePaths(spec.Workdir), mounts)
	for _, v := range ps.Volumes {
		require.NotNil(t, v.EmptyDir, "writable paths are emptyDirs")
	}
}

func TestPodShapeLimitedUngated(t *testing.T) {
	t.Parallel()
	spec := resolved(t, sandbox.Spec{SessionID: domain.NewID("ses"), Image: "img:1",
		Networking: domain.Networking{Type: domain.NetLimited}})
	pod := podFor(spec, Options{Namespace: "default", NetsetupImage: "busybox:1.35"})
	require.Len(t, pod.Spec.InitContainers, 1)
	n := pod.Spec.InitContainers[0]
	require.Equal(t, containerNetsetup, n.Name)
	require.Equal(t, "busybox:1.35", n.Image)
	require.Equal(t, []corev1.Capability{"NET_ADMIN"}, n.SecurityContext.Capabilities.Add)
	require.Equal(t, []corev1.Capability{"ALL"}, n.SecurityContext.Capabilities.Drop)
	require.Equal(t, sandbox.NetShapeNone, observe(pod).Net)
	c := pod.Spec.Containers[0]
	require.Nil(t, c.Resources.Limits, "zero hardening sets no limits")
	require.Nil(t, c.SecurityContext.Capabilities)
	require.Nil(t, c.SecurityContext.AllowPrivilegeEscalation)

	open := podFor(resolved(t, sandbox.Spec{SessionID: spec.SessionID, Image: "img:1"}), Options{})
	require.Equal(t, sandbox.Observed{Image: "img:1", Workdir: sandbox.DefaultWorkdir, Net: sandbox.NetShapeOpen}, observe(open))
}

func TestPlacementValidated(t *testing.T) {
	t.Parallel()
	secs := int64(5)
	for name, o := range map[string]Options{
		"namespace":             {Namespace: "Bad_NS"},
		"runtime class":         {RuntimeClassName: "no spaces allowed"},
		"node selector key":     {NodeSelector: map[string]string{"bad key!": "v"}},
		"node selector value":   {NodeSelector: map[string]string{"k": "-bad-"}},
		"toleration operator":   {Tolerations: []corev1.Toleration{{Key: "k", Operator: "Maybe"}}},
		"toleration effect":     {Tolerations: []corev1.Toleration{{Key: "k", Effect: "Sometimes"}}},
		"toleration exists val": {Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}},
		"toleration equal key":  {Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpEqual, Value: "v"}}},
		"toleration seconds":    {Tolerations: []corev1.Toleration{{Key: "k", Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: &secs}}},
		"pull secret":           {ImagePullSecrets: []string{"Not_A_Name"}},
		"label value":           {Labels: map[string]string{"k": "a b"}},
		"own label":             {Labels: map[string]string{sandbox.LabelSession: "x"}},
		"seccomp absolute":      {SeccompProfile: "/var/lib/kubelet/seccomp/sandgate.json"},
		"seccomp escapes":       {SeccompProfile: "../sandgate.json"},
	} {
		_, err := newProvider(nil, nil, o)
		require.Error(t, err, name)
	}
	_, err := newProvider(nil, nil, Options{Namespace: "sandboxes", RuntimeClassName: "gvisor",
		NodeSelector: map[string]string{"kubernetes.io/os": "linux"}, ImagePullSecrets: []string{"regcred"},
		SeccompProfile: "sandgate/sandbox.json",
		Tolerations: []corev1.Toleration{
			{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "sandboxes", Effect: corev1.TaintEffectNoSchedule},
			{Operator: corev1.TolerationOpExists},
			{Key: "k", Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
		}})
	require.NoError(t, err)
}

func TestStuckReasons(t *testing.T) {
	t.Parallel()
	pod := &corev1.Pod{}
	require.Empty(t, stuck(pod), "a pending pod may still get there")
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: containerNetsetup,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
	require.Contains(t, stuck(pod), "netsetup exited 1", "a netsetup that fails closed fails the provision")
	pod = &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Message: "evicted"}}
	require.Contains(t, stuck(pod), "Failed: evicted")
}

// The sandbox container's own failures are the caller's mistakes, each
// with its sentinel (issue 11); the gate's and netsetup's are not.
func TestStuckClass(t *testing.T) {
	t.Parallel()
	withSandbox := func(name string, st corev1.ContainerState) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed,
			ContainerStatuses: []corev1.ContainerStatus{{Name: name, State: st}}}}
	}
	waiting := func(reason, msg string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	}
	exited := func(code int32, msg string) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "StartError", Message: msg}}
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want error
	}{
		{withSandbox(containerSandbox, waiting("ErrImagePull", "not found")), sandbox.ErrImageUnavailable},
		{withSandbox(containerSandbox, waiting("InvalidImageName", "")), sandbox.ErrImageUnavailable},
		{withSandbox(containerSandbox, exited(127, "")), sandbox.ErrImageUnusable},
		{withSandbox(containerSandbox, exited(128, `exec: "/bin/bash": stat /bin/bash: no such file or directory`)), sandbox.ErrImageUnusable},
		{withSandbox(containerSandbox, waiting("RunContainerError", "chdir to cwd (\"/etc/passwd\"): not a directory")), sandbox.ErrInvalidWorkdir},
		{withSandbox(containerSandbox, exited(1, "")), nil},
		{withSandbox(containerGate, waiting("ErrImagePull", "")), nil},
		{&corev1.Pod{}, nil},
	} {
		got := stuckClass(tc.pod)
		if tc.want == nil {
			require.NoError(t, got)
			continue
		}
		require.ErrorIs(t, got, tc.want)
	}
}
