// Package app is the executor's application service: ports.Service over a
// ports.Provider and a ports.TokenStore. It sits between the driving adapter
// (the HTTP API) and the driven ones, and imports only core and ports, so
// any provider and any store fit.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/executor"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// restoreTimeout bounds putting a session's previous record back after a
// failed provision, which runs even when the caller's context is done.
const restoreTimeout = 10 * time.Second

// Service implements ports.Service.
type Service struct {
	provider ports.Provider
	store    ports.TokenStore
	defaults executor.Defaults
	locks    locks
	memo     memo
}

var _ ports.Service = (*Service)(nil)

// New returns a Service that provisions with provider and keeps session
// records and gate tokens in store (its TokenMinter and GateTokenRevoker).
func New(provider ports.Provider, store ports.TokenStore, d executor.Defaults) *Service {
	return &Service{provider: provider, store: store, defaults: d}
}

// Provision builds the session's Spec (executor.BuildSpec), stores its record
// — before the provider runs, because the gate fetches it as it starts — and
// provisions. Provisions and deletes of one session are serialised (locks.go:
// across executors when the store can). A failed provision puts the previous record back (or removes the
// new one), so a refused re-provision (ErrSpecMismatch) changes nothing.
func (s *Service) Provision(ctx context.Context, sid domain.ID, req executor.SessionRequest) (ports.SessionInfo, error) {
	spec, rec, err := executor.BuildSpec(sid, req, s.defaults)
	if err != nil {
		return ports.SessionInfo{}, err
	}
	if spec.Gate != nil {
		spec.Gate.TokenMinter = s.store
	}
	spec.GateTokenRevoker = s.store
	unlock, err := s.locks.lock(ctx, s.store, sid)
	if err != nil {
		return ports.SessionInfo{}, fmt.Errorf("provision %s: %w", sid, err)
	}
	defer unlock()
	prev, hadPrev, err := s.previous(ctx, sid)
	if err != nil {
		return ports.SessionInfo{}, err
	}
	if err := s.store.PutSession(ctx, rec); err != nil {
		return ports.SessionInfo{}, fmt.Errorf("provision %s: store the session: %w", sid, err)
	}
	sb, err := s.provider.Provision(ctx, spec)
	if err != nil {
		return ports.SessionInfo{}, errors.Join(err, s.restore(ctx, sid, prev, hadPrev))
	}
	info := ports.SessionInfo{
		ID: sid, SandboxID: sb.ID(), Image: spec.Image, Workdir: spec.Workdir,
		Networking: networking(rec), Gated: spec.Gate != nil, State: ports.StateRunning,
	}
	s.memo.put(info)
	return info, nil
}

// previous returns the session's stored record, if any. One that no longer
// decrypts (the key changed) is as good as none: it could not be served to a
// gate either.
func (s *Service) previous(ctx context.Context, sid domain.ID) (session.Session, bool, error) {
	rec, err := s.store.GetSession(ctx, sid)
	switch {
	case err == nil:
		return rec, true, nil
	case errors.Is(err, session.ErrNotFound), errors.Is(err, session.ErrDecrypt):
		return session.Session{}, false, nil
	}
	return session.Session{}, false, fmt.Errorf("provision %s: read the session: %w", sid, err)
}

// restore undoes Provision's PutSession after the provider failed.
func (s *Service) restore(ctx context.Context, sid domain.ID, prev session.Session, hadPrev bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreTimeout)
	defer cancel()
	var err error
	if hadPrev {
		err = s.store.PutSession(ctx, prev)
	} else {
		err = s.store.DeleteSession(ctx, sid)
	}
	if err != nil {
		return fmt.Errorf("provision %s: restore the previous session record: %w", sid, err)
	}
	return nil
}

// Get reports a running session (Provider.Attach).
func (s *Service) Get(ctx context.Context, sid domain.ID) (ports.SessionInfo, error) {
	if err := checkID(sid); err != nil {
		return ports.SessionInfo{}, err
	}
	return s.info(ctx, sid)
}

// info is Get without the id check: Attach, then what the store and the
// memo know.
func (s *Service) info(ctx context.Context, sid domain.ID) (ports.SessionInfo, error) {
	sb, err := s.provider.Attach(ctx, sid)
	if err != nil {
		return ports.SessionInfo{}, err
	}
	info, ok := s.memo.get(sid)
	if !ok {
		info = ports.SessionInfo{ID: sid}
	}
	info.SandboxID, info.State = sb.ID(), ports.StateRunning
	rec, err := s.store.GetSession(ctx, sid)
	switch {
	case err == nil:
		info.Networking = networking(rec)
		info.Gated = s.defaults.GateImage != "" && (rec.Networking.Limited() || len(rec.Credentials) > 0)
	case !errors.Is(err, session.ErrNotFound) && !errors.Is(err, session.ErrDecrypt):
		return ports.SessionInfo{}, fmt.Errorf("session %s: %w", sid, err)
	}
	return info, nil
}

// Delete revokes the gate token, reaps the sandbox and removes the record,
// in that order, so the gate stops authenticating before anything else goes
// and the credentials are removed only once nothing can use them.
func (s *Service) Delete(ctx context.Context, sid domain.ID, checkpoint bool) error {
	if err := checkID(sid); err != nil {
		return err
	}
	if checkpoint {
		return fmt.Errorf("delete %s with a checkpoint: %w", sid, executor.ErrNotImplemented)
	}
	unlock, err := s.locks.lock(ctx, s.store, sid)
	if err != nil {
		return fmt.Errorf("delete %s: %w", sid, err)
	}
	defer unlock()
	if err := s.store.Revoke(ctx, sid); err != nil {
		return fmt.Errorf("delete %s: revoke the gate token: %w", sid, err)
	}
	if err := s.provider.Reap(ctx, sid); err != nil {
		return fmt.Errorf("delete %s: %w", sid, err)
	}
	s.memo.drop(sid)
	if err := s.store.DeleteSession(ctx, sid); err != nil {
		return fmt.Errorf("delete %s: remove the session record: %w", sid, err)
	}
	return nil
}

// List reports every session with labelled assets on the endpoint
// (Provider.Owned), each running or stopped.
func (s *Service) List(ctx context.Context) ([]ports.SessionInfo, error) {
	ids, err := s.provider.Owned(ctx)
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	out := make([]ports.SessionInfo, 0, len(ids))
	for _, sid := range ids {
		info, err := s.info(ctx, sid)
		if errors.Is(err, sandbox.ErrNotFound) {
			info, err = ports.SessionInfo{ID: sid, State: ports.StateStopped}, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// Exec runs one command in the session's sandbox.
func (s *Service) Exec(ctx context.Context, sid domain.ID, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if err := executor.CheckExec(req); err != nil {
		return sandbox.ExecResult{}, err
	}
	sb, err := s.attach(ctx, sid)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	return sb.Exec(ctx, req)
}

// ReadFile streams a file out of the session's sandbox.
func (s *Service) ReadFile(ctx context.Context, sid domain.ID, path string, maxBytes int64) (io.ReadCloser, int64, error) {
	if err := executor.CheckPath("path", path); err != nil {
		return nil, 0, err
	}
	if maxBytes <= 0 {
		return nil, 0, fmt.Errorf("%w: max_bytes: must be positive, got %d", executor.ErrInvalidRequest, maxBytes)
	}
	sb, err := s.attach(ctx, sid)
	if err != nil {
		return nil, 0, err
	}
	return sb.ReadFileStream(ctx, path, maxBytes)
}

// WriteFile streams size bytes from src into a file of the session's sandbox.
func (s *Service) WriteFile(ctx context.Context, sid domain.ID, path string, src io.Reader, size int64) error {
	if err := executor.CheckPath("path", path); err != nil {
		return err
	}
	if err := sandbox.CheckWriteSize(size); err != nil {
		return fmt.Errorf("%w: size: %w", executor.ErrInvalidRequest, err)
	}
	sb, err := s.attach(ctx, sid)
	if err != nil {
		return err
	}
	return sb.WriteFileStream(ctx, path, src, size)
}

// WriteFiles writes a batch into the session's sandbox.
func (s *Service) WriteFiles(ctx context.Context, sid domain.ID, files []sandbox.FileWrite) error {
	if err := executor.CheckBatch(files); err != nil {
		return err
	}
	sb, err := s.attach(ctx, sid)
	if err != nil {
		return err
	}
	return sb.WriteFiles(ctx, files)
}

// Export streams root out of the session's sandbox as a tar.
func (s *Service) Export(ctx context.Context, sid domain.ID, root string) (io.ReadCloser, error) {
	if err := checkID(sid); err != nil {
		return nil, err
	}
	if err := executor.CheckExportRoot(root); err != nil {
		return nil, err
	}
	return s.provider.Export(ctx, sid, root)
}

// attach checks the id and finds the session's running sandbox.
func (s *Service) attach(ctx context.Context, sid domain.ID) (ports.Sandbox, error) {
	if err := checkID(sid); err != nil {
		return nil, err
	}
	return s.provider.Attach(ctx, sid)
}

func checkID(sid domain.ID) error {
	if err := domain.ValidateSessionID(sid); err != nil {
		return fmt.Errorf("%w: id: %w", executor.ErrInvalidRequest, err)
	}
	return nil
}

func networking(rec session.Session) *domain.Networking {
	n := rec.Networking.Normalize()
	n.AllowedHosts = slices.Clone(n.AllowedHosts)
	return &n
}
