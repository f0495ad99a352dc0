package firewall

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrMismatch is the class of every *MismatchError: the rules listed back
// differ from what Install writes.
var ErrMismatch = errors.New("firewall: rules differ from the expected ones")

// MismatchError reports the first difference Verify found.
type MismatchError struct {
	Family string // "ipv4" or "ipv6"
	Chain  string // SANDGATE-EGRESS or OUTPUT
	// Rule is the 1-based position of the first differing rule (0 for the
	// chain's -N/-P line).
	Rule int
	Want string // the expected line, "" when there should be none
	Got  string // the listed line, "" when it is missing
}

// Error names the family, the chain, the rule and both lines.
func (e *MismatchError) Error() string {
	return fmt.Sprintf("firewall: %s: chain %s, rule %d: want %q, got %q", e.Family, e.Chain, e.Rule, e.Want, e.Got)
}

// Unwrap makes errors.Is(err, ErrMismatch) hold.
func (e *MismatchError) Unwrap() error { return ErrMismatch }

func (f family) verify() error {
	got, err := f.list(Chain)
	if err != nil {
		return err
	}
	if err := f.verifyChain(got); err != nil {
		return err
	}
	out, err := f.list(output)
	if err != nil {
		return err
	}
	return f.verifyOutput(out)
}

// verifyChain compares the own chain's listing, line by line and token by
// token, with the expected one.
func (f family) verifyChain(got []string) error {
	want := listing(f.want)
	got = entries(got)
	for i := range max(len(want), len(got)) {
		w, g := at(want, i), at(got, i)
		if !slices.Equal(strings.Fields(w), strings.Fields(g)) {
			return &MismatchError{Family: f.name, Chain: Chain, Rule: i, Want: w, Got: g}
		}
	}
	return nil
}

// verifyOutput checks that rule 1 of OUTPUT is exactly the jump and that no
// other rule of OUTPUT enters the own chain; OUTPUT's other rules and its
// policy are not the firewall's.
func (f family) verifyOutput(got []string) error {
	first, _ := firstRule(got)
	if !slices.Equal(strings.Fields(first), strings.Fields(jumpLine)) {
		return &MismatchError{Family: f.name, Chain: output, Rule: 1, Want: jumpLine, Got: first}
	}
	if extra := extraJumps(got); len(extra) > 0 {
		return &MismatchError{Family: f.name, Chain: output, Rule: extra[0], Got: ruleAt(got, extra[0])}
	}
	return nil
}

// entries drops what is not a chain or rule line: blank lines and the "#"
// comments a backend may add (iptables-nft notes legacy tables that way).
func entries(lines []string) []string {
	var out []string
	for _, l := range lines {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			out = append(out, l)
		}
	}
	return out
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

// ruleAt returns the n-th (1-based) -A line of a listing.
func ruleAt(lines []string, n int) string {
	for _, l := range lines {
		if isRule(l) {
			n--
			if n == 0 {
				return l
			}
		}
	}
	return ""
}
