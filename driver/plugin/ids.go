package plugin

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

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
	return nil
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
