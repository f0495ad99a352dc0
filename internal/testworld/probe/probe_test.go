package main

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDNSRoundTrip(t *testing.T) {
	t.Parallel()
	q, err := dnsQuery(7, "origin.test.")
	require.NoError(t, err)
	_, name, err := dnsQuestion(q)
	require.NoError(t, err)
	require.Equal(t, "origin.test", name)
	resp, err := dnsAnswer(q, netip.MustParseAddr("10.1.2.3"))
	require.NoError(t, err)
	ip, err := dnsAnswerA(resp, 7)
	require.NoError(t, err)
	require.Equal(t, netip.MustParseAddr("10.1.2.3"), ip)
	_, err = dnsAnswerA(resp, 8)
	require.ErrorContains(t, err, "another query")
}

func TestDNSRefusesMalformed(t *testing.T) {
	t.Parallel()
	for _, msg := range [][]byte{nil, make([]byte, 11), append(make([]byte, 12), 5, 'a'), {0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 64}} {
		_, _, err := dnsQuestion(msg)
		require.ErrorIs(t, err, errShort, "%x", msg)
		_, err = dnsAnswer(msg, netip.MustParseAddr("10.0.0.1"))
		require.Error(t, err)
	}
	_, err := dnsQuery(1, "a..b")
	require.ErrorContains(t, err, "bad name")
}

func TestRunUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"nope"}, {"tcp"}, {"dns", "icmp", "x", "y"}, {"setuid", "x"}} {
		require.Equal(t, 2, run(args), "%q", args)
	}
}
