// Package firewall installs the egress gate's owner-match firewall (CONTRACT
// C-FW-1, C-FW-2) with github.com/coreos/go-iptables: in the filter table of
// each address family, an own chain SANDGATE-EGRESS that accepts only the gate's
// uid (plus the sandbox's own loopback traffic, minus any resolver), and
// exactly one jump to it as rule 1 of OUTPUT.
//
// Install reconciles whatever an earlier run left and then verifies the result
// by listing it back (Verify). Nothing here ever removes the rules: a gate that
// dies leaves the sandbox's network closed.
package firewall

import (
	"errors"
	"fmt"
	"math"

	"github.com/sandgate/sandgate/core/gatewire"
)

// Chain is the firewall's own chain in the filter table of both families:
// the gate contract's name (gatewire.Chain), under a short local name.
const Chain = gatewire.Chain

const (
	filter = "filter"
	output = "OUTPUT"
)

// ErrInvalidUID is returned, before any iptables call, for a GateUID outside
// 1..2^31-1: uid 0 would let every root process out, and larger values are
// not uids the kernel hands out.
var ErrInvalidUID = errors.New("firewall: GateUID must be in 1..2147483647")

// ErrMissingTable is returned by Install and Verify when the IPv4 table is nil:
// IPv4 is always on, so a gate without its IPv4 rules would be open.
var ErrMissingTable = errors.New("firewall: the IPv4 table is required")

// Rules is what the firewall installs; GateUID 1..2^31-1.
type Rules struct {
	// GateUID is the only uid whose traffic leaves the network namespace
	// (besides loopback traffic that is not DNS).
	GateUID uint32
}

func (r Rules) validate() error {
	if r.GateUID == 0 || r.GateUID > math.MaxInt32 {
		return fmt.Errorf("%w: GateUID is %d", ErrInvalidUID, r.GateUID)
	}
	return nil
}

// Table is the subset of *iptables.IPTables the firewall uses, so that unit
// tests can run it against a stateful fake. Every method addresses one table
// (always "filter" here) and one chain; List returns the chain in the form
// `iptables -S` prints, starting with its -P (built-in) or -N (own) line.
type Table interface {
	ChainExists(table, chain string) (bool, error)
	NewChain(table, chain string) error
	List(table, chain string) ([]string, error)
	Insert(table, chain string, pos int, rulespec ...string) error
	Append(table, chain string, rulespec ...string) error
	DeleteById(table, chain string, id int) error
}

// Install applies the rules to each non-nil table (v4 is required), reconciling
// what an earlier run left, then verifies them with Verify. Errors name the
// family and the step that failed; a failure half-way leaves the namespace
// closed, never open (see reconcileChain).
func Install(rules Rules, v4, v6 Table) error {
	if err := each(rules, v4, v6, family.install); err != nil {
		return err
	}
	return Verify(rules, v4, v6)
}

// Verify lists SANDGATE-EGRESS and OUTPUT back from each non-nil table (v4 is
// required) and compares them token for token with what Install writes. Any
// difference is a *MismatchError naming the family, the chain and the first
// differing rule.
func Verify(rules Rules, v4, v6 Table) error {
	return each(rules, v4, v6, family.verify)
}

// each validates the input before any iptables call, then runs step for
// IPv4 and, when v6 is not nil, for IPv6, stopping at the first error.
func each(rules Rules, v4, v6 Table, step func(family) error) error {
	if err := rules.validate(); err != nil {
		return err
	}
	if v4 == nil {
		return ErrMissingTable
	}
	if err := step(family{name: "ipv4", t: v4, want: chainRules(rules, false)}); err != nil {
		return err
	}
	if v6 == nil {
		return nil
	}
	return step(family{name: "ipv6", t: v6, want: chainRules(rules, true)})
}
