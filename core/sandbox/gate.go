package sandbox

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
)

// GateSandboxEnv returns what a gated sandbox's environment adds to the
// caller's Env (C-GATE-1, B-1): the proxy variables in both cases pointing at
// the gate, NO_PROXY forced empty so no host bypasses it, Node's opt-in to
// the proxy variables, and every common CA variable naming the files under
// gatewire.SandboxCADir. The names are reserved (ReservedEnvName), so a caller cannot
// have set the proxy ones; these win over the caller's for the others.
func GateSandboxEnv() map[string]string {
	return map[string]string{
		"HTTP_PROXY":          gatewire.ProxyURL,
		"HTTPS_PROXY":         gatewire.ProxyURL,
		"http_proxy":          gatewire.ProxyURL,
		"https_proxy":         gatewire.ProxyURL,
		"NO_PROXY":            "",
		"no_proxy":            "",
		"NODE_USE_ENV_PROXY":  "1",
		"SSL_CERT_FILE":       gatewire.SandboxCABundle,
		"REQUESTS_CA_BUNDLE":  gatewire.SandboxCABundle,
		"CURL_CA_BUNDLE":      gatewire.SandboxCABundle,
		"GIT_SSL_CAINFO":      gatewire.SandboxCABundle,
		"NODE_EXTRA_CA_CERTS": gatewire.SandboxCACert,
	}
}

// Env is the environment of the session's gate (C-GATE-1, gatewire.Env):
// whose gate it is, where its config comes from, the token that
// authenticates it, the defaults of CONTRACT §0 (the gate uid it drops to
// and admits, its proxy address and CA file) and the deployment's collector
// when one is configured. Its Environ holds the token: callers must not log
// it.
func (g GateSpec) Env(sid domain.ID, token string) gatewire.Env {
	e := gatewire.NewEnv(sid, g.ControlplaneURL, token)
	e.OTelEndpoint, e.OTelInsecure = g.OTelEndpoint, g.OTelInsecure
	return e
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
var ErrGateUIDImage = fmt.Errorf("image runs as the gate uid %d", gatewire.UID)

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
	if uid == gatewire.UID {
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
