package firewall

import "fmt"

// family is one address family's table with the chain it must hold.
type family struct {
	name string // "ipv4" or "ipv6", in every error
	t    Table
	want []rule
}

func (f family) errorf(format string, args ...any) error {
	return fmt.Errorf("firewall: %s: "+format, append([]any{f.name}, args...)...)
}

func (f family) install() error {
	if err := f.reconcileChain(); err != nil {
		return err
	}
	return f.reconcileJump()
}

// reconcileChain makes the own chain hold exactly the wanted rules, without
// ever letting OUTPUT jump into an empty or partial chain.
//
// A missing chain is created and filled completely; nothing can jump to it
// yet (iptables refuses a jump to a chain that does not exist), and the jump
// is only inserted afterwards by reconcileJump. A chain that exists but
// differs may already be jumped to, so it is rewritten in place behind a
// guard: first a catch-all REJECT is inserted as its rule 1, then the old
// rules behind it are deleted and the wanted ones appended, and only then is
// the guard deleted. While the guard stands everything is refused (the gate
// is not listening yet, so nothing is lost), and a failure at any step leaves
// the guard in place: fail closed. Building a second chain and swapping the
// jump was the alternative; it needs a second name (and a rename of a
// referenced chain to end under the contract's name) and leaves a stray chain
// behind when it fails half-way, while the guard needs neither.
func (f family) reconcileChain() error {
	exists, err := f.t.ChainExists(filter, Chain)
	if err != nil {
		return f.errorf("check chain %s: %w", Chain, err)
	}
	if !exists {
		if err := f.t.NewChain(filter, Chain); err != nil {
			return f.errorf("create chain %s: %w", Chain, err)
		}
		return f.fill()
	}
	got, err := f.list(Chain)
	if err != nil {
		return err
	}
	if f.verifyChain(got) == nil {
		return nil
	}
	return f.rewrite(countRules(got))
}

// guard is the catch-all rule that holds the line during a rewrite.
var guard = rule{"-j", "REJECT"}

func (f family) rewrite(old int) error {
	if err := f.t.Insert(filter, Chain, 1, guard...); err != nil {
		return f.errorf("insert the guard rule into %s: %w", Chain, err)
	}
	for range old {
		if err := f.t.DeleteById(filter, Chain, 2); err != nil {
			return f.errorf("delete an old rule of %s: %w", Chain, err)
		}
	}
	if err := f.fill(); err != nil {
		return err
	}
	if err := f.t.DeleteById(filter, Chain, 1); err != nil {
		return f.errorf("delete the guard rule of %s: %w", Chain, err)
	}
	return nil
}

// fill appends the wanted rules to the own chain.
func (f family) fill() error {
	for i, r := range f.want {
		if err := f.t.Append(filter, Chain, r...); err != nil {
			if i == 0 {
				// The owner match is the first rule; a kernel without
				// xt_owner fails exactly here.
				return f.errorf("append %q to %s (is the xt_owner module available?): %w", r.line(Chain), Chain, err)
			}
			return f.errorf("append %q to %s: %w", r.line(Chain), Chain, err)
		}
	}
	return nil
}

// reconcileJump makes the jump to the own chain rule 1 of OUTPUT and the only
// rule of OUTPUT that enters the chain. The new jump is inserted before any
// other is deleted, so OUTPUT never runs without one; foreign rules stay
// where they are (below it), OUTPUT is never flushed and its policy is never
// touched.
func (f family) reconcileJump() error {
	got, err := f.list(output)
	if err != nil {
		return err
	}
	if first, ok := firstRule(got); !ok || first != jumpLine {
		if err := f.t.Insert(filter, output, 1, jump...); err != nil {
			return f.errorf("insert the jump to %s as rule 1 of %s: %w", Chain, output, err)
		}
		if got, err = f.list(output); err != nil {
			return err
		}
	}
	extra := extraJumps(got)
	// From the bottom up, so the positions still to delete do not move.
	for i := len(extra) - 1; i >= 0; i-- {
		if err := f.t.DeleteById(filter, output, extra[i]); err != nil {
			return f.errorf("delete duplicate jump (rule %d of %s): %w", extra[i], output, err)
		}
	}
	return nil
}

func (f family) list(chain string) ([]string, error) {
	got, err := f.t.List(filter, chain)
	if err != nil {
		return nil, f.errorf("list chain %s: %w", chain, err)
	}
	return got, nil
}

// countRules counts the -A lines of a listing.
func countRules(lines []string) int {
	n := 0
	for _, l := range lines {
		if isRule(l) {
			n++
		}
	}
	return n
}

// firstRule returns the first -A line of a listing.
func firstRule(lines []string) (string, bool) {
	for _, l := range lines {
		if isRule(l) {
			return l, true
		}
	}
	return "", false
}

// extraJumps returns the 1-based positions of the rules, after rule 1, that
// enter the own chain.
func extraJumps(lines []string) []int {
	var pos []int
	n := 0
	for _, l := range lines {
		if !isRule(l) {
			continue
		}
		n++
		if n > 1 && jumpsToChain(l) {
			pos = append(pos, n)
		}
	}
	return pos
}
