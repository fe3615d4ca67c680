package csitest

import (
	"context"
	"slices"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// LostReply is a gRPC client interceptor for the tests of a lost reply:
// it keeps the requests of type R that Want admits (nil: all), with the
// code of each answer, and runs Edit once, when the first of them is
// answered DEADLINE_EXCEEDED, before the caller sees the error: so the
// edit lands between the attempt and its retry, as an admin's would.
type LostReply[R any] struct {
	Want func(R) bool
	Edit func(ctx context.Context, cc *grpc.ClientConn)

	mu       sync.Mutex
	requests []R
	codes    []codes.Code
	edited   bool
}

// Intercept is the grpc.UnaryClientInterceptor.
func (l *LostReply[R]) Intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	r, ok := req.(R)
	if !ok || (l.Want != nil && !l.Want(r)) {
		return err
	}
	l.mu.Lock()
	l.requests = append(l.requests, r)
	l.codes = append(l.codes, status.Code(err))
	first := !l.edited && status.Code(err) == codes.DeadlineExceeded
	l.edited = l.edited || first
	edit := l.Edit
	l.mu.Unlock()
	if first && edit != nil {
		// The caller's deadline has passed: the edit's calls get their own.
		edit(context.WithoutCancel(ctx), cc)
	}
	return err
}

// Requests are the kept requests, in order.
func (l *LostReply[R]) Requests() []R {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.requests)
}

// RetryFailed says whether a call after the first was answered with an
// error, the last one.
func (l *LostReply[R]) RetryFailed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.codes) >= 2 && l.codes[len(l.codes)-1] != codes.OK
}
