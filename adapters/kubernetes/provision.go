package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// raceWait bounds how long a provision that lost the name race (or found a
// pod on its way out) keeps trying to adopt or create.
const raceWait = 30 * time.Second

// errNoTokens refuses a gated spec on a provider built without
// Options.Tokens: it could not mint the gate's token.
var errNoTokens = errors.New("a gated sandbox needs gate tokens, and this provider has none (Options.Tokens)")

// Provision implements ports.Provider (C-PROV-1..5, 7, 8; B-6). Everything
// that can be refused is refused before the first API call (C-VAL-1).
func (p *Provider) Provision(ctx context.Context, spec sandbox.Spec) (ports.Sandbox, error) {
	spec, err := sandbox.ResolveSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	if spec.Gate != nil && p.opts.Tokens == nil {
		return nil, fmt.Errorf("provision %s: gate: %w", spec.SessionID, errNoTokens)
	}
	if spec.Gate == nil && spec.Networking.Limited() && p.opts.NetsetupImage == "" {
		return nil, fmt.Errorf("provision %s: limited networking without a gate needs Options.NetsetupImage", spec.SessionID)
	}
	if spec.Hardening.PidsLimit > 0 {
		p.pidsOnce.Do(func() {
			p.opts.Logger.Warn("kubernetes provider ignores hardening.pids_limit: a pod has no per-container pids limit (docs/DIVERGENCES.md)")
		})
	}
	name := PodName(spec.SessionID.String())
	giveUp := time.Now().Add(raceWait)
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		sb, done, err := p.provisionOnce(ctx, spec, name)
		if err != nil || done {
			return sb, err
		}
		if time.Now().After(giveUp) {
			return nil, fmt.Errorf("provision %s: pod %s kept changing hands for %v", spec.SessionID, name, raceWait)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("provision %s: %w", spec.SessionID, ctx.Err())
		case <-time.After(delay):
		}
	}
}

// provisionOnce adopts the pod holding name, or creates one. done is false
// when the loop should look again: a lost create race, or a pod that was
// deleted (a dead one, or one on its way out) and whose name is not free yet.
func (p *Provider) provisionOnce(ctx context.Context, spec sandbox.Spec, name string) (_ ports.Sandbox, done bool, _ error) {
	pods := p.cli.CoreV1().Pods(p.opts.Namespace)
	pod, err := pods.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if err := p.checkIsolation(ctx, spec); err != nil {
			return nil, false, err
		}
		return p.create(ctx, spec)
	case err != nil:
		return nil, false, translate(err, "get pod "+name)
	}
	sid := spec.SessionID.String()
	if !owned(pod, sid) {
		return nil, false, fmt.Errorf("provision %s: pod %s: %w", sid, name, errForeign)
	}
	if pod.DeletionTimestamp != nil {
		return nil, false, nil // on its way out: wait until the name is free
	}
	if held(pod) {
		// A gated pod whose creator has not persisted its token yet; one
		// older than raceWait is what a crashed create left (nothing in it
		// ever ran): it is removed, and the loop creates afresh.
		if time.Since(pod.CreationTimestamp.Time) > raceWait {
			p.opts.Logger.Info("removing a gated pod whose token was never persisted", "session", sid)
			return nil, false, p.deletePod(ctx, pod)
		}
		return nil, false, nil
	}
	if dead(pod) {
		// restartPolicy Never makes Failed final; replacing it is the only
		// way the session gets a sandbox again (B-6).
		p.opts.Logger.Info("replacing a dead sandbox pod", "session", sid, "phase", string(pod.Status.Phase))
		return nil, false, p.deletePod(ctx, pod)
	}
	decision, err := sandbox.DecideAdoption(spec, observe(pod))
	if err != nil {
		return nil, false, fmt.Errorf("provision %s: %w", sid, err)
	}
	if decision.Action == sandbox.Rebuild {
		return nil, false, p.rebuild(ctx, spec, pod, decision)
	}
	pod, err = p.waitReady(ctx, pod)
	if errors.Is(err, errGone) {
		return nil, false, nil // its creator gave up on it: look again
	}
	if err != nil {
		return nil, false, fmt.Errorf("provision %s: adopted pod %s: %w", sid, name, err)
	}
	if err := p.retrustAfterRestart(ctx, pod, spec.Workdir); err != nil {
		return nil, false, fmt.Errorf("provision %s: %w", sid, err)
	}
	h := p.handle(pod, spec.Workdir)
	p.sweepOnce(ctx, h)
	return h, true, nil
}

// rebuild removes a pod of the wrong shape (a gated↔ungated reshape,
// C-GATE-3), revoking the session's token first when no new gate will
// replace it; the caller's loop then creates the requested shape.
func (p *Provider) rebuild(ctx context.Context, spec sandbox.Spec, pod *corev1.Pod, d sandbox.Adoption) error {
	sid := spec.SessionID
	p.opts.Logger.Info("rebuilding the session's sandbox pod", "session", sid.String(), "reason", d.Reason)
	if d.RevokeToken && p.opts.Tokens != nil {
		if err := p.opts.Tokens.Revoke(ctx, sid); err != nil {
			return fmt.Errorf("provision %s: revoke the gate token before the rebuild: %w", sid, err)
		}
	}
	return p.deletePod(ctx, pod)
}

// create creates the pod and waits until it is ready; a pod this call
// created that never gets ready is deleted before the error returns
// (C-PROV-8). done is false when a concurrent provisioner won the name.
func (p *Provider) create(ctx context.Context, spec sandbox.Spec) (_ ports.Sandbox, done bool, _ error) {
	want := podFor(spec, p.opts)
	var token string
	if spec.Gate != nil {
		token = p.opts.Tokens.Generate() // once per create attempt (C-GATE-2)
		gatePod(want, spec, token)
	}
	pod, err := p.cli.CoreV1().Pods(p.opts.Namespace).Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, translate(err, "create pod "+want.Name)
	}
	ready, err := p.startAndWait(ctx, spec, pod, token)
	if err != nil {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.opts.RemoveTimeout)
		defer cancel()
		if derr := p.deletePod(cleanup, pod); derr != nil {
			return nil, false, fmt.Errorf("provision %s: %w (and deleting the pod failed: %w)", spec.SessionID, err, derr)
		}
		return nil, false, fmt.Errorf("provision %s: %w", spec.SessionID, err)
	}
	return p.handle(ready, spec.Workdir), true, nil
}

// startAndWait waits until the pod this call created is ready. A gated pod
// is first released: its token persisted (only now that this call won the
// name, C-GATE-2), then its scheduling gate lifted.
func (p *Provider) startAndWait(ctx context.Context, spec sandbox.Spec, pod *corev1.Pod, token string) (*corev1.Pod, error) {
	if spec.Gate != nil {
		if err := p.opts.Tokens.Persist(ctx, spec.SessionID, token); err != nil {
			return nil, fmt.Errorf("persist gate token: %w", err)
		}
		released, err := p.release(ctx, pod)
		if err != nil {
			return nil, err
		}
		pod = released
	}
	ready, err := p.waitReady(ctx, pod)
	if err != nil && spec.Gate != nil && !errors.Is(err, sandbox.ErrGateUIDImage) {
		return nil, fmt.Errorf("%w; %s", err, p.gateLogs(pod))
	}
	return ready, err
}

// errNotReady: the pod did not become ready within the bound, or can never.
// errGone: it was deleted (or replaced) while this call waited.
var (
	errNotReady = errors.New("sandbox pod did not become ready")
	errGone     = errors.New("sandbox pod went away")
)

// waitReady polls pod until its sandbox container is ready, bounded by
// ReadyTimeout; a pod that is stuck (stuck) fails at once with the reason.
// Polling rather than a watch: a pod is ready in about a second, and a poll
// needs no watch permission or reconnect logic.
func (p *Provider) waitReady(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	bound, cancel := context.WithTimeout(ctx, p.opts.ReadyTimeout)
	defer cancel()
	pods := p.cli.CoreV1().Pods(p.opts.Namespace)
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		switch {
		case pod.UID != "" && pod.DeletionTimestamp != nil:
			return nil, fmt.Errorf("pod %s is being deleted: %w", pod.Name, errGone)
		case ready(pod):
			return pod, nil
		case refusedGateUID(pod):
			return nil, errGateUID(pod.Spec.Containers[0].Image)
		}
		if why := stuck(pod); why != "" {
			if class := stuckClass(pod); class != nil {
				return nil, fmt.Errorf("pod %s: %s: %w: %w", pod.Name, why, errNotReady, class)
			}
			return nil, fmt.Errorf("pod %s: %s: %w", pod.Name, why, errNotReady)
		}
		select {
		case <-bound.Done():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("pod %s: not ready after %v: %w", pod.Name, p.opts.ReadyTimeout, errNotReady)
		case <-time.After(delay):
		}
		got, err := pods.Get(bound, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("pod %s: %w", pod.Name, errGone)
		}
		if err != nil {
			if bound.Err() != nil {
				continue // reported by the select above
			}
			return nil, translate(err, "get pod "+pod.Name)
		}
		if got.UID != pod.UID {
			return nil, fmt.Errorf("pod %s was replaced while waiting: %w", pod.Name, errGone)
		}
		pod = got
	}
}
