package firewall

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const uid = 64250

// The exact listings for uid 64250, written out by hand: they are the
// contract, not a copy of chainRules.
var (
	wantV4 = []string{
		"-N SANDGATE-EGRESS",
		"-A SANDGATE-EGRESS -m owner --uid-owner 64250 -j ACCEPT",
		"-A SANDGATE-EGRESS -d 127.0.0.11/32 -j REJECT --reject-with icmp-port-unreachable",
		"-A SANDGATE-EGRESS -o lo -p udp -m udp --dport 53 -j REJECT --reject-with icmp-port-unreachable",
		"-A SANDGATE-EGRESS -o lo -p tcp -m tcp --dport 53 -j REJECT --reject-with tcp-reset",
		"-A SANDGATE-EGRESS -o lo -j ACCEPT",
		"-A SANDGATE-EGRESS -p tcp -j REJECT --reject-with tcp-reset",
		"-A SANDGATE-EGRESS -j REJECT --reject-with icmp-port-unreachable",
	}
	wantV6 = []string{
		"-N SANDGATE-EGRESS",
		"-A SANDGATE-EGRESS -m owner --uid-owner 64250 -j ACCEPT",
		"-A SANDGATE-EGRESS -p ipv6-icmp -m icmp6 --icmpv6-type 135 -m owner ! --uid-owner 0-4294967294 -j ACCEPT",
		"-A SANDGATE-EGRESS -p ipv6-icmp -m icmp6 --icmpv6-type 136 -m owner ! --uid-owner 0-4294967294 -j ACCEPT",
		"-A SANDGATE-EGRESS -o lo -p udp -m udp --dport 53 -j REJECT --reject-with icmp6-port-unreachable",
		"-A SANDGATE-EGRESS -o lo -p tcp -m tcp --dport 53 -j REJECT --reject-with tcp-reset",
		"-A SANDGATE-EGRESS -o lo -j ACCEPT",
		"-A SANDGATE-EGRESS -p tcp -j REJECT --reject-with tcp-reset",
		"-A SANDGATE-EGRESS -j REJECT --reject-with icmp6-port-unreachable",
	}
)

func list(t *testing.T, f *fakeTable, chain string) []string {
	t.Helper()
	got, err := f.List(filter, chain)
	require.NoError(t, err)
	return got
}

// failClosed checks, after every change the firewall makes, that OUTPUT never
// jumps into a partial chain: whenever a jump exists, the own chain is either
// complete or starts with the catch-all guard. Once a jump exists it must
// never disappear again.
func failClosed(t *testing.T, want []string) func(*fakeTable) {
	t.Helper()
	hadJump := false
	return func(f *fakeTable) {
		out := f.chains[output]
		jumps := slices.ContainsFunc(out, func(r []string) bool { return jumpsToChain("-A OUTPUT " + strings.Join(r, " ")) })
		if hadJump {
			require.True(t, jumps, "%s: the jump to %s disappeared", f.name, Chain)
		}
		hadJump = hadJump || jumps
		if !jumps {
			return
		}
		rules := f.chains[Chain]
		guarded := len(rules) > 0 && slices.Equal(rules[0], []string{"-j", "REJECT"})
		complete := slices.Equal(f.listing(), want)
		require.True(t, guarded || complete, "%s: OUTPUT jumps into a partial chain: %q", f.name, f.listing())
	}
}

func (f *fakeTable) listing() []string {
	out := []string{"-N " + Chain}
	for _, r := range f.chains[Chain] {
		out = append(out, "-A "+Chain+" "+strings.Join(r, " "))
	}
	return out
}

func fakes(t *testing.T) (v4, v6 *fakeTable) {
	t.Helper()
	v4, v6 = newFake("ipv4"), newFake("ipv6")
	v4.after, v6.after = failClosed(t, wantV4), failClosed(t, wantV6)
	return v4, v6
}

func TestInstallFresh(t *testing.T) {
	t.Parallel()
	v4, v6 := fakes(t)
	v4.set(output, "-o eth0 -j ACCEPT")
	require.NoError(t, Install(Rules{GateUID: uid}, v4, v6))
	require.Equal(t, wantV4, list(t, v4, Chain))
	require.Equal(t, wantV6, list(t, v6, Chain))
	require.Equal(t, []string{"-P OUTPUT ACCEPT", "-A OUTPUT -j SANDGATE-EGRESS", "-A OUTPUT -o eth0 -j ACCEPT"}, list(t, v4, output))
	require.Equal(t, []string{"-P OUTPUT ACCEPT", "-A OUTPUT -j SANDGATE-EGRESS"}, list(t, v6, output))
	// The chain is filled before the jump, and the jump is the last change.
	muts := v4.mutations()
	require.Equal(t, "NewChain SANDGATE-EGRESS", muts[0])
	require.Equal(t, "Insert OUTPUT 1 -j SANDGATE-EGRESS", muts[len(muts)-1])
	require.Len(t, muts, len(wantV4)+1)
}

func TestInstallWithoutIPv6(t *testing.T) {
	t.Parallel()
	v4, _ := fakes(t)
	require.NoError(t, Install(Rules{GateUID: uid}, v4, nil))
	require.Equal(t, wantV4, list(t, v4, Chain))
}

func TestInstallRerunIsNoop(t *testing.T) {
	t.Parallel()
	v4, v6 := fakes(t)
	require.NoError(t, Install(Rules{GateUID: uid}, v4, v6))
	v4.calls, v6.calls = nil, nil
	require.NoError(t, Install(Rules{GateUID: uid}, v4, v6))
	require.Empty(t, v4.mutations())
	require.Empty(t, v6.mutations())
	require.NotEmpty(t, v4.calls)
}

func TestInstallReconcilesOutput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		output []string
		want   []string
	}{
		{"duplicate jump", []string{"-j SANDGATE-EGRESS", "-o eth0 -j ACCEPT", "-j SANDGATE-EGRESS"},
			[]string{"-j SANDGATE-EGRESS", "-o eth0 -j ACCEPT"}},
		{"foreign rule above the jump", []string{"-j ACCEPT", "-j SANDGATE-EGRESS"},
			[]string{"-j SANDGATE-EGRESS", "-j ACCEPT"}},
		{"foreign rule above duplicates", []string{"-j ACCEPT", "-j SANDGATE-EGRESS", "-d 10.0.0.1/32 -j DROP", "-j SANDGATE-EGRESS"},
			[]string{"-j SANDGATE-EGRESS", "-j ACCEPT", "-d 10.0.0.1/32 -j DROP"}},
		{"conditional and goto jumps", []string{"-j SANDGATE-EGRESS", "-o eth0 -j SANDGATE-EGRESS", "-g SANDGATE-EGRESS"},
			[]string{"-j SANDGATE-EGRESS"}},
		{"no jump, foreign rules", []string{"-j ACCEPT"},
			[]string{"-j SANDGATE-EGRESS", "-j ACCEPT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v4, _ := fakes(t)
			v4.set(Chain, wantV4[1:]...)
			for i := range v4.chains[Chain] {
				v4.chains[Chain][i] = v4.chains[Chain][i][2:] // drop "-A SANDGATE-EGRESS"
			}
			v4.set(output, tt.output...)
			require.NoError(t, Install(Rules{GateUID: uid}, v4, nil))
			want := []string{"-P OUTPUT ACCEPT"}
			for _, l := range tt.want {
				want = append(want, "-A OUTPUT "+l)
			}
			require.Equal(t, want, list(t, v4, output))
			require.Equal(t, wantV4, list(t, v4, Chain))
		})
	}
}

// rulesOf turns listing lines into the rule specs set() takes.
func rulesOf(lines []string) []string {
	var out []string
	for _, l := range lines[1:] {
		out = append(out, strings.TrimPrefix(l, "-A "+Chain+" "))
	}
	return out
}

func TestInstallRewritesWrongChain(t *testing.T) {
	t.Parallel()
	good := rulesOf(wantV4)
	tests := []struct {
		name  string
		rules []string
	}{
		{"empty", nil},
		{"other uid", append([]string{"-m owner --uid-owner 1000 -j ACCEPT"}, good[1:]...)},
		{"missing resolver reject", append(slices.Clone(good[:1]), good[2:]...)},
		{"extra accept at the end", append(slices.Clone(good), "-j ACCEPT")},
		{"reordered", append([]string{good[4]}, append(slices.Clone(good[:4]), good[5:]...)...)},
		{"leftover guard", append([]string{"-j REJECT"}, good...)},
		{"only the guard", []string{"-j REJECT"}},
	}
	for _, tt := range tests {
		for _, jumped := range []bool{false, true} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				v4, _ := fakes(t)
				v4.set(Chain, tt.rules...)
				if jumped {
					v4.set(output, "-j SANDGATE-EGRESS")
				}
				require.NoError(t, Install(Rules{GateUID: uid}, v4, nil))
				require.Equal(t, wantV4, list(t, v4, Chain))
				require.Equal(t, []string{"-P OUTPUT ACCEPT", "-A OUTPUT -j SANDGATE-EGRESS"}, list(t, v4, output))
				require.Equal(t, "Insert SANDGATE-EGRESS 1 -j REJECT", v4.mutations()[0])
			})
		}
	}
}

// TestInstallFailures fails each call of an install in turn and checks that
// the error names the family and wraps the cause, and (through failClosed)
// that no failure leaves OUTPUT jumping into a partial chain.
func TestInstallFailures(t *testing.T) {
	t.Parallel()
	starts := map[string]func(v4, v6 *fakeTable){
		"fresh": func(_, _ *fakeTable) {},
		"rewrite": func(v4, v6 *fakeTable) {
			for _, f := range []*fakeTable{v4, v6} {
				f.set(Chain, "-j ACCEPT")
				f.set(output, "-j ACCEPT", "-j SANDGATE-EGRESS", "-j SANDGATE-EGRESS")
			}
		},
	}
	for name, start := range starts {
		// A clean run first, to count the calls of each family.
		v4, v6 := fakes(t)
		start(v4, v6)
		require.NoError(t, Install(Rules{GateUID: uid}, v4, v6))
		counts := map[string]int{"ipv4": len(v4.calls), "ipv6": len(v6.calls)}
		for fam, n := range counts {
			for i := range n {
				t.Run(name+"/"+fam+"/"+v4.callName(fam, v6, i), func(t *testing.T) {
					t.Parallel()
					v4, v6 := fakes(t)
					start(v4, v6)
					failing := map[string]*fakeTable{"ipv4": v4, "ipv6": v6}[fam]
					calls := 0
					failing.fail = func(string) error {
						calls++
						if calls == i+1 {
							return errFake
						}
						return nil
					}
					err := Install(Rules{GateUID: uid}, v4, v6)
					require.ErrorIs(t, err, errFake)
					require.Contains(t, err.Error(), "firewall: "+fam+": ")
				})
			}
		}
	}
}

// callName names the i-th call of a family's clean run, for subtest names.
func (f *fakeTable) callName(fam string, v6 *fakeTable, i int) string {
	calls := f.calls
	if fam == "ipv6" {
		calls = v6.calls
	}
	return fmt.Sprintf("%s#%02d", strings.Fields(calls[i])[0], i)
}

func TestInstallMissingOwnerMatch(t *testing.T) {
	t.Parallel()
	v4, _ := fakes(t)
	v4.fail = func(call string) error {
		if strings.Contains(call, "--uid-owner") {
			return errFake
		}
		return nil
	}
	err := Install(Rules{GateUID: uid}, v4, nil)
	require.ErrorIs(t, err, errFake)
	require.Contains(t, err.Error(), "firewall: ipv4: ")
	require.Contains(t, err.Error(), "xt_owner")
	require.Equal(t, []string{"-P OUTPUT ACCEPT"}, list(t, v4, output), "no jump into the empty chain")
}

func TestInvalidInputRefusedBeforeAnyCall(t *testing.T) {
	t.Parallel()
	for _, id := range []uint32{0, math.MaxInt32 + 1, math.MaxUint32} {
		v4, v6 := fakes(t)
		err := Install(Rules{GateUID: id}, v4, v6)
		require.ErrorIs(t, err, ErrInvalidUID)
		require.Contains(t, err.Error(), "GateUID")
		require.ErrorIs(t, Verify(Rules{GateUID: id}, v4, v6), ErrInvalidUID)
		require.Empty(t, v4.calls)
		require.Empty(t, v6.calls)
	}
	require.NoError(t, Install(Rules{GateUID: math.MaxInt32}, newFake("ipv4"), nil))
	require.NoError(t, Install(Rules{GateUID: 1}, newFake("ipv4"), nil))
	require.ErrorIs(t, Install(Rules{GateUID: uid}, nil, newFake("ipv6")), ErrMissingTable)
	require.ErrorIs(t, Verify(Rules{GateUID: uid}, nil, nil), ErrMissingTable)
}

// TestVerifyCatchesEveryToken changes each token of each expected line in
// turn (and drops or adds lines) and expects a mismatch naming the family,
// the chain and the line.
func TestVerifyCatchesEveryToken(t *testing.T) {
	t.Parallel()
	for fam, want := range map[string][]string{"ipv4": wantV4, "ipv6": wantV6} {
		for i, line := range want {
			tokens := strings.Fields(line)
			for j := range tokens {
				changed := slices.Clone(tokens)
				changed[j] += "x"
				listed := slices.Clone(want)
				listed[i] = strings.Join(changed, " ")
				assertMismatch(t, fam, Chain, i, listed, jumpOutput())
			}
		}
		assertMismatch(t, fam, Chain, len(want)-1, want[:len(want)-1], jumpOutput())
		assertMismatch(t, fam, Chain, len(want), append(slices.Clone(want), "-A SANDGATE-EGRESS -j ACCEPT"), jumpOutput())
		for j := range strings.Fields(jumpLine) {
			changed := strings.Fields(jumpLine)
			changed[j] += "x"
			assertMismatch(t, fam, output, 1, want, []string{"-P OUTPUT ACCEPT", strings.Join(changed, " ")})
		}
		assertMismatch(t, fam, output, 1, want, []string{"-P OUTPUT ACCEPT"})
		assertMismatch(t, fam, output, 1, want, []string{"-P OUTPUT ACCEPT", "-A OUTPUT -j ACCEPT", jumpLine})
		assertMismatch(t, fam, output, 3, want, []string{"-P OUTPUT ACCEPT", jumpLine, "-A OUTPUT -j ACCEPT", jumpLine})
	}
}

func jumpOutput() []string {
	return []string{"-P OUTPUT ACCEPT", jumpLine, "-A OUTPUT -o eth0 -j ACCEPT"}
}

func assertMismatch(t *testing.T, fam, chain string, rule int, chainListing, outputListing []string) {
	t.Helper()
	f := &listTable{lists: map[string][]string{Chain: chainListing, output: outputListing}}
	var v4, v6 Table = f, nil
	if fam == "ipv6" {
		v4, v6 = &listTable{lists: map[string][]string{Chain: wantV4, output: jumpOutput()}}, f
	}
	err := Verify(Rules{GateUID: uid}, v4, v6)
	var mm *MismatchError
	require.ErrorAs(t, err, &mm, "chain %q, output %q", chainListing, outputListing)
	require.ErrorIs(t, err, ErrMismatch)
	require.Equal(t, fam, mm.Family)
	require.Equal(t, chain, mm.Chain)
	require.Equal(t, rule, mm.Rule)
	require.Contains(t, err.Error(), "firewall: "+fam+": chain "+chain)
}

func TestVerifyIgnoresBackendComments(t *testing.T) {
	t.Parallel()
	note := "# Warning: iptables-legacy tables present, use iptables-legacy to see them"
	f := &listTable{lists: map[string][]string{Chain: append(slices.Clone(wantV4), note), output: append(jumpOutput(), note)}}
	require.NoError(t, Verify(Rules{GateUID: uid}, f, nil))
}

func TestVerifyListFailure(t *testing.T) {
	t.Parallel()
	f := &listTable{lists: map[string][]string{output: jumpOutput()}}
	err := Verify(Rules{GateUID: uid}, f, nil)
	require.ErrorIs(t, err, errFake)
	require.Contains(t, err.Error(), "firewall: ipv4: list chain SANDGATE-EGRESS")
}

// listTable serves fixed listings; Verify must not call anything else.
type listTable struct {
	Table
	lists map[string][]string
}

func (l *listTable) List(_, chain string) ([]string, error) {
	got, ok := l.lists[chain]
	if !ok {
		return nil, errFake
	}
	return got, nil
}

func TestMismatchErrorText(t *testing.T) {
	t.Parallel()
	err := error(&MismatchError{Family: "ipv6", Chain: Chain, Rule: 2, Want: "-A a", Got: "-A b"})
	require.EqualError(t, err, `firewall: ipv6: chain SANDGATE-EGRESS, rule 2: want "-A a", got "-A b"`)
	require.ErrorIs(t, err, ErrMismatch)
}
