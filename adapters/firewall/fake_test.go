package firewall

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// fakeTable behaves like one family's filter table as iptables shows it:
// built-in chains with a policy, own chains, rules kept as token lists, -S
// listings, 1-based positions, and the errors iptables gives for a missing
// chain, a bad position or a jump to a chain that does not exist.
type fakeTable struct {
	name   string
	chains map[string][][]string
	order  []string // own chains, in creation order
	calls  []string // every call, "Method chain args"
	// fail, when set, may fail a call before it takes effect.
	fail func(call string) error
	// after, when set, runs after every change (tests check invariants).
	after func(f *fakeTable)
}

var errFake = errors.New("fake iptables failure")

func newFake(name string) *fakeTable {
	return &fakeTable{name: name, chains: map[string][][]string{"INPUT": nil, "FORWARD": nil, "OUTPUT": nil}}
}

func builtin(chain string) bool {
	return chain == "INPUT" || chain == "FORWARD" || chain == "OUTPUT"
}

func (f *fakeTable) record(method, table, chain string, args ...string) error {
	call := strings.TrimSpace(method + " " + chain + " " + strings.Join(args, " "))
	f.calls = append(f.calls, call)
	if table != filter {
		return fmt.Errorf("fake: table %q", table)
	}
	if f.fail != nil {
		return f.fail(call)
	}
	return nil
}

func (f *fakeTable) changed() {
	if f.after != nil {
		f.after(f)
	}
}

func (f *fakeTable) ChainExists(table, chain string) (bool, error) {
	if err := f.record("ChainExists", table, chain); err != nil {
		return false, err
	}
	_, ok := f.chains[chain]
	return ok, nil
}

func (f *fakeTable) NewChain(table, chain string) error {
	if err := f.record("NewChain", table, chain); err != nil {
		return err
	}
	if _, ok := f.chains[chain]; ok {
		return fmt.Errorf("fake: chain %s already exists", chain)
	}
	f.chains[chain] = nil
	f.order = append(f.order, chain)
	f.changed()
	return nil
}

func (f *fakeTable) List(table, chain string) ([]string, error) {
	if err := f.record("List", table, chain); err != nil {
		return nil, err
	}
	rules, ok := f.chains[chain]
	if !ok {
		return nil, fmt.Errorf("fake: no chain %s", chain)
	}
	head := "-N " + chain
	if builtin(chain) {
		head = "-P " + chain + " ACCEPT"
	}
	out := []string{head}
	for _, r := range rules {
		out = append(out, "-A "+chain+" "+strings.Join(r, " "))
	}
	return out, nil
}

func (f *fakeTable) Insert(table, chain string, pos int, rulespec ...string) error {
	if err := f.record("Insert", table, chain, append([]string{fmt.Sprint(pos)}, rulespec...)...); err != nil {
		return err
	}
	rules, err := f.target(chain, rulespec)
	if err != nil {
		return err
	}
	if pos < 1 || pos > len(rules)+1 {
		return fmt.Errorf("fake: index of insertion too big: %d", pos)
	}
	f.chains[chain] = slices.Insert(rules, pos-1, slices.Clone(rulespec))
	f.changed()
	return nil
}

func (f *fakeTable) Append(table, chain string, rulespec ...string) error {
	if err := f.record("Append", table, chain, rulespec...); err != nil {
		return err
	}
	rules, err := f.target(chain, rulespec)
	if err != nil {
		return err
	}
	f.chains[chain] = append(rules, slices.Clone(rulespec))
	f.changed()
	return nil
}

func (f *fakeTable) DeleteById(table, chain string, id int) error {
	if err := f.record("DeleteById", table, chain, fmt.Sprint(id)); err != nil {
		return err
	}
	rules, ok := f.chains[chain]
	if !ok {
		return fmt.Errorf("fake: no chain %s", chain)
	}
	if id < 1 || id > len(rules) {
		return fmt.Errorf("fake: index of deletion too big: %d", id)
	}
	f.chains[chain] = slices.Delete(rules, id-1, id)
	f.changed()
	return nil
}

// target returns the chain's rules after checking that the chain and the
// rule's jump target exist.
func (f *fakeTable) target(chain string, rulespec []string) ([][]string, error) {
	rules, ok := f.chains[chain]
	if !ok {
		return nil, fmt.Errorf("fake: no chain %s", chain)
	}
	if i := slices.Index(rulespec, "-j"); i >= 0 && i+1 < len(rulespec) {
		t := rulespec[i+1]
		if _, ok := f.chains[t]; !ok && !slices.Contains([]string{"ACCEPT", "DROP", "REJECT", "RETURN"}, t) {
			return nil, fmt.Errorf("fake: couldn't load target %s", t)
		}
	}
	return rules, nil
}

// set replaces a chain's rules (creating an own chain if needed), for tests
// that start from an existing state.
func (f *fakeTable) set(chain string, lines ...string) {
	if _, ok := f.chains[chain]; !ok && !builtin(chain) {
		f.order = append(f.order, chain)
	}
	rules := [][]string{}
	for _, l := range lines {
		rules = append(rules, strings.Fields(l))
	}
	f.chains[chain] = rules
}

// mutations returns the calls that change the table.
func (f *fakeTable) mutations() []string {
	var out []string
	for _, c := range f.calls {
		if !strings.HasPrefix(c, "List ") && !strings.HasPrefix(c, "ChainExists ") {
			out = append(out, c)
		}
	}
	return out
}
