// Package helm holds the tests of the sandgate Helm chart (sandgate/): helm
// lint, and helm template with the default and the hardened values, checked
// object by object. They need the helm binary (`make helm` builds it; the
// Makefile passes it as SANDGATE_HELM): without it they skip outside CI and
// fail under CI=true.
package helm

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/sandgate/sandgate/core/sandbox"
)

const (
	chartDir     = "sandgate"
	hardenedFile = "sandgate/ci/hardened-values.yaml"
	release      = "sg"
	namespace    = "sandgate-system"
	// kubeVersion is what lint and template assume of the cluster (a helm
	// built with go install defaults to v1.20, below the chart's minimum):
	// the test cluster's version.
	kubeVersion = "v1.37.2"
)

// helmBinary is SANDGATE_HELM, or helm on PATH.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SANDGATE_HELM"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no helm binary (SANDGATE_HELM or PATH): `make helm` builds it")
	}
	t.Skip("no helm binary (SANDGATE_HELM or PATH); `make helm` builds it")
	return ""
}

// runHelm runs helm with args and returns stdout, or the error with stderr.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	// No repository config or cache of the user's is read or written.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	if err := cmd.Run(); err != nil {
		return out.String(), errors.New(err.Error() + ": " + errb.String() + out.String())
	}
	return out.String(), nil
}

// object is one rendered manifest, as generic YAML.
type object map[string]any

func (o object) kind() string { return str(o, "kind") }
func (o object) name() string { return str(o, "metadata", "name") }

// get walks o along keys (map keys, or list indexes as ints); nil when absent.
func get(o any, keys ...any) any {
	for _, k := range keys {
		switch v := o.(type) {
		case map[string]any:
			o = v[k.(string)]
		case object:
			o = v[k.(string)]
		case []any:
			i := k.(int)
			if i >= len(v) {
				return nil
			}
			o = v[i]
		default:
			return nil
		}
	}
	return o
}

func str(o any, keys ...any) string { s, _ := get(o, keys...).(string); return s }

// render runs helm template with the values files and --set pairs and
// decodes every document.
func render(t *testing.T, files []string, sets ...string) ([]object, error) {
	t.Helper()
	args := []string{"template", release, chartDir, "--namespace", namespace, "--kube-version", kubeVersion}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out, err := runHelm(t, args...)
	if err != nil {
		return nil, err
	}
	var objs []object
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var o map[string]any // not object: nested maps would decode as object too
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		if o != nil {
			objs = append(objs, object(o))
		}
	}
	return objs, nil
}

// byKind indexes objects by "Kind/name"; duplicates fail the test.
func byKind(t *testing.T, objs []object) map[string]object {
	t.Helper()
	m := map[string]object{}
	for _, o := range objs {
		key := o.kind() + "/" + o.name()
		require.NotContains(t, m, key, "rendered twice")
		m[key] = o
	}
	return m
}

// env is the executor container's environment: name → value,
// "secret:NAME/KEY" for a secretKeyRef or "field:PATH" for a fieldRef.
func env(t *testing.T, dep object) map[string]string {
	t.Helper()
	containers, _ := get(dep, "spec", "template", "spec", "containers").([]any)
	require.Len(t, containers, 1)
	vars, _ := get(containers[0], "env").([]any)
	m := map[string]string{}
	for _, v := range vars {
		name := str(v, "name")
		require.NotContains(t, m, name, "env set twice")
		if ref := get(v, "valueFrom", "secretKeyRef"); ref != nil {
			m[name] = "secret:" + str(ref, "name") + "/" + str(ref, "key")
			continue
		}
		if ref := get(v, "valueFrom", "fieldRef"); ref != nil {
			m[name] = "field:" + str(ref, "fieldPath")
			continue
		}
		m[name] = str(v, "value")
	}
	return m
}

// knownSettings are the SANDGATE_* names the executor's config package
// reads (from its source: it is internal to cmd/executor) and core's
// SANDBOX_* hardening variables.
func knownSettings(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("../../cmd/executor/internal/config/*.go")
	require.NoError(t, err)
	known := map[string]bool{}
	re := regexp.MustCompile(`"(SANDGATE_[A-Z0-9_]+)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range re.FindAllSubmatch(b, -1) {
			known[string(m[1])] = true
		}
	}
	require.Contains(t, known, "SANDGATE_BACKEND", "config source not found where expected")
	for _, n := range []string{sandbox.EnvPidsLimit, sandbox.EnvCPUMillis, sandbox.EnvMemoryBytes,
		sandbox.EnvEphemeralStorageBytes, sandbox.EnvCapDrop, sandbox.EnvReadOnlyRootfs, sandbox.EnvRunAsUser} {
		known[n] = true
	}
	// client-go's in-cluster config reads these (the kubernetesAPI values).
	known["KUBERNETES_SERVICE_HOST"], known["KUBERNETES_SERVICE_PORT"] = true, true
	return known
}

func TestLint(t *testing.T) {
	for _, files := range [][]string{nil, {hardenedFile}} {
		args := []string{"lint", "--strict", chartDir, "--namespace", namespace, "--kube-version", kubeVersion}
		for _, f := range files {
			args = append(args, "-f", f)
		}
		out, err := runHelm(t, args...)
		require.NoError(t, err, "helm %v", args)
		assert.Contains(t, out, "0 chart(s) failed")
	}
}

func TestRBACIsExactlyPodsExecAndLog(t *testing.T) {
	for _, tc := range []struct {
		files     []string
		sandboxNS string
	}{{nil, namespace}, {[]string{hardenedFile}, "sandboxes"}} {
		objs, err := render(t, tc.files)
		require.NoError(t, err)
		m := byKind(t, objs)
		var roles, bindings []object
		for _, o := range objs {
			switch o.kind() {
			case "Role":
				roles = append(roles, o)
			case "RoleBinding":
				bindings = append(bindings, o)
			case "ClusterRole", "ClusterRoleBinding":
				t.Errorf("%s: the executor needs no cluster-wide rights", o.kind())
			}
		}
		require.Len(t, roles, 1)
		require.Len(t, bindings, 1)
		role, binding := roles[0], bindings[0]
		assert.Equal(t, tc.sandboxNS, str(role, "metadata", "namespace"))
		assert.Equal(t, []any{
			map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"},
				"verbs": []any{"create", "get", "list", "watch", "patch", "delete"}},
			// get: the WebSocket exec is a GET; without it every exec falls back
			// to SPDY after a 403.
			map[string]any{"apiGroups": []any{""}, "resources": []any{"pods/exec"}, "verbs": []any{"get", "create"}},
			map[string]any{"apiGroups": []any{""}, "resources": []any{"pods/log"}, "verbs": []any{"get"}},
		}, get(role, "rules"))
		assert.Equal(t, tc.sandboxNS, str(binding, "metadata", "namespace"))
		assert.Equal(t, map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role.name()},
			get(binding, "roleRef"))
		sa := m["ServiceAccount/sg-sandgate"]
		require.NotNil(t, sa)
		assert.Equal(t, false, get(sa, "automountServiceAccountToken"), "the SA token is mounted only where asked for")
		assert.Equal(t, []any{map[string]any{"kind": "ServiceAccount", "name": sa.name(), "namespace": namespace}},
			get(binding, "subjects"))
		dep := m["Deployment/sg-sandgate"]
		require.NotNil(t, dep)
		assert.Equal(t, sa.name(), str(dep, "spec", "template", "spec", "serviceAccountName"))
		assert.Equal(t, true, get(dep, "spec", "template", "spec", "automountServiceAccountToken"),
			"the executor talks to the API server with its token")
	}
}

// With a gVisor RuntimeClass named, the one cluster-wide right is reading
// that class, bound to the executor's service account.
func TestGVisorRuntimeClassRBAC(t *testing.T) {
	objs, err := render(t, nil, "sandbox.gvisorRuntimeClass=gvisor")
	require.NoError(t, err)
	m := byKind(t, objs)
	role := m["ClusterRole/sg-sandgate-runtimeclass"]
	require.NotNil(t, role)
	assert.Equal(t, []any{map[string]any{"apiGroups": []any{"node.k8s.io"}, "resources": []any{"runtimeclasses"},
		"resourceNames": []any{"gvisor"}, "verbs": []any{"get"}}}, get(role, "rules"))
	binding := m["ClusterRoleBinding/sg-sandgate-runtimeclass"]
	require.NotNil(t, binding)
	assert.Equal(t, []any{map[string]any{"kind": "ServiceAccount", "name": "sg-sandgate", "namespace": namespace}},
		get(binding, "subjects"))
	vars := env(t, m["Deployment/sg-sandgate"])
	assert.Equal(t, "gvisor", vars["SANDGATE_GVISOR_RUNTIME"])
	assert.Equal(t, "runc", vars["SANDGATE_ISOLATION"])
}

func TestExecutorIsContained(t *testing.T) {
	for _, files := range [][]string{nil, {hardenedFile}} {
		objs, err := render(t, files)
		require.NoError(t, err)
		dep := byKind(t, objs)["Deployment/sg-sandgate"]
		require.NotNil(t, dep)
		pod := get(dep, "spec", "template", "spec")
		assert.Equal(t, true, get(pod, "securityContext", "runAsNonRoot"))
		assert.Equal(t, "RuntimeDefault", str(pod, "securityContext", "seccompProfile", "type"))
		assert.Nil(t, get(pod, "hostNetwork"), "host network only when asked for")
		c := get(pod, "containers", 0)
		assert.Equal(t, true, get(c, "securityContext", "readOnlyRootFilesystem"))
		assert.Equal(t, false, get(c, "securityContext", "allowPrivilegeEscalation"))
		assert.Equal(t, []any{"ALL"}, get(c, "securityContext", "capabilities", "drop"))
		assert.Nil(t, get(c, "securityContext", "capabilities", "add"))
		assert.Equal(t, "RuntimeDefault", str(c, "securityContext", "seccompProfile", "type"))
		assert.NotNil(t, get(c, "resources", "limits", "memory"))
		assert.Equal(t, "/readyz", str(c, "readinessProbe", "httpGet", "path"))
		mounts := map[string]bool{}
		for _, v := range get(c, "volumeMounts").([]any) {
			mounts[str(v, "mountPath")] = true
		}
		assert.True(t, mounts["/tmp"] && mounts["/var/lib/sandgate"], "writable dirs of a read-only root: %v", mounts)
	}
}

func TestEnvNamesExistInConfig(t *testing.T) {
	known := knownSettings(t)
	for _, tc := range []struct {
		files []string
		sets  []string
	}{{nil, nil}, {[]string{hardenedFile}, nil}, {nil, []string{"hostNetwork=true", "kubernetesAPI.host=127.0.0.1", "kubernetesAPI.port=16443"}}} {
		objs, err := render(t, tc.files, tc.sets...)
		require.NoError(t, err)
		for name := range env(t, byKind(t, objs)["Deployment/sg-sandgate"]) {
			assert.True(t, known[name], "%s is no setting of the executor's config package", name)
		}
	}
}

func TestDefaultValues(t *testing.T) {
	objs, err := render(t, nil)
	require.NoError(t, err)
	m := byKind(t, objs)
	var kinds []string
	for k := range m {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	assert.Equal(t, []string{"Deployment/sg-sandgate", "Role/sg-sandgate", "RoleBinding/sg-sandgate",
		"Secret/sg-sandgate-api-token", "Secret/sg-sandgate-secret-key", "Service/sg-sandgate",
		"ServiceAccount/sg-sandgate"}, kinds)
	e := env(t, m["Deployment/sg-sandgate"])
	assert.Equal(t, map[string]string{
		"SANDGATE_BACKEND":          "kubernetes",
		"SANDGATE_LISTEN":           ":7070",
		"SANDGATE_API_TOKEN":        "secret:sg-sandgate-api-token/token",
		"SANDGATE_SECRET_KEY":       "secret:sg-sandgate-secret-key/key",
		"SANDGATE_DATABASE_URL":     "sqlite:///var/lib/sandgate/sandgate.db",
		"SANDGATE_IMAGE":            "debian:bookworm",
		"SANDGATE_GATE_IMAGE":       "", // gates off: the executor refuses credentials instead
		"SANDGATE_SHUTDOWN_TIMEOUT": "15s",
		"SANDGATE_K8S_NAMESPACE":    namespace, // sandbox.namespace unset: the release's, where the Role is
		"SANDGATE_CHECKPOINT_DIR":   "/var/lib/sandgate/checkpoints",
		"SANDGATE_ISOLATION":        "runc",
		"SANDGATE_GVISOR_RUNTIME":   "", // gVisor not offered, no cluster-wide right
	}, e)
	tok := m["Secret/sg-sandgate-api-token"]
	assert.Equal(t, "keep", str(tok, "metadata", "annotations", "helm.sh/resource-policy"))
	assert.GreaterOrEqual(t, len(str(tok, "data", "token")), 40, "a long random token")
	svc := m["Service/sg-sandgate"]
	assert.Equal(t, 7070, get(svc, "spec", "ports", 0, "port"))
	assert.Nil(t, get(svc, "spec", "ports", 1), "no gate port when gates are off")
}

func TestHardenedValues(t *testing.T) {
	objs, err := render(t, []string{hardenedFile})
	require.NoError(t, err)
	m := byKind(t, objs)
	for k := range m {
		assert.False(t, strings.HasPrefix(k, "Secret/"), "%s: existing Secrets are used, none is made", k)
	}
	dep := m["Deployment/sg-sandgate"]
	assert.Equal(t, 2, get(dep, "spec", "replicas"))
	assert.Equal(t, "registry-credentials", str(dep, "spec", "template", "spec", "imagePullSecrets", 0, "name"))
	e := env(t, dep)
	for k, v := range map[string]string{
		"SANDGATE_API_TOKEN":              "secret:sandgate-api/token",
		"SANDGATE_DATABASE_URL":           "secret:sandgate-db/url",
		"SANDGATE_SECRET_KEY":             "secret:sandgate-seal/key",
		"SANDGATE_GATE_IMAGE":             "registry.example/sandgate/gate:1.0.0",
		"SANDGATE_CONTROLPLANE_URL":       "http://sandgate.sandgate-system:7071",
		"SANDGATE_GATE_LISTEN":            ":7071",
		"SANDBOX_PIDS_LIMIT":              "256",
		"SANDBOX_CPU_MILLIS":              "1000",
		"SANDBOX_MEMORY_BYTES":            "1073741824",
		"SANDBOX_EPHEMERAL_STORAGE_BYTES": "2147483648",
		"SANDBOX_CAP_DROP":                "ALL",
		"SANDBOX_READONLY_ROOTFS":         "true",
		"SANDBOX_RUN_AS_USER":             "1000",
		// The sandbox namespace, where the Role is — not the release's.
		"SANDGATE_K8S_NAMESPACE":       "sandboxes",
		"SANDGATE_K8S_SECCOMP_PROFILE": "sandgate/sandbox.json",
		"SANDGATE_AGENT_IMAGE":         "registry.example/sandgate/agent:1.0.0",
	} {
		assert.Equal(t, v, e[k], k)
	}
	// The values are what the executor itself accepts.
	_, err = sandbox.HardeningFromEnv(func(k string) string { return e[k] })
	require.NoError(t, err)
	assert.Equal(t, 7071, get(m["Service/sg-sandgate"], "spec", "ports", 1, "port"))
}

func TestTestClusterValues(t *testing.T) {
	objs, err := render(t, nil, "hostNetwork=true", "kubernetesAPI.host=127.0.0.1", "kubernetesAPI.port=16443")
	require.NoError(t, err)
	dep := byKind(t, objs)["Deployment/sg-sandgate"]
	assert.Equal(t, true, get(dep, "spec", "template", "spec", "hostNetwork"))
	assert.Equal(t, "ClusterFirstWithHostNet", str(dep, "spec", "template", "spec", "dnsPolicy"))
	e := env(t, dep)
	assert.Equal(t, "127.0.0.1", e["KUBERNETES_SERVICE_HOST"])
	assert.Equal(t, "16443", e["KUBERNETES_SERVICE_PORT"])
}

// Bad values fail before anything is rendered, naming what is wrong.
func TestBadValuesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"podSecurityContext.runAsNonRoot=false"}, "runAsNonRoot"},
		{[]string{"securityContext.allowPrivilegeEscalation=true"}, "allowPrivilegeEscalation"},
		{[]string{"securityContext.capabilities.add={NET_ADMIN}"}, "add"},
		{[]string{"securityContext.capabilities.drop={NET_RAW}"}, "drop"},
		{[]string{"sandbox.hardening.pidsLimit=many"}, "pidsLimit"},
		{[]string{"sandbox.hardening.runAsUser=-1"}, "runAsUser"},
		{[]string{"sandbox.namespace=Not_A_Namespace"}, "namespace"},
		{[]string{"api.port=70000"}, "port"},
		{[]string{"image.pullPolicy=Sometimes"}, "pullPolicy"},
		{[]string{"gate.controlplaneURL=http://x/path"}, "controlplaneURL"},
		{[]string{"unknownValue=1"}, "unknownValue"},
		{[]string{"gate.enabled=true"}, "gate.controlplaneURL"},
		{[]string{"replicaCount=2"}, "database.existingSecret"},
		{[]string{"kubernetesAPI.host=127.0.0.1"}, "kubernetesAPI.port"},
		{[]string{"gate.port=7070"}, "gate.port"},
		{[]string{"sandbox.seccompProfile=/var/lib/kubelet/seccomp/x.json"}, "seccompProfile"},
		{[]string{"sandbox.seccompProfile=sandgate/../../x.json"}, "seccompProfile"},
	} {
		objs, err := render(t, nil, tc.sets...)
		if assert.Error(t, err, "%v rendered %d objects", tc.sets, len(objs)) {
			assert.Contains(t, err.Error(), tc.want, "%v", tc.sets)
		}
	}
}
