package csitest

import (
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
)

// Calls records the requests of one RPC of a fake plugin, and when each
// came, and decides their errors: Queue's first, in order (a nil entry
// succeeds), then Always (nil: success).
type Calls[R proto.Message] struct {
	Queue  []error
	Always error

	mu       sync.Mutex
	requests []R
	times    []time.Time
}

// Take records req and returns the error its call answers.
func (c *Calls[R]) Take(req R) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, proto.Clone(req).(R))
	c.times = append(c.times, time.Now())
	err := c.Always
	if len(c.Queue) > 0 {
		err, c.Queue = c.Queue[0], c.Queue[1:]
	}
	return err
}

// Answer makes the calls after the queued ones fail with err (nil:
// succeed).
func (c *Calls[R]) Answer(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Always = err
}

// Requests are the requests so far, in order.
func (c *Calls[R]) Requests() []R {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.requests)
}

// Times are when each request came.
func (c *Calls[R]) Times() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.times)
}
