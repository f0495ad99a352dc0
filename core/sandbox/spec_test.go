package sandbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
)

func validSpec() Spec {
	return Spec{SessionID: domain.MustParseSessionID("ses_abc"), Image: "debian:bookworm"}
}

func TestResolveSpecDefaults(t *testing.T) {
	t.Parallel()
	s, err := ResolveSpec(validSpec())
	require.NoError(t, err)
	require.Equal(t, DefaultWorkdir, s.Workdir)
	require.Equal(t, domain.NetUnrestricted, s.Networking.Type)
	require.Equal(t, IsolationRunc, s.Isolation)

	in := validSpec()
	in.Workdir = "/srv/app"
	in.Networking = domain.Networking{Type: domain.NetLimited}
	in.Env = map[string]string{"PATH": "/x", "TOKEN": "sgph_1 $x"}
	in.Hardening = Hardening{RunAsUser: i64(1000), CapDrop: []string{"ALL"}}
	in.Gate = &GateSpec{Image: "sandgate-gate:dev", ControlplaneURL: "http://127.0.0.1:7070"}
	in.Isolation = IsolationGVisor
	s, err = ResolveSpec(in)
	require.NoError(t, err)
	require.Equal(t, in, s)
}

func TestResolveSpecRejects(t *testing.T) {
	t.Parallel()
	gate := func(g GateSpec) func(*Spec) { return func(s *Spec) { s.Gate = &g } }
	okGate := GateSpec{Image: "g:1", ControlplaneURL: "http://127.0.0.1:7070"}
	for _, tc := range []struct {
		name string
		mut  func(*Spec)
		want string
	}{
		{"zero session", func(s *Spec) { s.SessionID = domain.ID{} }, "session_id"},
		{"empty image", func(s *Spec) { s.Image = "" }, "image: must not be empty"},
		{"unknown isolation", func(s *Spec) { s.Isolation = "kata" }, `isolation "kata": want "runc" or "gvisor"`},
		{"image with space", func(s *Spec) { s.Image = "a b" }, "image"},
		{"image with newline", func(s *Spec) { s.Image = "a\nb" }, "image"},
		{"huge image", func(s *Spec) { s.Image = strings.Repeat("a", 600) }, "image"},
		{"relative workdir", func(s *Spec) { s.Workdir = "work" }, "absolute"},
		{"unclean workdir", func(s *Spec) { s.Workdir = "/a/../b" }, "clean"},
		{"trailing slash", func(s *Spec) { s.Workdir = "/a/" }, "clean"},
		{"root workdir", func(s *Spec) { s.Workdir = "/" }, "root"},
		{"proc workdir", func(s *Spec) { s.Workdir = "/proc/self" }, "/proc"},
		{"dev workdir", func(s *Spec) { s.Workdir = "/dev" }, "/dev"},
		{"control char workdir", func(s *Spec) { s.Workdir = "/a\nb" }, "control"},
		{"long workdir", func(s *Spec) { s.Workdir = "/" + strings.Repeat("a", 1100) }, "1024"},
		{"bad env key", func(s *Spec) { s.Env = map[string]string{"A=B": "x"} }, `"A=B"`},
		{"NUL env value", func(s *Spec) { s.Env = map[string]string{"A": "x\x00y"} }, "NUL"},
		{"bad networking", func(s *Spec) { s.Networking.Type = "wide" }, "networking.type"},
		{"bad hardening", func(s *Spec) { s.Hardening.PidsLimit = -1 }, "pids_limit"},
		{"gated gate uid", func(s *Spec) { s.Hardening.RunAsUser = i64(gatewire.UID); s.Gate = &okGate }, "gate's uid"},
		{"gate no image", gate(GateSpec{ControlplaneURL: "http://x"}), "gate.image"},
		{"gate bad url", gate(GateSpec{Image: "g", ControlplaneURL: "ftp://x"}), "controlplane_url"},
		{"gate relative url", gate(GateSpec{Image: "g", ControlplaneURL: "/internal"}), "controlplane_url"},
	} {
		s := validSpec()
		tc.mut(&s)
		_, err := ResolveSpec(s)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
}

func TestDecideAdoption(t *testing.T) {
	t.Parallel()
	ungated, err := ResolveSpec(validSpec())
	require.NoError(t, err)
	limited := ungated
	limited.Networking = domain.Networking{Type: domain.NetLimited}
	gated := ungated
	gated.Gate = &GateSpec{Image: "g", ControlplaneURL: "http://x"}
	gvisor := ungated
	gvisor.Isolation = IsolationGVisor

	same := Observed{Image: ungated.Image, Workdir: DefaultWorkdir, Net: NetShapeOpen}
	for _, tc := range []struct {
		name string
		want Spec
		got  Observed
		exp  Adoption
		err  string
	}{
		{"ungated match", ungated, same, Adoption{Action: Adopt}, ""},
		{"limited match", limited, Observed{Image: ungated.Image, Workdir: DefaultWorkdir, Net: NetShapeNone}, Adoption{Action: Adopt}, ""},
		{"image differs", ungated, Observed{Image: "debian:bookworm-slim", Workdir: DefaultWorkdir, Net: NetShapeOpen}, Adoption{}, "image"},
		{"workdir differs", ungated, Observed{Image: ungated.Image, Workdir: "/srv", Net: NetShapeOpen}, Adoption{}, "workdir"},
		{"network differs", limited, same, Adoption{}, "network"},
		{"isolation differs", ungated, Observed{Image: ungated.Image, Workdir: DefaultWorkdir, Net: NetShapeOpen, Isolation: IsolationGVisor}, Adoption{}, "isolation"},
		{"gvisor wanted, runc found", gvisor, same, Adoption{}, `isolation is "runc", requested "gvisor"`},
		{"gvisor match", gvisor, Observed{Image: ungated.Image, Workdir: DefaultWorkdir, Net: NetShapeOpen, Isolation: IsolationGVisor}, Adoption{Action: Adopt}, ""},
		{"image checked before reshape", gated, Observed{Image: "other", Workdir: DefaultWorkdir, Net: NetShapeOpen}, Adoption{}, "image"},
		{"gated to ungated", ungated, Observed{Image: ungated.Image, Workdir: DefaultWorkdir, Gated: true, PairedGate: "g1", CurrentGate: "g1"},
			Adoption{Action: Rebuild, Reason: "gated sandbox requested without a gate", RevokeToken: true}, ""},
		{"ungated to gated", gated, same, Adoption{Action: Rebuild, Reason: "ungated sandbox requested with a gate"}, ""},
		{"gated match, net ignored", gated, Observed{Image: ungated.Image, Workdir: DefaultWorkdir, Net: NetShapeNone, Gated: true, PairedGate: "g1", CurrentGate: "g1"},
			Adoption{Action: Adopt}, ""},
		{"stale gate", gated, Observed{Image: ungated.Image, Workdir: DefaultWorkdir, Gated: true, PairedGate: "g0", CurrentGate: "g1"},
			Adoption{Action: Rebuild, Reason: "sandbox is paired with a gate that no longer exists"}, ""},
		{"gate gone", gated, Observed{Image: ungated.Image, Workdir: DefaultWorkdir, Gated: true, PairedGate: "g0"},
			Adoption{Action: Rebuild, Reason: "sandbox is paired with a gate that no longer exists"}, ""},
	} {
		a, err := DecideAdoption(tc.want, tc.got)
		if tc.err != "" {
			require.ErrorIs(t, err, ErrSpecMismatch, tc.name)
			require.ErrorContains(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.exp, a, tc.name)
	}
}
