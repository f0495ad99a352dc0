package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream" //nolint:staticcheck // client-go v0.37's SPDY executor still takes this package's types
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

// execer runs one command in a pod's container to completion: stdin (nil
// for none) is copied in and closed, stdout and stderr are copied out. It
// returns the command's exit code; err is a transport or API failure.
// Declared here, unexported, because remotecommand cannot be faked through
// the fake clientset: unit tests stand in a stub.
type execer interface {
	exec(ctx context.Context, ns, pod string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (code int, err error)
}

// remoteExecer is execer over the API server's exec subresource.
type remoteExecer struct {
	cfg *rest.Config
	rc  rest.Interface
}

func newRemoteExecer(cfg *rest.Config, cli kubernetes.Interface) (*remoteExecer, error) {
	return &remoteExecer{cfg: cfg, rc: cli.CoreV1().RESTClient()}, nil
}

// exec opens the exec over WebSocket, falling back to SPDY when the server
// (or a proxy in between) refuses the upgrade, as kubectl does.
func (r *remoteExecer) exec(ctx context.Context, ns, pod string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	req := r.rc.Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: containerSandbox,
			Command:   argv,
			Stdin:     stdin != nil,
			Stdout:    true,
			Stderr:    true,
		}, scheme.ParameterCodec)
	spdy, err := remotecommand.NewSPDYExecutor(r.cfg, "POST", req.URL())
	if err != nil {
		return 0, fmt.Errorf("kubernetes exec: %w", err)
	}
	ws, err := remotecommand.NewWebSocketExecutor(r.cfg, "GET", req.URL().String())
	if err != nil {
		return 0, fmt.Errorf("kubernetes exec: %w", err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return 0, fmt.Errorf("kubernetes exec: %w", err)
	}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	var exit utilexec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return exit.ExitStatus(), nil
	case ctx.Err() != nil:
		return 0, ctx.Err()
	}
	return 0, err
}
