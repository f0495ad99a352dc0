package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/sandgate/sandgate/cmd/executor/internal/config"
	"github.com/sandgate/sandgate/cmd/internal/versioncmd"
)

// startTimeout bounds OnStart: opening a PostgreSQL store may wait for the
// schema lock of another executor starting at the same time.
const startTimeout = 60 * time.Second

// runServe is `executor serve [flags]`: it loads the configuration, starts
// the fx app and runs until SIGINT or SIGTERM, then shuts down within the
// configured bound. It returns the exit code: 2 for a bad configuration, 1
// when the service fails to start or stop.
func runServe(args []string) int {
	cfg, err := config.Load(args, os.LookupEnv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		_, _ = fmt.Fprintln(os.Stderr, "executor serve:", err)
		return versioncmd.ExitUsage
	}
	log := newLogger(os.Stderr)
	fxApp := fx.New(serveOptions(cfg, log, providerModule))
	if err := serve(fxApp, cfg, log); err != nil {
		log.Error("executor stopped", "error", err)
		return versioncmd.ExitFailure
	}
	return 0
}

// serve starts fxApp, waits for a shutdown signal and stops it.
func serve(fxApp *fx.App, cfg config.Config, log *slog.Logger) error {
	startCtx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := fxApp.Start(startCtx); err != nil {
		return err
	}
	sig := <-fxApp.Wait()
	log.Info("shutting down", "signal", sig.Signal.String(), "bound", cfg.ShutdownTimeout.String())
	// The server's own bound plus room for the other hooks (telemetry flush,
	// store close).
	stopCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout+10*time.Second)
	defer cancel()
	if err := fxApp.Stop(stopCtx); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// newLogger is the service's structured log: JSON lines on w.
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// serveOptions is the whole graph of `executor serve`; provider is the
// provider's module, which tests replace with a fake.
func serveOptions(cfg config.Config, log *slog.Logger, provider fx.Option) fx.Option {
	return fx.Options(
		fx.WithLogger(func() fxevent.Logger {
			l := &fxevent.SlogLogger{Logger: log.With("component", "fx")}
			l.UseLogLevel(slog.LevelDebug) // the graph's events are noise at info
			return l
		}),
		configModule(cfg, log),
		telemetryModule,
		storeModule,
		provider,
		fx.Decorate(decorateProvider),
		checkpointModule,
		serviceModule,
		reaperModule,
		serverModule,
	)
}
