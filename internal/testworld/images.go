package testworld

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker/dockertest"
)

// probePackage is the probe's import path, built with the go command that
// runs the test.
const probePackage = "github.com/sandgate/sandgate/internal/testworld/probe"

// buildProbe builds the probe static (CGO_ENABLED=0) into dir.
func buildProbe(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "probe")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goCommand(), "build", "-trimpath", "-o", out, probePackage)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "build the probe: %s", msg)
	return out
}

// GateImage returns the gate image the suite provisions with: the base gate
// image with the origin's test CA appended to the system bundle (the gate
// verifies upstreams against its system pool). Built on first use and
// removed when the test ends.
func (e *Env) GateImage(t *testing.T) string {
	t.Helper()
	e.gateOnce.Do(func() {
		base := BaseGateImage
		if v := os.Getenv(GateImageEnv); v != "" {
			base = v
		}
		dockertest.RequireImage(t, e.Cli, base)
		e.gateImage = e.BuildGateVariant(t, "trusting-origin",
			"COPY origin-ca.pem /tmp/origin-ca.pem\n"+
				"RUN cat /tmp/origin-ca.pem >>/etc/ssl/certs/ca-certificates.crt && rm /tmp/origin-ca.pem\n",
			map[string][]byte{"origin-ca.pem": e.ca.certPEM}, base)
	})
	require.NotEmpty(t, e.gateImage, "the test gate image could not be built")
	return e.gateImage
}

// BrokenIP6tablesGate returns a variant of GateImage whose ip6tables
// binaries are replaced by a script that fails (fail-closed rows).
func (e *Env) BrokenIP6tablesGate(t *testing.T) string {
	t.Helper()
	return e.BuildGateVariant(t, "broken-ip6tables",
		"RUN for f in /usr/sbin/ip6tables*; do rm -f \"$f\"; printf '#!/bin/sh\\nexit 1\\n' >\"$f\"; chmod 755 \"$f\"; done\n",
		nil, e.GateImage(t))
}

// NoOwnerMatchGate returns a variant of GateImage whose iptables answers
// every rule with the owner match the way it does on a kernel without
// xt_owner (fail-closed rows); every other call reaches the real binary.
func (e *Env) NoOwnerMatchGate(t *testing.T) string {
	t.Helper()
	wrapper := "#!/bin/sh\n" +
		"for a in \"$@\"; do case \"$a\" in owner) echo \"iptables v1.8.9 (nf_tables): Couldn't load match 'owner':No such file or directory\" >&2; exit 2;; esac; done\n" +
		"exec /usr/sbin/iptables-nft \"$@\"\n"
	return e.BuildGateVariant(t, "no-owner-match",
		"COPY iptables /usr/local/sbin/iptables\nRUN chmod 755 /usr/local/sbin/iptables\n",
		map[string][]byte{"iptables": []byte(wrapper)}, e.GateImage(t))
}

// BuildGateVariant builds `FROM base` plus steps (with files in the build
// context), tagged uniquely for this test and removed when it ends.
func (e *Env) BuildGateVariant(t *testing.T, name, steps string, files map[string][]byte, base string) string {
	t.Helper()
	tag := "sandgate-test/gate-" + name + ":" + strings.ReplaceAll(e.Labels[dockertest.LabelTest], "_", "-")
	ctxFiles := map[string]tarFile{"Dockerfile": {[]byte("FROM " + base + "\n" + steps), 0o644}}
	for n, data := range files {
		ctxFiles[n] = tarFile{data, 0o644}
	}
	ctx, cancel := ctxFor(t)
	defer cancel()
	resp, err := e.Cli.ImageBuild(ctx, tarOf(t, ctxFiles), build.ImageBuildOptions{
		Tags: []string{tag}, Labels: e.Labels, Remove: true, ForceRemove: true, Version: build.BuilderV1})
	require.NoError(t, err, "build %s", tag)
	defer func() { _ = resp.Body.Close() }()
	var log bytes.Buffer
	err = jsonmessage.DisplayJSONMessagesStream(resp.Body, &log, 0, false, nil)
	t.Cleanup(func() { e.removeImage(t, tag) })
	require.NoError(t, err, "build %s:\n%s", tag, log.String())
	return tag
}

// goCommand is the go command on PATH, else the one this machine installs.
func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}

func imageRemoveOptions() image.RemoveOptions {
	return image.RemoveOptions{Force: true, PruneChildren: true}
}

func itoa(n int) string { return strconv.Itoa(n) }
