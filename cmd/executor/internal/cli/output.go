package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/ports"
)

// printJSON writes v as one indented JSON document.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printSession prints one session: the API's JSON with --json, a short
// block for people otherwise.
func printSession(w io.Writer, asJSON bool, info ports.SessionInfo) error {
	if asJSON {
		return printJSON(w, httpapi.NewSessionResponse(info))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintf(tw, "session\t%s\n", info.ID)
	_, _ = fmt.Fprintf(tw, "state\t%s\n", info.State)
	for _, row := range [][2]string{{"sandbox", info.SandboxID}, {"image", info.Image}, {"workdir", info.Workdir}} {
		if row[1] != "" {
			_, _ = fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
		}
	}
	_, _ = fmt.Fprintf(tw, "network\t%s\n", network(info))
	_, _ = fmt.Fprintf(tw, "gated\t%s\n", yesNo(info.Gated))
	return tw.Flush()
}

// printSessions prints `ls`: {"sessions":[…]} (the API's shape) with --json,
// a table for people otherwise.
func printSessions(w io.Writer, asJSON bool, infos []ports.SessionInfo) error {
	if asJSON {
		return printJSON(w, httpapi.NewSessionList(infos))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "SESSION\tSTATE\tIMAGE\tNETWORK\tGATED")
	for _, in := range infos {
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", in.ID, in.State, dash(in.Image), network(in), yesNo(in.Gated))
	}
	return tw.Flush()
}

// network describes a session's stored egress policy.
func network(info ports.SessionInfo) string {
	switch {
	case info.Networking == nil:
		return "-"
	case !info.Networking.Limited():
		return "unrestricted"
	case len(info.Networking.AllowedHosts) == 0:
		return "limited: none"
	default:
		return "limited: " + strings.Join(info.Networking.AllowedHosts, ",")
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
