package config

import (
	"fmt"
	"strings"
)

// reservedLabels are the labels the provider sets itself: an extra label
// under one of these names would change what a container is taken for
// (its session, its role).
var reservedLabels = []string{"dev.sandgate.session", "dev.sandgate.role"}

// parseLabels reads SANDGATE_DOCKER_LABELS: comma-separated key=value pairs
// added to every container the executor creates (cost centres, an operator's
// cleanup selector, a test's label). Empty is none.
func parseLabels(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t\n") {
			return nil, fmt.Errorf("SANDGATE_DOCKER_LABELS: %q: want key=value pairs separated by commas", kv)
		}
		for _, r := range reservedLabels {
			if k == r {
				return nil, fmt.Errorf("SANDGATE_DOCKER_LABELS: %q is set by sandgate itself", k)
			}
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("SANDGATE_DOCKER_LABELS: %q is given twice", k)
		}
		out[k] = v
	}
	return out, nil
}
