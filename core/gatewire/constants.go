package gatewire

// Fixed names of CONTRACT §0 that the provider, the control plane and the gate
// binary must agree on.
const (
	// UID is the uid (and gid) the gate drops to and the firewall admits.
	// Deliberately not 65532, which distroless "nonroot" images use as their
	// USER: a sandbox running as the gate uid would leave unfiltered.
	UID = 64250
	// ProxyAddr is the gate's proxy on the shared loopback.
	ProxyAddr = "127.0.0.1:15080"
	// ProxyURL is what the sandbox's proxy variables point at.
	ProxyURL = "http://" + ProxyAddr
	// Chain is the gate's own iptables chain in both families.
	Chain = "SANDGATE-EGRESS"
	// TokenPrefix starts every gate token.
	TokenPrefix = "sgt_"
	// PlaceholderPrefix starts every credential placeholder.
	PlaceholderPrefix = "sgph_"
	// ConfigPath is the gate config endpoint's path under the control plane
	// URL.
	ConfigPath = "/internal/v1/gate/config"
	// ReportPath is the gate verdict report endpoint's path under the control
	// plane URL.
	ReportPath = "/internal/v1/gate/report"
)

// Where the gate's interception CA travels (B-1). The gate writes its CA
// certificate to CAFile once its first config is in force; the provider
// copies it into the sandbox under SandboxCADir, next to a bundle that
// appends it to the image's own system bundle, before the sandbox starts.
const (
	// CAFile is where the gate writes its CA certificate (PEM).
	CAFile = "/run/sandgate/ca.pem"
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
