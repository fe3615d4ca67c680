package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
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
	return r.mutate(resp)
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
func (r *rule) mutate(resp any) (any, error) {
	msg, ok := resp.(proto.Message)
	if !ok {
		return nil, status.Errorf(codes.Internal, "fault rule %q: response %T is not a protobuf message", r.name, resp)
	}
	if !msg.ProtoReflect().IsValid() {
		return resp, nil // nil response: nothing to rewrite
	}
	out, err := decodedCopy(msg)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "fault rule %q: copying the response: %v", r.name, err)
	}
	m := out.ProtoReflect()
	for _, p := range r.clear {
		if err := clearPath(m, p); err != nil {
			return nil, r.pathError(p, err)
		}
	}
	for _, op := range r.set {
		if err := setPath(m, op.path, op.value); err != nil {
			return nil, r.pathError(op.path, err)
		}
	}
	return out, nil
}

// decodedCopy copies msg through its wire form rather than with
// proto.Clone: the driver sends list responses as pre-encoded bytes in
// unknown fields (driver/plugin/entries.go), which a clone would keep
// where no path reaches them, so a rule would seem to fire and change
// nothing.
func decodedCopy(msg proto.Message) (proto.Message, error) {
	data, err := proto.Marshal(msg)
	if err != nil {
		return nil, err
	}
	out := msg.ProtoReflect().New().Interface()
	return out, proto.Unmarshal(data, out)
}

// pathError reports a path that does not fit the response as Internal (a
// misconfigured rule must not look like a passing call). Parse refuses such
// paths for every method a rule matches, so this is only a backstop.
func (r *rule) pathError(p fieldPath, err error) error {
	return status.Errorf(codes.Internal, "fault rule %q: mutate path %q: %v", r.name, p.text, err)
}

// lookup resolves a path against a message type. Every element but the
// last must be a singular message field; the last may be anything, so a
// repeated or map field can only be cleared or set as a whole.
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

func setPath(m protoreflect.Message, p fieldPath, val Value) error {
	fds, err := lookup(m.Descriptor(), p)
	if err != nil {
		return err
	}
	last := len(fds) - 1
	for _, fd := range fds[:last] {
		m = m.Mutable(fd).Message()
	}
	fd := fds[last]
	if fd.IsList() || fd.IsMap() || fd.Message() != nil {
		return setJSON(m, fd, val.Text)
	}
	v, err := parseScalar(fd, val)
	if err != nil {
		return err
	}
	m.Set(fd, v)
	return nil
}

// setJSON sets a message, repeated or map field of m from the field's value
// in protojson form. protojson only decodes whole messages, so the value is
// wrapped as {"<json name>": text}, decoded into a fresh message of m's type
// and the one field is copied over. Unknown fields are errors, so a typo in
// the value fails instead of silently setting less than intended.
func setJSON(m protoreflect.Message, fd protoreflect.FieldDescriptor, text string) error {
	name, err := json.Marshal(fd.JSONName())
	if err != nil {
		return err
	}
	tmp := m.Type().New()
	doc := fmt.Sprintf("{%s: %s}", name, text)
	if err := (protojson.UnmarshalOptions{DiscardUnknown: false}).Unmarshal([]byte(doc), tmp.Interface()); err != nil {
		// The error's line:column count from the start of the wrapper.
		return fmt.Errorf("value %s for %s (%s), decoded as {%s: value}: %w", text, fd.FullName(), typeName(fd), name, err)
	}
	if !json.Valid([]byte(text)) {
		// Text such as `[], "other": 1` decodes once wrapped, but it is not
		// one JSON value and must not reach other fields.
		return fmt.Errorf("value %s for %s (%s): not a single JSON value", text, fd.FullName(), typeName(fd))
	}
	if !tmp.Has(fd) {
		m.Clear(fd) // [], {} for a map, or null
		return nil
	}
	m.Set(fd, tmp.Get(fd))
	return nil
}

// typeName describes the type of fd for error messages.
func typeName(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.IsMap():
		return fmt.Sprintf("map<%s, %s>", typeName(fd.MapKey()), typeName(fd.MapValue()))
	case fd.IsList():
		return "repeated " + elemName(fd)
	}
	return elemName(fd)
}

func elemName(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.Message() != nil:
		return string(fd.Message().FullName())
	case fd.Enum() != nil:
		return string(fd.Enum().FullName())
	}
	return fd.Kind().String()
}

// parseScalar converts the text of a set value to the kind of fd.
func parseScalar(fd protoreflect.FieldDescriptor, val Value) (protoreflect.Value, error) {
	if val.Structured {
		return protoreflect.Value{}, fmt.Errorf("value %s for %s (%s): a YAML list or map only fits a message, repeated or map field", val.Text, fd.FullName(), fd.Kind())
	}
	v, err := parseKind(fd, val.Text)
	if err != nil {
		return protoreflect.Value{}, fmt.Errorf("value %q for %s (%s): %w", val.Text, fd.FullName(), fd.Kind(), err)
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
