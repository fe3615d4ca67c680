package bootstrap

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// CacheSyncTimeout bounds the wait for a component's informer caches: an
// API server that cannot list a resource (missing CRD, missing RBAC) then
// stops the start with an error naming it, instead of a silent hang.
const CacheSyncTimeout = 5 * time.Minute

// CacheSyncer is an informer factory, client-go's or a generated one.
type CacheSyncer interface {
	WaitForCacheSync(stop <-chan struct{}) map[reflect.Type]bool
}

// WaitForCacheSync waits up to timeout for the caches of the informers
// started from each factory, and names those that did not fill. It
// returns ctx's error when ctx ended first.
func WaitForCacheSync(ctx context.Context, timeout time.Duration, factories ...CacheSyncer) error {
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var missing []string
	for _, f := range factories {
		for typ, ok := range f.WaitForCacheSync(waitCtx.Done()) {
			if !ok {
				missing = append(missing, typ.String())
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	slices.Sort(missing)
	return fmt.Errorf("informer caches did not sync within %v: %s", timeout, strings.Join(missing, ", "))
}

// Informers is an informer factory that starts the informers asked of it.
type Informers interface {
	CacheSyncer
	Start(stop <-chan struct{})
}

// StartInformers starts the informers asked of factory so far, until ctx
// ends, and waits for their caches as WaitForCacheSync does, within
// CacheSyncTimeout.
func StartInformers(ctx context.Context, factory Informers) error {
	factory.Start(ctx.Done())
	return WaitForCacheSync(ctx, CacheSyncTimeout, factory)
}
