package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// TestRun: a failing item is reported and retried with backoff until it
// succeeds, then forgotten; Run returns when the queue shuts down.
func TestRun(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
	var worked, failed []string
	work := func(_ context.Context, item string) error {
		worked = append(worked, item)
		if len(worked) < 3 {
			return errors.New("not yet")
		}
		q.ShutDown()
		return nil
	}
	onFail := func(_ context.Context, item string, err error) {
		if q.NumRequeues(item) != len(failed) {
			t.Errorf("failed saw %d requeues before the requeue, want %d", q.NumRequeues(item), len(failed))
		}
		failed = append(failed, item)
	}
	q.Add("a")
	done := make(chan struct{})
	go func() { Run(context.Background(), q, work, onFail); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the queue shut down")
	}
	if len(worked) != 3 || len(failed) != 2 {
		t.Errorf("worked %v, failed %v; want 3 attempts, 2 failures", worked, failed)
	}
	if n := q.NumRequeues("a"); n != 0 {
		t.Errorf("after success the item has %d requeues, want 0 (forgotten)", n)
	}
}
