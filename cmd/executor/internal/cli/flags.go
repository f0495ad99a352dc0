package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
)

// common holds the flags every subcommand takes.
type common struct {
	url, token string
	json       bool
}

// newFlags returns the FlagSet of subcommand name with the common flags;
// withJSON adds --json. Errors are reported by Run, not by flag.
func newFlags(name string, withJSON bool) (*flag.FlagSet, *common) {
	fs := flag.NewFlagSet("executor "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := &common{}
	fs.StringVar(&c.url, "url", "", "the executor's API URL (default $"+EnvURL+" or "+DefaultURL+")")
	fs.StringVar(&c.token, "token", "", "the API token (default $"+EnvToken+"; prefer the variable: argv is visible to every local user)")
	if withJSON {
		fs.BoolVar(&c.json, "json", false, "print JSON for machines instead of text for people")
	}
	return fs, c
}

// parseArgs parses args with fs, flags before, between and after the
// positional arguments (the standard flag package stops at the first
// positional one), and returns the positional ones. A "--" ends the flags.
func parseArgs(fs *flag.FlagSet, s *Streams, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printFlags(fs, s.Stderr)
				return nil, errHelp
			}
			return nil, usagef("%s", err)
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if len(rest) == 0 || (consumed > 0 && args[consumed-1] == "--") {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func printFlags(fs *flag.FlagSet, w io.Writer) {
	name := strings.TrimPrefix(fs.Name(), "executor ")
	_, _ = fmt.Fprintf(w, "usage: executor %s\n\nflags:\n", synopses[name])
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	if n := notes[name]; n != "" {
		_, _ = fmt.Fprintf(w, "\n%s", n)
	}
}

// client returns the API client the flags and the environment name.
func (c *common) client(s *Streams) (*httpapi.Client, error) {
	u := firstNonEmpty(c.url, s.Getenv(EnvURL), DefaultURL)
	hc := s.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	token := firstNonEmpty(c.token, s.Getenv(EnvToken))
	cl, err := httpapi.NewClient(u, token, hc)
	if err != nil {
		return nil, usagef("--url / $%s: %s", EnvURL, err)
	}
	if token != "" && cleartextBeyondLoopback(u) {
		_, _ = fmt.Fprintf(s.Stderr, "executor: warning: sending the API token unencrypted to %s; use https beyond loopback\n", c.baseURL(s))
	}
	return cl, nil
}

// cleartextBeyondLoopback reports whether raw is a plain-http URL to a
// host other than localhost or a loopback address: a token sent there can
// be read on the way.
func cleartextBeyondLoopback(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err != nil || !ip.IsLoopback()
}

// baseURL is the URL the client talks to, for error messages.
// A password in the URL's userinfo is redacted.
func (c *common) baseURL(s *Streams) string {
	raw := firstNonEmpty(c.url, s.Getenv(EnvURL), DefaultURL)
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return raw
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

// sessionArg parses a session id argument before any call, as the server
// would (domain.ParseSessionID): the CLI's edge.
func sessionArg(s string) (domain.ID, error) {
	id, err := domain.ParseSessionID(s)
	if err != nil {
		return domain.ID{}, usagef("session: %s", err)
	}
	return id, nil
}

// exactArgs checks the number of positional arguments.
func exactArgs(pos []string, names ...string) error {
	if len(pos) != len(names) {
		return usagef("want %d argument(s) (%s), got %d", len(names), strings.Join(names, " "), len(pos))
	}
	return nil
}

// sessionOnly parses the arguments of a subcommand that takes one session
// id and flags.
func sessionOnly(fs *flag.FlagSet, s *Streams, args []string) (domain.ID, error) {
	pos, err := parseArgs(fs, s, args)
	if err != nil {
		return domain.ID{}, err
	}
	if err := exactArgs(pos, "SESSION"); err != nil {
		return domain.ID{}, err
	}
	return sessionArg(pos[0])
}
