package cli

import (
	"context"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// hostsFlag is --limited: present (even empty) means limited networking.
type hostsFlag struct {
	set   bool
	hosts []string
}

func (h *hostsFlag) String() string { return strings.Join(h.hosts, ",") }
func (h *hostsFlag) Set(v string) error {
	h.set = true
	h.hosts = splitList(v)
	return nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// runCreate is `executor create`: provision (or adopt) a session.
func runCreate(ctx context.Context, s *Streams, args []string) error {
	fs, c := newFlags("create", true)
	var req session.Request
	var limited hostsFlag
	var env, creds listFlag
	fs.StringVar(&req.Image, "image", "", "sandbox image (default: the executor's)")
	fs.StringVar(&req.Workdir, "workdir", "", "working directory of every exec (default /workspace)")
	isolation := fs.String("isolation", "", "runc, or gvisor for a second kernel in the way (default: the executor's)")
	fs.Var(&limited, "limited", "limit egress to these hosts, comma-separated (empty: no egress)")
	fs.Var(&env, "env", "K=V visible to every exec (repeatable)")
	fs.Var(&creds, "credential", "id=ID,name=VAR,secret-env=ENV|secret-stdin,hosts=H,...,locations=headers,body (repeatable)")
	sid, err := sessionOnly(fs, s, args)
	if err != nil {
		return err
	}
	if limited.set {
		req.Networking = domain.Networking{Type: domain.NetLimited, AllowedHosts: limited.hosts}
	}
	if req.Isolation, err = sandbox.ParseIsolation(*isolation); err != nil {
		return usagef("--isolation: %v", err)
	}
	if req.Env, err = parseEnv(env); err != nil {
		return err
	}
	if req.Credentials, err = parseCredentials(creds, s); err != nil {
		return err
	}
	cl, err := c.client(s)
	if err != nil {
		return err
	}
	info, err := cl.Provision(ctx, sid, req)
	if err != nil {
		return call{url: c.baseURL(s), sid: sid}.explain(err)
	}
	return printSession(s.Stdout, c.json, info)
}

// parseEnv turns K=V flags into a map; a repeated name is an error rather
// than a silent override.
func parseEnv(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	env := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--env %q: want NAME=VALUE", domain.Clip(k))
		}
		if _, dup := env[k]; dup {
			return nil, usagef("--env %s: given twice", domain.Clip(k))
		}
		env[k] = v
	}
	return env, nil
}
