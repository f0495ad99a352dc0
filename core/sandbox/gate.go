package sandbox

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Where the gate's interception CA travels (B-1). The gate writes its CA
// certificate to GateCAFile once its first config is in force; the provider
// copies it into the sandbox under SandboxCADir, next to a bundle that
// appends it to the image's own system bundle, before the sandbox starts.
const (
	// GateCAFile is where the gate writes its CA certificate (PEM).
	GateCAFile = "/run/sandgate/ca.pem"
	// SandboxCADir holds the CA files inside a gated sandbox.
	SandboxCADir = "/etc/sandgate"
	// SandboxCACert is the session CA alone (NODE_EXTRA_CA_CERTS adds it to
	// Node's built-in roots).
	SandboxCACert = SandboxCADir + "/ca.pem"
	// SandboxCABundle is the image's system bundle with the session CA
	// appended: what OpenSSL, Python, curl and git are pointed at.
	SandboxCABundle = SandboxCADir + "/ca-bundle.pem"
	// SystemCABundle is where Debian-family images keep their roots; an image
	// without it gets a bundle holding the session CA alone.
	SystemCABundle = "/etc/ssl/certs/ca-certificates.crt"
)

// GateSandboxEnv returns what a gated sandbox's environment adds to the
// caller's Env (C-GATE-1, B-1): the proxy variables in both cases pointing at
// the gate, NO_PROXY forced empty so no host bypasses it, Node's opt-in to
// the proxy variables, and every common CA variable naming the files under
// SandboxCADir. The names are reserved (ReservedEnvName), so a caller cannot
// have set the proxy ones; these win over the caller's for the others.
func GateSandboxEnv() map[string]string {
	return map[string]string{
		"HTTP_PROXY":          GateProxyURL,
		"HTTPS_PROXY":         GateProxyURL,
		"http_proxy":          GateProxyURL,
		"https_proxy":         GateProxyURL,
		"NO_PROXY":            "",
		"no_proxy":            "",
		"NODE_USE_ENV_PROXY":  "1",
		"SSL_CERT_FILE":       SandboxCABundle,
		"REQUESTS_CA_BUNDLE":  SandboxCABundle,
		"CURL_CA_BUNDLE":      SandboxCABundle,
		"GIT_SSL_CAINFO":      SandboxCABundle,
		"NODE_EXTRA_CA_CERTS": SandboxCACert,
	}
}

// GateContainerEnv is the gate's own environment (C-GATE-1): whose gate it
// is, where its config comes from, the token that authenticates it, the uid
// it drops to and admits, and the deployment's collector when one is
// configured. The token is the only secret here; callers must not log the
// result.
func GateContainerEnv(sid string, g GateSpec, token string) []string {
	uid := strconv.Itoa(DefaultGateUID)
	env := []string{
		"GATE_SESSION_ID=" + sid,
		"CONTROLPLANE_URL=" + g.ControlplaneURL,
		"GATE_TOKEN=" + token,
		"GATE_UID=" + uid,
		"GATE_GID=" + uid,
		"GATE_ADDR=" + GateProxyAddr,
		"GATE_CA_FILE=" + GateCAFile,
	}
	if g.OTelEndpoint != "" {
		env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+g.OTelEndpoint)
		if g.OTelInsecure {
			env = append(env, "OTEL_EXPORTER_OTLP_INSECURE=true")
		}
	}
	return env
}

// CABundle appends the session CA to an image's system bundle (which may be
// empty), making sure the CA starts on a line of its own.
func CABundle(system, ca []byte) []byte {
	out := bytes.Clone(system)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, ca...)
}

// ErrGateUIDImage refuses a gated sandbox whose image runs as the gate uid
// (B-2): its tools would match the firewall's owner rule and leave
// unfiltered.
var ErrGateUIDImage = fmt.Errorf("image runs as the gate uid %d", DefaultGateUID)

// CheckImageUser applies B-2 to an image's configured USER ("uid",
// "uid:gid", "name" or "name:group"). passwd is the image's /etc/passwd when
// the user is a name (nil when it could not be read: a name that cannot be
// resolved cannot be the gate uid here, and the runtime refuses to start an
// unknown user anyway). A RunAsUser in the spec overrides the image's user
// and is checked by Hardening.Validate instead.
func CheckImageUser(user string, passwd []byte) error {
	name, _, _ := strings.Cut(user, ":")
	if name == "" {
		return nil
	}
	uid, err := strconv.ParseUint(name, 10, 32)
	if err != nil {
		uid, err = passwdUID(passwd, name)
		if err != nil {
			return nil
		}
	}
	if uid == DefaultGateUID {
		return fmt.Errorf("image user %q: %w", user, ErrGateUIDImage)
	}
	return nil
}

// ImageUserIsName reports whether an image's USER names its user rather than
// giving a number, so that CheckImageUser needs the image's /etc/passwd.
func ImageUserIsName(user string) bool {
	name, _, _ := strings.Cut(user, ":")
	_, err := strconv.ParseUint(name, 10, 32)
	return name != "" && err != nil
}

// passwdUID looks a user name up in passwd(5) text.
func passwdUID(passwd []byte, name string) (uint64, error) {
	for _, line := range strings.Split(string(passwd), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 3 && f[0] == name {
			return strconv.ParseUint(f[2], 10, 32)
		}
	}
	return 0, fmt.Errorf("user %q not in passwd", name)
}
