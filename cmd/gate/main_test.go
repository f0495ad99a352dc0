package main

import (
	"bytes"
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/gatewire"
)

func TestRealMain(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())
	for _, tc := range []struct {
		name           string
		args           []string
		env            map[string]string
		code           int
		stdout, stderr string
	}{
		{"version", []string{"version"}, nil, 0, "gate dev\n", ""},
		{"-version", []string{"-version"}, nil, 0, "gate dev\n", ""},
		{"unknown argument", []string{"serve"}, nil, 2, "", "usage: gate version"},
		// The environment is validated before anything happens: nothing
		// is installed, nothing listens.
		{"no environment", nil, nil, 1, "", `"msg":"gate: invalid environment"`},
		{"bad uid", nil, map[string]string{"CONTROLPLANE_URL": "http://cp", "GATE_TOKEN": testToken, "GATE_SESSION_ID": testSID.String(), "GATE_UID": "0"}, 1, "", "GATE_UID: "},
		{"firewall with a bad uid installs nothing", []string{"-firewall"}, map[string]string{"GATE_UID": "0"}, 1, "", "GATE_UID: "},
		{"healthcheck of a dead gate", []string{"-healthcheck"}, map[string]string{"GATE_ADDR": dead}, 1, "", "gate unhealthy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := realMain(tc.args, getenv(tc.env), &stdout, &stderr)
			require.Equal(t, tc.code, code, "stderr: %s", stderr.String())
			require.Equal(t, tc.stdout, stdout.String())
			if tc.stderr == "" {
				require.Empty(t, stderr.String())
			} else {
				require.Contains(t, stderr.String(), tc.stderr)
			}
			require.NotContains(t, stderr.String(), testToken)
		})
	}
}

// TestFirewallOnly: `gate -firewall` installs for GATE_UID (the default
// gate uid when unset) and reports a failed install with exit 1.
func TestFirewallOnly(t *testing.T) {
	t.Parallel()
	var got []uint32
	install := func(uid uint32) error { got = append(got, uid); return nil }
	var stderr bytes.Buffer
	require.Equal(t, 0, firewallOnly(getenv(map[string]string{"GATE_UID": "64250"}), install, &stderr))
	require.Equal(t, 0, firewallOnly(getenv(nil), install, &stderr))
	require.Equal(t, []uint32{64250, gatewire.UID}, got)
	require.Contains(t, stderr.String(), "firewall installed and verified")

	stderr.Reset()
	failing := func(uint32) error { return errors.New("xt_owner missing") }
	require.Equal(t, 1, firewallOnly(getenv(nil), failing, &stderr))
	require.Contains(t, stderr.String(), "xt_owner missing")
}
