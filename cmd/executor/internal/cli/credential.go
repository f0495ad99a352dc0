package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/session"
)

// maxSecretBytes bounds a secret read from stdin, so a mistaken pipe does
// not fill memory; the server bounds secrets further.
const maxSecretBytes = 64 << 10

// parseCredentials parses every --credential. A secret is never a flag
// value: argv is readable by every local user (ps, /proc/PID/cmdline) and
// lands in shell history, so it comes from an environment variable
// (secret-env=VAR) or from stdin (secret-stdin, at most one credential).
func parseCredentials(specs []string, s *Streams) ([]session.Credential, error) {
	var out []session.Credential
	stdinUsed := false
	for i, spec := range specs {
		kv, err := parseSpec(spec)
		if err != nil {
			return nil, usagef("--credential #%d: %s", i+1, err)
		}
		cr := session.Credential{ID: kv.one("id"), Name: kv.one("name"), AllowedHosts: kv["hosts"]}
		for _, l := range kv["locations"] {
			cr.Locations = append(cr.Locations, gatewire.Location(l))
		}
		switch env, fromStdin := kv.one("secret-env"), kv.has("secret-stdin"); {
		case env != "" && fromStdin:
			return nil, usagef("--credential #%d: secret-env and secret-stdin both given", i+1)
		case env != "":
			v := s.Getenv(env)
			if v == "" {
				return nil, usagef("--credential #%d: secret-env=%s: the variable is unset or empty", i+1, domain.Clip(env))
			}
			cr.Secret = gatewire.NewSecret(v)
		case fromStdin:
			if stdinUsed {
				return nil, usagef("--credential #%d: only one credential can read its secret from stdin", i+1)
			}
			stdinUsed = true
			if cr.Secret, err = readSecret(s.Stdin); err != nil {
				return nil, usagef("--credential #%d: secret-stdin: %s", i+1, err)
			}
		default:
			return nil, usagef("--credential #%d: name the secret's source: secret-env=VAR or secret-stdin", i+1)
		}
		out = append(out, cr)
	}
	return out, nil
}

// readSecret reads a secret from stdin, without the one trailing newline
// `echo` or a here-string adds.
func readSecret(r io.Reader) (gatewire.Secret, error) {
	if r == nil {
		return gatewire.Secret{}, fmt.Errorf("no stdin")
	}
	b, err := io.ReadAll(io.LimitReader(r, maxSecretBytes+1))
	if err != nil {
		return gatewire.Secret{}, fmt.Errorf("reading stdin: %w", err)
	}
	if len(b) > maxSecretBytes {
		return gatewire.Secret{}, fmt.Errorf("longer than %d bytes", maxSecretBytes)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if v == "" {
		return gatewire.Secret{}, fmt.Errorf("stdin is empty")
	}
	return gatewire.NewSecret(v), nil
}

// specKeys are the keys of a --credential; the list-valued ones take the
// comma-separated items that follow them (hosts=a,b,locations=headers).
var specKeys = map[string]bool{"id": false, "name": false, "secret-env": false, "secret-stdin": false, "hosts": true, "locations": true}

type specValues map[string][]string

func (v specValues) one(k string) string {
	if len(v[k]) == 0 {
		return ""
	}
	return v[k][0]
}

func (v specValues) has(k string) bool { _, ok := v[k]; return ok }

// parseSpec parses id=…,name=…,hosts=a,b,locations=headers: an item without
// "=" continues the list of the last list-valued key. Values are never
// quoted back, since a mistyped secret could be among them.
func parseSpec(spec string) (specValues, error) {
	out := specValues{}
	last := ""
	for i, item := range strings.Split(spec, ",") {
		k, v, hasEq := strings.Cut(item, "=")
		switch {
		case item == "":
			continue
		case k == "secret":
			return nil, fmt.Errorf("secret=… is refused: argv is visible to every local user and kept in shell history; use secret-env=VAR or secret-stdin")
		case !hasEq && k == "secret-stdin":
			out[k] = nil
			last = ""
		case !hasEq && specKeys[last]:
			out[last] = append(out[last], item)
		case !hasEq:
			return nil, fmt.Errorf("item %d: want key=value", i+1)
		case k == "secret-stdin":
			return nil, fmt.Errorf("secret-stdin takes no value")
		default:
			list, known := specKeys[k]
			if !known {
				return nil, fmt.Errorf("unknown key %q (want id, name, secret-env, secret-stdin, hosts, locations)", domain.Clip(k))
			}
			if out.has(k) {
				return nil, fmt.Errorf("key %s given twice", k)
			}
			out[k] = []string{v}
			last = ""
			if list {
				last = k
			}
		}
	}
	return out, nil
}
