package main

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/fx"

	"github.com/sandgate/sandgate/adapters/checkpoint"
	"github.com/sandgate/sandgate/adapters/telemetry"
	"github.com/sandgate/sandgate/app/executor"
	"github.com/sandgate/sandgate/cmd/executor/internal/config"
	"github.com/sandgate/sandgate/ports"
)

// checkpointModule provides the checkpoint store: a local directory,
// created (and cleared of interrupted writes) in OnStart.
var checkpointModule = fx.Module("checkpoint", fx.Provide(newCheckpointStore))

func newCheckpointStore(lc fx.Lifecycle, cfg config.Config) (ports.CheckpointStore, error) {
	d, err := checkpoint.New(cfg.CheckpointDir, cfg.CheckpointMaxBytes)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StartHook(d.Prepare))
	return d, nil
}

// reaperModule runs the reaper from OnStart to OnStop; OnStop waits for the
// round in progress within the shutdown bound.
var reaperModule = fx.Module("reaper", fx.Invoke(runReaper))

func runReaper(lc fx.Lifecycle, svc *executor.Service, cfg config.Config, log *slog.Logger) {
	r := executor.NewReaper(svc, executor.ReapPolicy{IdleTTL: cfg.IdleTTL, OrphanGrace: cfg.OrphanGrace,
		CheckpointRetention: cfg.CheckpointRetention}, cfg.ReapInterval)
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			log.Info("reaper", "idle_ttl", cfg.IdleTTL.String(), "interval", cfg.ReapInterval.String(),
				"orphan_grace", cfg.OrphanGrace.String(), "checkpoint_dir", cfg.CheckpointDir,
				"checkpoint_retention", cfg.CheckpointRetention.String())
			r.Start()
			return nil
		},
		OnStop: r.Stop,
	})
}

// reapCounter returns the observer that counts reaps in telemetry.ReapsMetric by
// reason and outcome.
func reapCounter(mp metric.MeterProvider) (func(executor.ReapResult), error) {
	c, err := telemetry.Reaps(mp)
	if err != nil {
		return nil, err
	}
	return func(r executor.ReapResult) {
		c.Add(context.Background(), 1, metric.WithAttributes(
			attribute.String("reason", string(r.Reason)), attribute.String("outcome", string(r.Outcome))))
	}, nil
}
