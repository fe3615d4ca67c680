// Package worker works the items of a client-go rate-limited work queue
// the way every controller here does: an item that fails is requeued with
// backoff, one that succeeds is forgotten. It owns that loop only; what
// an item means, what is logged and when the queue shuts down are the
// caller's.
package worker

import (
	"context"

	"k8s.io/client-go/util/workqueue"
)

// Run works q's items with work until q shuts down, telling failed about
// each error before the item is requeued.
func Run[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T],
	work func(context.Context, T) error, failed func(context.Context, T, error)) {
	for next(ctx, q, work, failed) {
	}
}

func next[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T],
	work func(context.Context, T) error, failed func(context.Context, T, error)) bool {
	item, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(item)
	if err := work(ctx, item); err != nil {
		failed(ctx, item, err)
		q.AddRateLimited(item)
		return true
	}
	q.Forget(item)
	return true
}
