package plugin

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const (
	volumePrefix   = "zpv-"
	snapshotPrefix = "zps-"
	maxIDLength    = 128
	maxNameLength  = 128
	// tokenPrefix marks list tokens, so a token this driver did not issue
	// is told apart from an ID (CSI: invalid starting_token is ABORTED).
	tokenPrefix = "zp1:"
)

// idRE admits IDs that are safe as a single path element: no separator,
// no leading dot, so never "." or "..".
var idRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

var lastStamp atomic.Int64

// newID returns a unique ID that sorts after every ID issued before it
// by this process, so that list pagination sees new objects at the end.
func newID(prefix string) string {
	now := time.Now().UnixNano()
	for {
		last := lastStamp.Load()
		if now <= last {
			now = last + 1
		}
		if lastStamp.CompareAndSwap(last, now) {
			break
		}
	}
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return fmt.Sprintf("%s%016x%s", prefix, now, hex.EncodeToString(r[:]))
}

// checkID validates an ID given by the CO. Well-formed IDs that are
// unknown are NOT_FOUND later; malformed ones could never have been
// issued and are rejected here, before anything looks them up or turns
// them into paths.
func checkID(field, id string) error {
	switch {
	case id == "":
		return status.Errorf(codes.InvalidArgument, "%s is required", field)
	case len(id) > maxIDLength || !idRE.MatchString(id):
		return status.Errorf(codes.InvalidArgument, "%s %q is malformed: at most %d characters of [A-Za-z0-9._-], not starting with '.'", field, truncate(id), maxIDLength)
	}
	return nil
}

func checkName(field, name string) error {
	switch {
	case name == "":
		return status.Errorf(codes.InvalidArgument, "%s is required", field)
	case len(name) > maxNameLength:
		return status.Errorf(codes.InvalidArgument, "%s is %d characters long, more than %d", field, len(name), maxNameLength)
	}
	return checkText(field, name)
}

// checkText refuses control characters, NUL above all, in a string the CO
// gives. A NUL makes the kernel refuse a path (EINVAL, which would surface
// as INTERNAL) and would cut a name where C code reads it; none of them
// belongs in a name, key or path the driver stores, logs or mounts.
func checkText(field, s string) error {
	i := strings.IndexFunc(s, unicode.IsControl)
	if i < 0 {
		return nil
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return status.Errorf(codes.InvalidArgument, "%s %q contains the control character %U", field, truncate(s), r)
}

// checkMap applies checkText to the keys and values of a map the CO gives
// (parameters, volume_context, publish_context), in key order so the
// error is the same on every call.
func checkMap(field string, m map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := checkText(field+" key", k); err != nil {
			return err
		}
		if err := checkText(fmt.Sprintf("%s[%q]", field, k), m[k]); err != nil {
			return err
		}
	}
	return nil
}

// paramPrefix is the prefix of the driver's own parameters. Keys in other
// prefixes, such as the csi.storage.k8s.io/ keys a CO adds, are not the
// driver's to judge.
const paramPrefix = DefaultName + "/"

// checkParameters validates parameters: no control characters, and no key
// in the driver's own prefix beyond the known ones, so that a misspelt
// parameter fails instead of silently doing nothing (spec: General Error
// Table, "Invalid or unsupported field in the request").
func checkParameters(params map[string]string, known ...string) error {
	if err := checkMap("parameters", params); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if strings.HasPrefix(k, paramPrefix) && !slices.Contains(known, k) {
			return status.Errorf(codes.InvalidArgument, "unknown parameter %s: %s", k, knownParameters(known))
		}
	}
	return nil
}

func knownParameters(known []string) string {
	if len(known) == 0 {
		return "this call takes no " + paramPrefix + " parameters"
	}
	return "this call knows " + strings.Join(known, ", ")
}

func encodeToken(id string) string { return tokenPrefix + id }

func decodeToken(token string) (string, error) {
	if token == "" {
		return "", nil
	}
	id, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok || checkID("starting_token", id) != nil {
		return "", status.Errorf(codes.Aborted, "starting_token %q was not issued by this driver", truncate(token))
	}
	return id, nil
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
