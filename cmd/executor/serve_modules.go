package main

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/fx"

	"github.com/sandgate/sandgate/adapters/docker"
	"github.com/sandgate/sandgate/adapters/kubernetes"
	"github.com/sandgate/sandgate/adapters/telemetry"
	"github.com/sandgate/sandgate/app/executor"
	"github.com/sandgate/sandgate/cmd/executor/internal/config"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// configModule supplies the validated configuration, the logger and the
// executor defaults derived from them.
func configModule(cfg config.Config, log *slog.Logger) fx.Option {
	return fx.Module("config",
		fx.Supply(cfg, log),
		fx.Provide(defaultsOf),
		fx.Invoke(logConfig),
	)
}

// defaultsOf is the part of the configuration that shapes every Spec.
func defaultsOf(cfg config.Config) session.Defaults {
	return session.Defaults{
		Image:           cfg.Image,
		GateImage:       cfg.GateImage,
		ControlplaneURL: cfg.ControlplaneURL,
		Hardening:       cfg.Hardening,
		Isolation:       cfg.Isolation,
		OTelEndpoint:    cfg.GateOTelEndpoint,
		OTelInsecure:    cfg.GateOTelInsecure,
	}
}

// logConfig says at start what this executor will do, never a secret.
func logConfig(lc fx.Lifecycle, cfg config.Config, log *slog.Logger) {
	lc.Append(fx.StartHook(func() {
		if cfg.GatesDisabled {
			log.Warn("gates are off: SANDGATE_CONTROLPLANE_URL is unset; sessions with credentials are refused " +
				"and limited ones run without network")
		}
		log.Info("configuration", "listen", cfg.Listen, "gate_listen", cfg.GateListen,
			"api_token_set", cfg.APIToken != "", "backend", cfg.Backend, "image", cfg.Image,
			"gate_image", cfg.GateImage, "agent_image", cfg.AgentImage, "controlplane_url", cfg.ControlplaneURL, "gate_network", cfg.GateNetwork,
			"gate_otel_endpoint", cfg.GateOTelEndpoint)
	}))
}

// storeModule provides the session store, opened in OnStart (the secrets key
// may have to be created first) and closed in OnStop.
var storeModule = fx.Module("sessionstore",
	fx.Provide(newStore, func(s *lazyStore) ports.SessionStore { return s }),
)

func newStore(lc fx.Lifecycle, cfg config.Config) *lazyStore {
	s := &lazyStore{}
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error { return s.open(ctx, cfg) },
		OnStop:  func(context.Context) error { return s.Close() },
	})
	return s
}

// providerModule provides the sandbox backend SANDGATE_BACKEND names (config
// refuses any other). Its gate tokens are the store's: the provider mints
// them and revokes them before a reap (the one owner of revoke-before-reap).
var providerModule = fx.Module("provider", fx.Provide(newProvider))

// closer is a provider that holds streams (the in-sandbox agents' sessions)
// to end at shutdown: each agent then kills what it still runs and exits.
type closer interface{ Close() error }

func newProvider(lc fx.Lifecycle, cfg config.Config, log *slog.Logger, store ports.SessionStore,
	mp metric.MeterProvider) (ports.Provider, error) {
	observe, err := dataPlaneCounter(mp)
	if err != nil {
		return nil, err
	}
	p, err := openProvider(cfg, log, store, observe)
	if c, ok := p.(closer); ok && err == nil {
		lc.Append(fx.StopHook(c.Close))
	}
	return p, err
}

func openProvider(cfg config.Config, log *slog.Logger, store ports.SessionStore,
	observe func(context.Context, bool)) (ports.Provider, error) {
	if cfg.Backend == config.BackendKubernetes {
		// Builds the client and validates the placement; the API server is
		// first dialled by a request (or /readyz).
		if cfg.K8sSeccompProfile == "" {
			log.Warn("SANDGATE_K8S_SECCOMP_PROFILE is unset: sandboxes run the runtime's default seccomp profile, " +
				"which may leave socket families the firewall does not govern (AF_VSOCK) open (docs/SECURITY.md)")
		}
		return kubernetes.NewFromKubeconfig(cfg.Kubeconfig, kubernetes.Options{Logger: log, Tokens: store,
			Namespace: cfg.K8sNamespace, NetsetupImage: cfg.NetsetupImage, SeccompProfile: cfg.K8sSeccompProfile,
			AgentImage: cfg.AgentImage, AgentKey: agentKey(cfg, log), ObserveDataPlane: observe,
			GVisorRuntimeClass: cfg.GVisorRuntime})
	}
	// NewFromEnv only builds the client; the daemon is first dialled by a
	// request (or /readyz).
	return docker.NewFromEnv(docker.Options{Logger: log, Tokens: store, GateNetwork: cfg.GateNetwork,
		Labels: cfg.DockerLabels, AgentImage: cfg.AgentImage, AgentKey: agentKey(cfg, log), ObserveDataPlane: observe,
		GVisorRuntime: cfg.GVisorRuntime})
}

// serviceModule provides the application service over provider, store and
// checkpoint store, counting reaps in the meter provider.
var serviceModule = fx.Module("service",
	fx.Provide(newService, func(s *executor.Service) ports.Service { return s }),
)

func newService(p ports.Provider, s ports.SessionStore, cs ports.CheckpointStore, d session.Defaults,
	log *slog.Logger, mp metric.MeterProvider) (*executor.Service, error) {
	observe, err := reapCounter(mp)
	if err != nil {
		return nil, err
	}
	return executor.New(p, s, d, executor.WithCheckpoints(cs), executor.WithLogger(log.With("component", "service")),
		executor.WithReapObserver(observe)), nil
}

// dataPlaneCounter returns the observer that counts sandbox operations in
// telemetry.DataPlaneMetric by path (agent or fallback).
func dataPlaneCounter(mp metric.MeterProvider) (func(context.Context, bool), error) {
	c, err := telemetry.DataPlane(mp)
	if err != nil {
		return nil, err
	}
	agent := metric.WithAttributes(attribute.String("path", "agent"))
	fallback := metric.WithAttributes(attribute.String("path", "fallback"))
	return func(ctx context.Context, viaAgent bool) {
		if viaAgent {
			c.Add(ctx, 1, agent)
			return
		}
		c.Add(ctx, 1, fallback)
	}, nil
}
