package sandgate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The import rule of ARCHITECTURE.md, enforced from what the go tool itself
// resolves rather than by review:
//
//	core     → the standard library and core only, and no I/O packages
//	ports    → the standard library, core and ports
//	app/agent → the standard library, core and golang.org/x/sys/unix (the
//	           in-sandbox agent's logic: system calls, no port, no adapter)
//	app      → the standard library, core and ports (the application
//	           services sit between the adapters, so they name none):
//	           app/executor, the executor's service, and app/gate, the
//	           gate's run logic, which gets its control-plane client and
//	           proxy as ports)
//	adapters → anything but cmd and another adapter
//	cmd      → anything; cmd/executor is the only place that may import
//	           go.uber.org/fx (cmd/gate wires by hand)
//
// ports/porttest is the conformance suite every adapter runs; it is a test
// library, so it may import testify besides std, core and ports.
// ports/portfake, the in-memory Provider and Service of the unit tests, is
// test support too but asserts nothing, so it keeps the ports rule (no
// testify); and only tests import it, which `go list` (tests excluded)
// shows as no package of the module importing it at all.
const module = "github.com/sandgate/sandgate"

// coreIO are standard packages that do I/O. Core is pure (crypto/rand is
// fine), so it must not import them; net/url and net/netip are pure values
// and stay allowed.
var coreIO = []string{
	"os", "os/exec", "os/signal", "os/user", "io/ioutil", "syscall", "plugin",
	"net", "net/http", "net/rpc", "net/smtp", "log/syslog",
}

// xunix is the one module app/agent imports besides the standard library
// and core: the system calls the agent's process management needs
// (access(2), prctl(2)) that package syscall lacks or has deprecated.
const xunix = "golang.org/x/sys/unix"

// listed is what `go list -json` reports of one package.
type listed struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
}

func TestImportRule(t *testing.T) {
	t.Parallel()
	pkgs := goList(t)
	var core int
	for _, p := range pkgs {
		if layer(p.ImportPath) == "core" {
			core++
		}
	}
	require.NotZero(t, core, "go list found no core package: the rule would hold vacuously")
	require.Empty(t, violations(pkgs), "imports that break the rule of ARCHITECTURE.md")
}

// goList lists every package of the module with all its dependencies, so the
// standard ones are known by the Standard flag rather than by a guess on the
// path.
func goList(t *testing.T) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard,Imports,Deps", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return pkgs
		}
		require.NoError(t, err)
		pkgs = append(pkgs, p)
	}
}

// layer names the architectural layer of an import path: "core", "ports",
// "porttest", "app", "adapters/<name>", "cmd", "module" for other packages
// of this module, or "" for a package outside it.
func layer(path string) string {
	rel, ok := strings.CutPrefix(path, module)
	if !ok || (rel != "" && rel[0] != '/') {
		return ""
	}
	parts := strings.Split(strings.TrimPrefix(rel, "/"), "/")
	switch {
	case parts[0] == "ports" && len(parts) > 1 && parts[1] == "porttest":
		return "porttest"
	case parts[0] == "app" && len(parts) > 1 && parts[1] == "agent":
		return "app/agent"
	case parts[0] == "core", parts[0] == "ports", parts[0] == "cmd", parts[0] == "app":
		return parts[0]
	case parts[0] == "adapters" && len(parts) > 1:
		return "adapters/" + parts[1]
	}
	return "module"
}

// violations returns one line per import that breaks the rule.
func violations(pkgs []listed) []string {
	std := map[string]bool{}
	for _, p := range pkgs {
		if p.Standard {
			std[p.ImportPath] = true
		}
	}
	var out []string
	bad := func(p listed, dep, why string) {
		out = append(out, fmt.Sprintf("%s imports %s: %s", strings.TrimPrefix(p.ImportPath, module+"/"), dep, why))
	}
	for _, p := range pkgs {
		l := layer(p.ImportPath)
		if l == "" {
			continue
		}
		// Every package of the module is checked on its direct imports, so a
		// forbidden edge is reported once, where it is written.
		for _, d := range p.Imports {
			if why := forbidden(l, d, std[d]); why != "" {
				bad(p, d, why)
			}
		}
		// fx is checked on all dependencies: reaching it through a library
		// would wire outside cmd/executor just the same.
		if !isExecutor(p.ImportPath) {
			if i := slices.IndexFunc(p.Deps, isFx); i >= 0 {
				bad(p, p.Deps[i], "only cmd/executor wires with fx")
			}
		}
	}
	return out
}

// forbidden says why a package of layer l may not import d, or "" if it may.
func forbidden(l, d string, std bool) string {
	dl := layer(d)
	switch {
	case l == "core" && slices.Contains(coreIO, d):
		return "core is pure: no I/O"
	case l == "core" && !std && dl != "core":
		return "core imports only the standard library and core"
	case l == "ports" && !std && dl != "core" && dl != "ports":
		return "ports import only the standard library, core and ports"
	case d == portfake:
		return "portfake is test support: only tests import it"
	case l == "porttest" && !std && dl != "core" && dl != "ports" && dl != "porttest" &&
		!strings.HasPrefix(d, "github.com/stretchr/testify/"):
		return "porttest imports only the standard library, core, ports and testify"
	case l == "app" && !std && dl != "core" && dl != "ports" && dl != "app":
		return "app imports only the standard library, core and ports"
	case l == "app/agent" && !std && dl != "core" && dl != "app/agent" && d != xunix:
		return "app/agent imports only the standard library, core and " + xunix
	case strings.HasPrefix(l, "adapters/") && dl == "cmd":
		return "adapters never import cmd"
	case l == "adapters/internal" && strings.HasPrefix(dl, "adapters/") && dl != l:
		return "what adapters share imports no adapter"
	case strings.HasPrefix(l, "adapters/") && strings.HasPrefix(dl, "adapters/") && dl != l && dl != "adapters/internal":
		return "an adapter never imports another adapter"
	}
	return ""
}

// portfake is the import path of the unit tests' fakes.
const portfake = module + "/ports/portfake"

func isExecutor(path string) bool {
	return path == module+"/cmd/executor" || strings.HasPrefix(path, module+"/cmd/executor/")
}

func isFx(path string) bool {
	return path == "go.uber.org/fx" || strings.HasPrefix(path, "go.uber.org/fx/")
}

func TestViolations(t *testing.T) {
	t.Parallel()
	const m = module + "/"
	std := []listed{{ImportPath: "fmt", Standard: true}, {ImportPath: "os", Standard: true}, {ImportPath: "net/url", Standard: true}, {ImportPath: "embed", Standard: true}}
	for _, tc := range []struct {
		name string
		pkg  listed
		want string // "" = no violation
	}{
		{"core on std and core", listed{ImportPath: m + "core/sandbox", Imports: []string{"fmt", "net/url", m + "core/domain"}, Deps: []string{"fmt", "net/url", m + "core/domain"}}, ""},
		{"core on os", listed{ImportPath: m + "core/sandbox", Imports: []string{"os"}}, "core/sandbox imports os: core is pure"},
		{"core on ports", listed{ImportPath: m + "core/sandbox", Imports: []string{m + "ports"}}, "core/sandbox imports " + m + "ports: core imports only"},
		{"core on a third party", listed{ImportPath: m + "core/egress", Imports: []string{"golang.org/x/net/idna"}}, "core/egress imports golang.org/x/net/idna"},
		{"ports on core", listed{ImportPath: m + "ports", Imports: []string{m + "core/sandbox"}, Deps: []string{"fmt", m + "core/sandbox"}}, ""},
		{"an adapter on what adapters share", listed{ImportPath: m + "adapters/docker", Imports: []string{m + "adapters/internal/agentclient"}}, ""},
		{"what adapters share on an adapter", listed{ImportPath: m + "adapters/internal/agentclient", Imports: []string{m + "adapters/docker"}}, "what adapters share imports no adapter"},
		{"ports on an adapter", listed{ImportPath: m + "ports", Imports: []string{m + "adapters/docker"}}, "ports import only"},
		{"ports on an SDK", listed{ImportPath: m + "ports", Imports: []string{"github.com/docker/docker/client"}}, "ports import only"},
		{"porttest on testify", listed{ImportPath: m + "ports/porttest", Imports: []string{"github.com/stretchr/testify/require", m + "ports"}, Deps: []string{"github.com/stretchr/testify/require", "gopkg.in/yaml.v3"}}, ""},
		{"portfake on core and ports", listed{ImportPath: m + "ports/portfake", Imports: []string{"fmt", m + "core/sandbox", m + "core/session", m + "ports"}}, ""},
		{"portfake on testify", listed{ImportPath: m + "ports/portfake", Imports: []string{"github.com/stretchr/testify/require"}}, "ports import only"},
		{"portfake on an adapter", listed{ImportPath: m + "ports/portfake", Imports: []string{m + "adapters/sessionstore"}}, "ports import only"},
		{"app on portfake", listed{ImportPath: m + "app/executor", Imports: []string{m + "ports/portfake"}}, "portfake is test support"},
		{"cmd on portfake", listed{ImportPath: m + "cmd/executor", Imports: []string{m + "ports/portfake"}}, "portfake is test support"},
		{"porttest on an adapter", listed{ImportPath: m + "ports/porttest", Imports: []string{m + "adapters/docker"}}, "porttest imports only"},
		{"app/executor on core and ports", listed{ImportPath: m + "app/executor", Imports: []string{"fmt", m + "core/session", m + "core/sandbox", m + "ports"}}, ""},
		{"app/executor on an adapter", listed{ImportPath: m + "app/executor", Imports: []string{m + "adapters/sessionstore"}}, "app imports only"},
		{"app/executor on cmd", listed{ImportPath: m + "app/executor", Imports: []string{m + "cmd/executor"}}, "app imports only"},
		{"app/executor on an SDK", listed{ImportPath: m + "app/executor", Imports: []string{"github.com/docker/docker/client"}}, "app imports only"},
		{"app/agent on core and x/sys/unix", listed{ImportPath: m + "app/agent", Imports: []string{"fmt", m + "core/agentwire", m + "core/sandbox", xunix}}, ""},
		{"app/agent on ports", listed{ImportPath: m + "app/agent", Imports: []string{m + "ports"}}, "app/agent imports only"},
		{"app/agent on an adapter", listed{ImportPath: m + "app/agent", Imports: []string{m + "adapters/docker"}}, "app/agent imports only"},
		{"app/agent on yamux", listed{ImportPath: m + "app/agent", Imports: []string{"github.com/hashicorp/yamux"}}, "app/agent imports only"},
		{"app/executor on app/agent", listed{ImportPath: m + "app/executor", Imports: []string{m + "app/agent"}}, "app imports only"},
		{"cmd/agent on app/agent and yamux", listed{ImportPath: m + "cmd/agent", Imports: []string{m + "app/agent", "github.com/hashicorp/yamux", xunix}}, ""},
		{"app/gate on core and ports", listed{ImportPath: m + "app/gate", Imports: []string{"fmt", m + "core/gatewire", m + "ports"}}, ""},
		{"app/gate on an adapter", listed{ImportPath: m + "app/gate", Imports: []string{m + "adapters/httpapi"}}, "app/gate imports " + m + "adapters/httpapi: app imports only"},
		{"app/gate on cmd", listed{ImportPath: m + "app/gate", Imports: []string{m + "cmd/gate"}}, "app imports only"},
		{"app/gate on an SDK", listed{ImportPath: m + "app/gate", Imports: []string{"go.opentelemetry.io/otel/trace"}}, "app imports only"},
		{"gatewire on std and core", listed{ImportPath: m + "core/gatewire", Imports: []string{"fmt", "net/url", m + "core/domain", m + "core/strictjson"}}, ""},
		{"gatewire on os", listed{ImportPath: m + "core/gatewire", Imports: []string{"os"}}, "core/gatewire imports os: core is pure"},
		{"gatewire on an adapter", listed{ImportPath: m + "core/gatewire", Imports: []string{m + "adapters/httpapi"}}, "core imports only"},
		{"sandbox on gatewire", listed{ImportPath: m + "core/sandbox", Imports: []string{m + "core/gatewire"}}, ""},
		{"shell on embed", listed{ImportPath: m + "core/sandbox/shell", Imports: []string{"embed", "fmt"}}, ""},
		{"shell on os", listed{ImportPath: m + "core/sandbox/shell", Imports: []string{"os"}}, "core/sandbox/shell imports os: core is pure"},
		{"sandbox on shell", listed{ImportPath: m + "core/sandbox", Imports: []string{m + "core/sandbox/shell"}}, ""},
		{"adapter on ports, core and its SDK", listed{ImportPath: m + "adapters/docker", Imports: []string{m + "ports", m + "core/sandbox", "github.com/docker/docker/client", m + "adapters/docker/dockertest"}}, ""},
		{"adapter on another adapter", listed{ImportPath: m + "adapters/docker", Imports: []string{m + "adapters/kubernetes"}}, "an adapter never imports another adapter"},
		{"adapter on cmd", listed{ImportPath: m + "adapters/httpapi", Imports: []string{m + "cmd/executor/wire"}}, "adapters never import cmd"},
		{"adapter on fx", listed{ImportPath: m + "adapters/telemetry", Deps: []string{"go.uber.org/fx"}}, "only cmd/executor wires with fx"},
		{"adapter on fx, indirectly", listed{ImportPath: m + "adapters/telemetry", Deps: []string{"go.uber.org/dig", "go.uber.org/fx/fxevent", "go.uber.org/fx"}}, "only cmd/executor wires with fx"},
		{"cmd/executor on fx", listed{ImportPath: m + "cmd/executor", Deps: []string{"go.uber.org/fx"}}, ""},
		{"cmd/executor subpackage on fx", listed{ImportPath: m + "cmd/executor/wire", Deps: []string{"go.uber.org/fx"}}, ""},
		{"cmd/gate on fx", listed{ImportPath: m + "cmd/gate", Deps: []string{"go.uber.org/fx"}}, "only cmd/executor wires with fx"},
		{"cmd/executorx on fx", listed{ImportPath: m + "cmd/executorx", Deps: []string{"go.uber.org/fx"}}, "only cmd/executor wires with fx"},
		{"outside the module", listed{ImportPath: "github.com/other/core", Deps: []string{"go.uber.org/fx"}}, ""},
		{"lookalike module path", listed{ImportPath: module + "x/core", Deps: []string{"go.uber.org/fx"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := violations(append(slices.Clone(std), tc.pkg))
			if tc.want == "" {
				require.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			require.Contains(t, got[0], tc.want)
		})
	}
}
