package testworld

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/stretchr/testify/require"
)

// OriginName is the origin's DNS name on the test network (a network
// alias, resolved by Docker's embedded DNS for the gate) and in its
// certificate.
const OriginName = "origin.test"

// Ports the origin serves (see the probe's serve command).
const (
	OriginHTTPPort  = 80
	OriginHTTPSPort = 443
	OriginEchoPort  = 7
	OriginDNSPort   = 53
)

// Origin is the test's origin container.
type Origin struct {
	ID   string
	IPv4 netip.Addr
	// IPv6 is invalid when the network has no IPv6.
	IPv6 netip.Addr
}

// Record is one request as the origin logged it (the probe's serve
// record).
type Record struct {
	Kind    string              `json:"kind"`
	Method  string              `json:"method"`
	URL     string              `json:"url"`
	Host    string              `json:"host"`
	SNI     string              `json:"sni"`
	Headers map[string][]string `json:"headers"`
	Body    string              `json:"body"`
	BodyLen int64               `json:"body_len"`
	Name    string              `json:"name"`
	Remote  string              `json:"remote"`
}

// startOrigin creates the origin on the test network under OriginName,
// copies the probe and the CA into it, starts it and waits until its HTTP
// port answers from the host.
func (e *Env) startOrigin(t *testing.T) {
	t.Helper()
	ctx, cancel := ctxFor(t)
	defer cancel()
	cfg := &container.Config{Image: OriginImage, Labels: e.Labels, Entrypoint: []string{"/probe"},
		Cmd: []string{"serve", "--ca-cert", "/origin-ca.pem", "--ca-key", "/origin-ca.key", "--name", OriginName}}
	netCfg := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
		e.Network: {Aliases: []string{OriginName}}}}
	created, err := e.Cli.ContainerCreate(ctx, cfg, &container.HostConfig{NetworkMode: container.NetworkMode(e.Network)},
		netCfg, nil, "")
	require.NoError(t, err, "create the origin")
	e.Origin.ID = created.ID
	probe, err := os.ReadFile(e.ProbePath)
	require.NoError(t, err)
	require.NoError(t, e.Cli.CopyToContainer(ctx, created.ID, "/", tarOf(t, map[string]tarFile{
		"probe":         {probe, 0o755},
		"origin-ca.pem": {e.ca.certPEM, 0o644},
		"origin-ca.key": {e.ca.keyPEM, 0o600},
	}), container.CopyToContainerOptions{}))
	require.NoError(t, e.Cli.ContainerStart(ctx, created.ID, container.StartOptions{}))
	ins, err := e.Cli.ContainerInspect(ctx, created.ID)
	require.NoError(t, err)
	ep := ins.NetworkSettings.Networks[e.Network]
	require.NotNil(t, ep, "the origin is not on %s", e.Network)
	e.Origin.IPv4, err = netip.ParseAddr(ep.IPAddress)
	require.NoError(t, err, "origin IPv4 %q", ep.IPAddress)
	if ep.GlobalIPv6Address != "" {
		e.Origin.IPv6, err = netip.ParseAddr(ep.GlobalIPv6Address)
		require.NoError(t, err)
	}
	e.waitOrigin(t)
}

// waitOrigin polls the origin's HTTP and DNS ports from the host, bounded.
func (e *Env) waitOrigin(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, port := range []int{OriginHTTPPort, OriginHTTPSPort, OriginEchoPort, OriginDNSPort} {
		addr := net.JoinHostPort(e.Origin.IPv4.String(), itoa(port))
		for {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				_ = c.Close()
				break
			}
			if time.Now().After(deadline) {
				require.FailNow(t, "the origin never answered", "%s: %v; logs: %s", addr, err, e.logs(t, e.Origin.ID))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// OriginLog returns every record the origin logged so far.
func (e *Env) OriginLog(t *testing.T) []Record {
	t.Helper()
	var out []Record
	sc := bufio.NewScanner(strings.NewReader(e.stdout(t, e.Origin.ID)))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "origin log line %q", sc.Text())
		out = append(out, r)
	}
	require.NoError(t, sc.Err())
	return out
}

// OriginRequests returns the HTTP(S) records whose URL contains marker:
// each row gives its requests a unique marker in the path.
func (e *Env) OriginRequests(t *testing.T, marker string) []Record {
	t.Helper()
	var out []Record
	for _, r := range e.OriginLog(t) {
		if (r.Kind == "http" || r.Kind == "https") && strings.Contains(r.URL, marker) {
			out = append(out, r)
		}
	}
	return out
}

// AwaitOriginRequests returns the records carrying marker once there are at
// least n, waiting up to 10 s: the engine copies a container's stdout to its
// log asynchronously, so a record the origin printed just before answering
// can reach the log after the probe has its answer.
func (e *Env) AwaitOriginRequests(t *testing.T, marker string, n int) []Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs := e.OriginRequests(t, marker)
		if len(recs) >= n || time.Now().After(deadline) {
			return recs
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stdout returns a container's stdout log.
func (e *Env) stdout(t *testing.T, id string) string {
	t.Helper()
	out, _ := e.readLogs(t, id)
	return out
}

// logs returns a container's stdout and stderr together.
func (e *Env) logs(t *testing.T, id string) string {
	t.Helper()
	out, errOut := e.readLogs(t, id)
	return out + errOut
}

func (e *Env) readLogs(t *testing.T, id string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := e.Cli.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	require.NoError(t, err, "logs of %s", id)
	defer func() { _ = rc.Close() }()
	var stdout, stderr bytes.Buffer
	_, err = stdcopy.StdCopy(&stdout, &stderr, rc)
	require.NoError(t, err)
	return stdout.String(), stderr.String()
}

// tarFile is one member of an archive tarOf builds.
type tarFile struct {
	data []byte
	mode int64
}

func tarOf(t *testing.T, files map[string]tarFile) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, f := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: f.mode, Size: int64(len(f.data)),
			Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}))
		_, err := tw.Write(f.data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return &buf
}
