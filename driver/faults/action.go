package faults

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"k8s.io/klog/v2"
)

// act performs the rule's action on a call it fired on.
func (r *rule) act(ctx context.Context, req any, handler grpc.UnaryHandler) (any, error) {
	if r.delay > 0 {
		if err := sleep(ctx, r.delay); err != nil {
			return nil, err
		}
	}
	if r.code != codes.OK {
		if r.after {
			// Simulates a reply lost on the wire: the operation happened,
			// but the caller only sees the error and must retry idempotently.
			_, _ = handler(ctx, req)
		}
		return nil, status.Error(r.code, r.message)
	}
	resp, err := handler(ctx, req)
	if err != nil || (len(r.clear) == 0 && len(r.set) == 0) {
		return resp, err
	}
	return r.mutate(ctx, resp)
}

// sleep waits for d, giving up with the gRPC status of ctx's error when the
// caller's deadline or cancellation comes first, as a real server would.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

// mutate applies clear and then set to a copy of resp. The copy matters:
// handlers may return pointers into state they keep, which a fault must
// not corrupt.
func (r *rule) mutate(ctx context.Context, resp any) (any, error) {
	msg, ok := resp.(proto.Message)
	if !ok {
		return nil, status.Errorf(codes.Internal, "fault rule %q: response %T is not a protobuf message", r.name, resp)
	}
	if !msg.ProtoReflect().IsValid() {
		return resp, nil // nil response: nothing to rewrite
	}
	out := proto.Clone(msg)
	m := out.ProtoReflect()
	for _, p := range r.clear {
		if err := clearPath(m, p); err != nil {
			return nil, r.pathError(ctx, p, err)
		}
	}
	for _, op := range r.set {
		if err := setPath(m, op.path, op.value); err != nil {
			return nil, r.pathError(ctx, op.path, err)
		}
	}
	return out, nil
}

// pathError turns a path that does not fit the response into a visible
// Internal error (a misconfigured rule must not look like a passing call),
// logging it only the first time per rule and path.
func (r *rule) pathError(ctx context.Context, p fieldPath, err error) error {
	if _, seen := r.reported.LoadOrStore(p.text, struct{}{}); !seen {
		klog.FromContext(ctx).Error(err, "Fault rule cannot apply mutate path", "rule", r.name, "path", p.text)
	}
	return status.Errorf(codes.Internal, "fault rule %q: mutate path %q: %v", r.name, p.text, err)
}

// lookup resolves a path against a message type. Every element but the
// last must be a singular message field; the last may be anything, so a
// repeated or map field can only be cleared as a whole.
func lookup(md protoreflect.MessageDescriptor, p fieldPath) ([]protoreflect.FieldDescriptor, error) {
	fds := make([]protoreflect.FieldDescriptor, len(p.names))
	for i, name := range p.names {
		fd := md.Fields().ByName(name)
		if fd == nil {
			return nil, fmt.Errorf("%s has no field %q", md.FullName(), name)
		}
		fds[i] = fd
		if i == len(p.names)-1 {
			break
		}
		if fd.IsList() || fd.IsMap() || fd.Message() == nil {
			return nil, fmt.Errorf("%s is not a singular message field", fd.FullName())
		}
		md = fd.Message()
	}
	return fds, nil
}

func clearPath(m protoreflect.Message, p fieldPath) error {
	// Resolve against the type first so that an invalid path fails the
	// same way whether or not the response happens to populate it.
	fds, err := lookup(m.Descriptor(), p)
	if err != nil {
		return err
	}
	last := len(fds) - 1
	for _, fd := range fds[:last] {
		if !m.Has(fd) {
			return nil // nothing below an unset message
		}
		m = m.Mutable(fd).Message()
	}
	m.Clear(fds[last])
	return nil
}

func setPath(m protoreflect.Message, p fieldPath, raw string) error {
	fds, err := lookup(m.Descriptor(), p)
	if err != nil {
		return err
	}
	last := len(fds) - 1
	v, err := parseScalar(fds[last], raw)
	if err != nil {
		return err
	}
	for _, fd := range fds[:last] {
		m = m.Mutable(fd).Message()
	}
	m.Set(fds[last], v)
	return nil
}

// parseScalar converts the text of a set value to the kind of fd.
func parseScalar(fd protoreflect.FieldDescriptor, s string) (protoreflect.Value, error) {
	if fd.IsList() || fd.IsMap() || fd.Message() != nil {
		return protoreflect.Value{}, fmt.Errorf("%s is not a scalar field", fd.FullName())
	}
	v, err := parseKind(fd, s)
	if err != nil {
		return protoreflect.Value{}, fmt.Errorf("value %q for %s (%s): %w", s, fd.FullName(), fd.Kind(), err)
	}
	return v, nil
}

func parseKind(fd protoreflect.FieldDescriptor, s string) (protoreflect.Value, error) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(s), nil
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(s)), nil
	case protoreflect.BoolKind:
		b, err := strconv.ParseBool(s)
		return protoreflect.ValueOfBool(b), err
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByName(protoreflect.Name(s)); ev != nil {
			return protoreflect.ValueOfEnum(ev.Number()), nil
		}
		n, err := strconv.ParseInt(s, 10, 32)
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber(n)), err
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		n, err := strconv.ParseInt(s, 10, 32)
		return protoreflect.ValueOfInt32(int32(n)), err
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		n, err := strconv.ParseInt(s, 10, 64)
		return protoreflect.ValueOfInt64(n), err
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		n, err := strconv.ParseUint(s, 10, 32)
		return protoreflect.ValueOfUint32(uint32(n)), err
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		n, err := strconv.ParseUint(s, 10, 64)
		return protoreflect.ValueOfUint64(n), err
	case protoreflect.FloatKind:
		f, err := strconv.ParseFloat(s, 32)
		return protoreflect.ValueOfFloat32(float32(f)), err
	case protoreflect.DoubleKind:
		f, err := strconv.ParseFloat(s, 64)
		return protoreflect.ValueOfFloat64(f), err
	}
	return protoreflect.Value{}, fmt.Errorf("unsupported kind %s", fd.Kind())
}
