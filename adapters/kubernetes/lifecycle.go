package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// Attach implements ports.Provider: read-only, it never creates, waits or
// heals (C-ATT-1). Only a ready pod is a sandbox a handle can use.
func (p *Provider) Attach(ctx context.Context, sid domain.ID) (ports.Sandbox, error) {
	if err := sid.Required(); err != nil {
		return nil, fmt.Errorf("attach: session_id: %w", err)
	}
	pod, err := p.getOwned(ctx, sid)
	if err != nil {
		return nil, err
	}
	if !ready(pod) {
		return nil, fmt.Errorf("attach %s: sandbox pod is not ready: %w", sid, sandbox.ErrNotFound)
	}
	return p.handle(pod, pod.Annotations[annotationWorkdir]), nil
}

// getOwned gets the session's pod, refusing a foreign holder of the name
// (C-PROV-5); a missing pod is sandbox.ErrNotFound.
func (p *Provider) getOwned(ctx context.Context, sid domain.ID) (*corev1.Pod, error) {
	name := PodName(sid.String())
	pod, err := p.cli.CoreV1().Pods(p.opts.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, translate(err, "get pod "+name)
	}
	if !owned(pod, sid.String()) {
		return nil, fmt.Errorf("pod %s: %w", name, errForeign)
	}
	return pod, nil
}

// Owned implements ports.Provider: the distinct session ids on every
// labelled pod of the namespace that also carries Options.Labels, whatever
// its phase. A label value that is not a valid session id (someone else's
// pod) is skipped.
func (p *Provider) Owned(ctx context.Context) ([]domain.ID, error) {
	selector := labels.SelectorFromSet(p.opts.Labels).String()
	if selector != "" {
		selector = "," + selector
	}
	list, err := p.cli.CoreV1().Pods(p.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sandbox.LabelSession + selector})
	if err != nil {
		return nil, translate(err, "list pods")
	}
	var ids []domain.ID
	for _, pod := range list.Items {
		id, err := domain.ParseSessionID(pod.Labels[sandbox.LabelSession])
		if err == nil && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Reap implements ports.Provider (C-REAP-1): revoke first, then delete every
// pod carrying the session's label — selected by label, never by name —
// each under a UID precondition, and wait until the API has none left. It
// is the one owner of revoke-before-reap (ports.Provider.Reap).
func (p *Provider) Reap(ctx context.Context, sid domain.ID) error {
	if err := sid.Required(); err != nil {
		return fmt.Errorf("reap: session_id: %w", err)
	}
	if p.opts.Tokens != nil {
		if err := p.opts.Tokens.Revoke(ctx, sid); err != nil {
			return fmt.Errorf("reap %s: revoke gate token (nothing removed): %w", sid, err)
		}
	}
	p.agents.Forget(sid.String(), "")
	sel := metav1.ListOptions{LabelSelector: sandbox.LabelSession + "=" + sid.String()}
	pods := p.cli.CoreV1().Pods(p.opts.Namespace)
	list, err := pods.List(ctx, sel)
	if err != nil {
		return translate(err, "list pods of "+sid.String())
	}
	for i := range list.Items {
		if err := p.deleteNow(ctx, &list.Items[i]); err != nil {
			return err
		}
	}
	return p.waitGone(ctx, func(ctx context.Context) (bool, error) {
		left, err := pods.List(ctx, sel)
		if err != nil {
			return false, translate(err, "list pods of "+sid.String())
		}
		return len(left.Items) == 0, nil
	})
}

// deleteNow deletes exactly this pod — the UID precondition keeps a newer
// pod of the same name safe — without a grace period: the keep-alive
// ignores SIGTERM, so a grace period would only be waited out. Grace 0 is a
// force delete to the API server: the object goes at once, before the
// kubelet has confirmed that the containers stopped (it kills them when it
// notices), so "gone" here is the API object, not the processes
// (docs/DIVERGENCES.md). Gone already, or replaced by a newer pod (409 on
// the precondition), is success.
func (p *Provider) deleteNow(ctx context.Context, pod *corev1.Pod) error {
	zero := int64(0)
	uid := pod.UID
	err := p.cli.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil
	}
	return translate(err, "delete pod "+pod.Name)
}

// deletePod deletes pod and waits until that pod (by UID) is gone.
func (p *Provider) deletePod(ctx context.Context, pod *corev1.Pod) error {
	if sid := pod.Labels[sandbox.LabelSession]; sid != "" {
		p.agents.Forget(sid, string(pod.UID))
	}
	if err := p.deleteNow(ctx, pod); err != nil {
		return err
	}
	return p.waitGone(ctx, func(ctx context.Context) (bool, error) {
		got, err := p.cli.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, translate(err, "get pod "+pod.Name)
		}
		return got.UID != pod.UID, nil
	})
}

// waitGone polls gone until it reports true, bounded by RemoveTimeout.
func (p *Provider) waitGone(ctx context.Context, gone func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.RemoveTimeout)
	defer cancel()
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		ok, err := gone(ctx)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for deletion: %w", ctx.Err())
		case <-time.After(delay):
		}
	}
}
