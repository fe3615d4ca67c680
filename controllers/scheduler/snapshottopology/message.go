package snapshottopology

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// maxReason bounds every reason this plugin returns. Reasons end up in
// pod conditions and events, and a nodeAffinity may hold a thousand
// terms; the first few say enough to act on.
const maxReason = 512

// maxTermsShown is how many terms a reason spells out.
const maxTermsShown = 4

// describe renders terms as [{key in [v1 v2], key2 in [v3]} ...],
// listing at most maxTermsShown of them.
func describe(terms []v1.TopologySelectorTerm) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, t := range terms {
		if i == maxTermsShown {
			fmt.Fprintf(&b, " ... %d more", len(terms)-i)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('{')
		for j, e := range t.MatchLabelExpressions {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s in %v", e.Key, e.Values)
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.String()
}

// deletionNote tells, inside a reason, that the snapshot or its content
// is being deleted: the pod waits on objects that are going away, which
// the user should know. "" when neither is.
func deletionNote(deleting string) string {
	if deleting == "" {
		return ""
	}
	return "; " + deleting + " being deleted"
}

// bounded cuts s to maxReason bytes on a rune boundary, marking the cut.
func bounded(s string) string {
	if len(s) <= maxReason {
		return s
	}
	const mark = "..."
	cut := maxReason - len(mark)
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
