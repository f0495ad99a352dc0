package firewall

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIPv6Enabled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, tt := range map[string]struct {
		content *string
		want    bool
	}{
		"absent": {nil, true},
		"on":     {ptr("0\n"), true},
		"off":    {ptr("1\n"), false},
	} {
		path := filepath.Join(dir, name)
		if tt.content != nil {
			require.NoError(t, os.WriteFile(path, []byte(*tt.content), 0o600))
		}
		got, err := ipv6Enabled(path)
		require.NoError(t, err, name)
		require.Equal(t, tt.want, got, name)
	}
	_, err := ipv6Enabled(dir) // a directory cannot be read as the switch
	require.ErrorContains(t, err, "firewall: read "+dir)
}

func ptr(s string) *string { return &s }

func TestOpen(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		ipv6On  bool
		newErr  map[bool]error // by ipv6
		probe   map[bool]func(string) error
		want6   bool
		wantErr string
	}{
		{name: "ipv6 on", ipv6On: true, want6: true},
		{name: "ipv6 off", ipv6On: false},
		{name: "ipv6 off, no ip6tables", newErr: map[bool]error{true: errFake}},
		{name: "ipv6 on, no ip6tables", ipv6On: true, newErr: map[bool]error{true: errFake},
			wantErr: "firewall: ipv6: find the iptables binary: fake iptables failure (IPv6 is on in this network namespace)"},
		{name: "ipv6 on, ip6tables unusable", ipv6On: true, probe: map[bool]func(string) error{true: func(string) error { return errFake }},
			wantErr: "firewall: ipv6: iptables is not usable: fake iptables failure (IPv6 is on in this network namespace)"},
		{name: "no iptables", newErr: map[bool]error{false: errFake},
			wantErr: "firewall: ipv4: find the iptables binary: fake iptables failure"},
		{name: "iptables unusable", probe: map[bool]func(string) error{false: func(string) error { return errFake }},
			wantErr: "firewall: ipv4: iptables is not usable: fake iptables failure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v4, v6, err := open(func() (bool, error) { return tt.ipv6On, nil }, func(ipv6 bool) (Table, error) {
				if err := tt.newErr[ipv6]; err != nil {
					return nil, err
				}
				f := newFake(map[bool]string{false: "ipv4", true: "ipv6"}[ipv6])
				f.fail = tt.probe[ipv6]
				return f, nil
			})
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				require.ErrorIs(t, err, errFake)
				require.Nil(t, v4)
				require.Nil(t, v6)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "ipv4", v4.(*fakeTable).name)
			if !tt.want6 {
				require.Nil(t, v6)
				return
			}
			require.Equal(t, "ipv6", v6.(*fakeTable).name)
			require.Equal(t, []string{"ChainExists OUTPUT"}, v6.(*fakeTable).calls)
		})
	}
}

func TestOpenNoOutputChain(t *testing.T) {
	t.Parallel()
	_, _, err := open(func() (bool, error) { return false, nil }, func(bool) (Table, error) {
		f := newFake("ipv4")
		delete(f.chains, output)
		return f, nil
	})
	require.EqualError(t, err, "firewall: ipv4: iptables is not usable: the filter table has no OUTPUT chain")
}

func TestOpenSwitchUnreadable(t *testing.T) {
	t.Parallel()
	_, _, err := open(func() (bool, error) { return false, errFake }, func(bool) (Table, error) { return newFake("ipv4"), nil })
	require.ErrorIs(t, err, errFake)
}
