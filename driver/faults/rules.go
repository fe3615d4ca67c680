package faults

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
	"sigs.k8s.io/yaml"
)

const (
	// MaxRules bounds the size of a fault file; a test never needs more and
	// a runaway generator should fail at load rather than slow every call.
	MaxRules = 1000
	// MaxNameLength bounds rule names, which end up in logs and errors.
	MaxNameLength = 128

	// WhenBefore returns the fault without calling the handler.
	WhenBefore = "before"
	// WhenAfter calls the handler, discards its reply and returns the fault.
	WhenAfter = "after"
)

// RuleSet is the content of a fault file.
type RuleSet struct {
	Rules []Rule `json:"rules"`

	compiled []*rule
}

// Rule is one fault: when Match applies, Action is taken.
type Rule struct {
	Name   string `json:"name"`
	Match  Match  `json:"match"`
	Action Action `json:"action"`
}

// Match selects the calls a rule applies to. All set fields must match.
type Match struct {
	// RPC is a CSI method short name, a full method or a path.Match glob.
	RPC string `json:"rpc,omitempty"`
	// Segment key/values must all appear in one segment the call concerns.
	Segment map[string]string `json:"segment,omitempty"`
	// Name is a path.Match glob over the object names of the request.
	Name string `json:"name,omitempty"`
	// Nth is the 1-based matching call at which the rule starts firing.
	Nth int `json:"nth,omitempty"`
	// Count is how many times the rule fires; 0 means unlimited.
	Count int `json:"count,omitempty"`
}

// Action is what a firing rule does.
type Action struct {
	Code    string  `json:"code,omitempty"`
	Message string  `json:"message,omitempty"`
	When    string  `json:"when,omitempty"`
	Delay   string  `json:"delay,omitempty"`
	Mutate  *Mutate `json:"mutate,omitempty"`
	// Outage takes down every zone of Match.Segment (outage.go); it is
	// not a per-call fault and excludes the other actions.
	Outage bool `json:"outage,omitempty"`
}

// Mutate rewrites a successful response.
type Mutate struct {
	// Clear lists response field paths to clear.
	Clear []string `json:"clear,omitempty"`
	// Set maps response field paths to new values.
	Set map[string]Value `json:"set,omitempty"`
}

// Value is a value for Mutate.Set.
//
// A YAML string, number or bool is kept as its literal text, so that
// `capacity_bytes: 1` works without quoting and large integers are not
// rounded through float64. For a scalar field the text is parsed according
// to the field's kind; for a message, repeated or map field it must be the
// field's value in protojson form, e.g. '[{"segments": {"zone": "a"}}]'.
//
// A YAML list or map is kept as compact JSON text with Structured set. It
// can only be given to a message, repeated or map field, which Parse checks
// against the response of every method the rule matches.
type Value struct {
	Text       string
	Structured bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (v *Value) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	text := string(b)
	switch {
	case strings.HasPrefix(text, `"`):
		*v = Value{}
		return json.Unmarshal(b, &v.Text)
	case text == "true" || text == "false":
		*v = Value{Text: text}
		return nil
	case strings.HasPrefix(text, "[") || strings.HasPrefix(text, "{"):
		var buf bytes.Buffer
		if err := json.Compact(&buf, b); err != nil {
			return fmt.Errorf("set value: %w", err)
		}
		*v = Value{Text: buf.String(), Structured: true}
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil || n == "" {
		return fmt.Errorf("set value must be a string, number, bool, list or map, got %s", text)
	}
	*v = Value{Text: string(n)}
	return nil
}

// MarshalJSON implements json.Marshaler, so that a RuleSet can be written
// back in the form it was read.
func (v Value) MarshalJSON() ([]byte, error) {
	if v.Structured {
		return []byte(v.Text), nil
	}
	return json.Marshal(v.Text)
}

// rule is the validated, ready-to-evaluate form of a Rule.
type rule struct {
	name     string
	rpc      rpcMatcher
	segment  map[string]string
	nameGlob string
	nth      int
	count    int

	code    codes.Code // codes.OK: no error injected
	message string
	after   bool
	delay   time.Duration
	clear   []fieldPath
	set     []setOp // sorted by path so that overlapping paths apply deterministically
	// outage: the rule declares segment down and matches no call.
	outage bool
}

type fieldPath struct {
	text  string
	names []protoreflect.Name
}

type setOp struct {
	path  fieldPath
	value Value
}

// Parse decodes and validates a fault file. Unknown fields are rejected so
// that a misspelt key cannot silently disable part of a rule.
func Parse(data []byte) (*RuleSet, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		// Usually a file caught mid-rewrite; loading it would silently drop
		// every fault, so an explicit "rules: []" is required instead.
		return nil, errors.New(`empty file; use "rules: []" for no rules`)
	}
	rs := &RuleSet{}
	if err := yaml.UnmarshalStrict(data, rs); err != nil {
		return nil, fmt.Errorf("decoding YAML: %w", err)
	}
	if len(rs.Rules) > MaxRules {
		return nil, fmt.Errorf("rules: %d rules, at most %d allowed", len(rs.Rules), MaxRules)
	}
	seen := make(map[string]int, len(rs.Rules))
	for idx := range rs.Rules {
		spec := &rs.Rules[idx]
		r, err := compile(spec)
		if err != nil {
			return nil, fmt.Errorf("rules[%d] %q: %w", idx, spec.Name, err)
		}
		if prev, dup := seen[r.name]; dup {
			return nil, fmt.Errorf("rules[%d] %q: name: duplicate of rules[%d]", idx, spec.Name, prev)
		}
		seen[r.name] = idx
		rs.compiled = append(rs.compiled, r)
	}
	return rs, nil
}

func compile(spec *Rule) (*rule, error) {
	switch {
	case spec.Name == "":
		return nil, errors.New("name: required")
	case len(spec.Name) > MaxNameLength:
		return nil, fmt.Errorf("name: longer than %d characters", MaxNameLength)
	}
	r := &rule{name: spec.Name}
	if spec.Action.Outage {
		return r, r.compileOutage(spec)
	}
	if err := r.compileMatch(&spec.Match); err != nil {
		return nil, err
	}
	if err := r.compileAction(&spec.Action); err != nil {
		return nil, err
	}
	if err := r.checkMutate(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *rule) compileMatch(m *Match) error {
	rpc, err := compileRPC(m.RPC)
	if err != nil {
		return fmt.Errorf("match.rpc: %w", err)
	}
	r.rpc = rpc
	for k := range m.Segment {
		if k == "" {
			return errors.New("match.segment: empty topology key")
		}
	}
	r.segment = m.Segment
	if _, err := path.Match(m.Name, ""); err != nil {
		return fmt.Errorf("match.name: %q: %w", m.Name, err)
	}
	r.nameGlob = m.Name
	if m.Nth < 0 {
		return fmt.Errorf("match.nth: %d, must be >= 1", m.Nth)
	}
	r.nth = max(m.Nth, 1)
	if m.Count < 0 {
		return fmt.Errorf("match.count: %d, must be >= 0", m.Count)
	}
	r.count = m.Count
	return nil
}

func (r *rule) compileAction(a *Action) error {
	hasCode, hasDelay, hasMutate := a.Code != "", a.Delay != "", a.Mutate != nil
	switch {
	case !hasCode && !hasDelay && !hasMutate:
		return errors.New("action: one of code, delay, mutate or outage is required")
	case hasCode && hasMutate:
		return errors.New("action: code and mutate are mutually exclusive")
	}
	if err := r.compileCode(a); err != nil {
		return err
	}
	if hasDelay {
		d, err := time.ParseDuration(a.Delay)
		if err != nil {
			return fmt.Errorf("action.delay: %w", err)
		}
		if d <= 0 {
			return fmt.Errorf("action.delay: %s, must be positive", a.Delay)
		}
		r.delay = d
	}
	if hasMutate {
		return r.compileMutate(a.Mutate)
	}
	return nil
}

func (r *rule) compileCode(a *Action) error {
	if a.Code == "" {
		// message and when only make sense for an injected error; reject them
		// rather than let the author believe they have an effect.
		if a.Message != "" {
			return errors.New("action.message: only valid with action.code")
		}
		if a.When != "" {
			return errors.New("action.when: only valid with action.code")
		}
		return nil
	}
	code, err := parseCode(a.Code)
	if err != nil {
		return fmt.Errorf("action.code: %w", err)
	}
	r.code = code
	r.message = a.Message
	if r.message == "" {
		r.message = "injected fault " + r.name
	}
	switch a.When {
	case "", WhenBefore:
	case WhenAfter:
		r.after = true
	default:
		return fmt.Errorf("action.when: %q, must be %q or %q", a.When, WhenBefore, WhenAfter)
	}
	return nil
}

func (r *rule) compileMutate(m *Mutate) error {
	if len(m.Clear) == 0 && len(m.Set) == 0 {
		return errors.New("action.mutate: clear or set is required")
	}
	for idx, text := range m.Clear {
		p, err := parsePath(text)
		if err != nil {
			return fmt.Errorf("action.mutate.clear[%d]: %w", idx, err)
		}
		r.clear = append(r.clear, p)
	}
	for _, text := range slices.Sorted(maps.Keys(m.Set)) {
		p, err := parsePath(text)
		if err != nil {
			return fmt.Errorf("action.mutate.set[%q]: %w", text, err)
		}
		r.set = append(r.set, setOp{path: p, value: m.Set[text]})
	}
	return nil
}

// checkMutate applies the rule's clear and set to an empty response of
// every CSI method its rpc matches, so that a path the response type does
// not have, or a value the field cannot take, refuses the file at load
// instead of failing every matching call with Internal. Whether a path
// applies depends on the response type only, never on its content.
func (r *rule) checkMutate() error {
	for _, method := range csiMethods() {
		if !r.rpc.matches(method) {
			continue
		}
		resp := csiResponses()[method]
		for idx, p := range r.clear {
			if err := clearPath(resp.New(), p); err != nil {
				return fmt.Errorf("action.mutate.clear[%d]: %q cannot apply to the %s response: %w", idx, p.text, shortName(method), err)
			}
		}
		for _, op := range r.set {
			if err := setPath(resp.New(), op.path, op.value); err != nil {
				return fmt.Errorf("action.mutate.set[%q]: cannot apply to the %s response: %w", op.path.text, shortName(method), err)
			}
		}
	}
	return nil
}

var pathRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// parsePath checks syntax only; checkMutate resolves the path against the
// response types of the methods the rule matches.
func parsePath(text string) (fieldPath, error) {
	if !pathRE.MatchString(text) {
		return fieldPath{}, fmt.Errorf("invalid field path %q, want dot-separated proto field names", text)
	}
	p := fieldPath{text: text}
	for _, name := range strings.Split(text, ".") {
		p.names = append(p.names, protoreflect.Name(name))
	}
	return p, nil
}

func parseCode(name string) (codes.Code, error) {
	if name == codes.OK.String() {
		return 0, errors.New(`"OK" is not a fault`)
	}
	var valid []string
	for c := codes.Canceled; c <= codes.Unauthenticated; c++ {
		if c.String() == name {
			return c, nil
		}
		valid = append(valid, c.String())
	}
	return 0, fmt.Errorf("unknown gRPC code %q (valid: %s)", name, strings.Join(valid, ", "))
}

// rpcMatcher matches a gRPC full method such as "/csi.v1.Controller/CreateSnapshot".
type rpcMatcher struct {
	pattern string
	full    bool // compare with the full method instead of the short name
	glob    bool
}

func (m rpcMatcher) matches(fullMethod string) bool {
	target := fullMethod
	if !m.full {
		target = shortName(fullMethod)
	}
	if m.glob {
		ok, _ := path.Match(m.pattern, target)
		return ok
	}
	return m.pattern == target
}

// compileRPC rejects names and globs that cannot match any CSI method: a
// typo would otherwise make a fault silently never fire, and the test
// that was meant to fail would pass.
func compileRPC(rpc string) (rpcMatcher, error) {
	if rpc == "" {
		return rpcMatcher{}, errors.New("required")
	}
	m := rpcMatcher{
		pattern: rpc,
		full:    strings.HasPrefix(rpc, "/"),
		glob:    strings.ContainsAny(rpc, `*?[\`),
	}
	if _, err := path.Match(rpc, ""); err != nil {
		return rpcMatcher{}, fmt.Errorf("%q: %w", rpc, err)
	}
	if slices.ContainsFunc(csiMethods(), m.matches) {
		return m, nil
	}
	if m.glob {
		return rpcMatcher{}, fmt.Errorf("glob %q matches no CSI method", rpc)
	}
	return rpcMatcher{}, fmt.Errorf("unknown CSI method %q (valid: %s)", rpc, strings.Join(csiShortNames(), ", "))
}

// csiResponses maps the full method name of every method of every service
// in the CSI spec the driver is built against to the type of its
// response, so new spec versions need no code change.
var csiResponses = sync.OnceValue(func() map[string]protoreflect.MessageType {
	out := map[string]protoreflect.MessageType{}
	services := csi.File_csi_proto.Services()
	for i := range services.Len() {
		svc := services.Get(i)
		methods := svc.Methods()
		for j := range methods.Len() {
			m := methods.Get(j)
			// The csi package registers every message of its file; the
			// dynamic type is only a fallback that behaves the same.
			var mt protoreflect.MessageType = dynamicpb.NewMessageType(m.Output())
			if t, err := protoregistry.GlobalTypes.FindMessageByName(m.Output().FullName()); err == nil {
				mt = t
			}
			out[fmt.Sprintf("/%s/%s", svc.FullName(), m.Name())] = mt
		}
	}
	return out
})

// csiMethods lists the full method names of csiResponses, sorted.
var csiMethods = sync.OnceValue(func() []string { return slices.Sorted(maps.Keys(csiResponses())) })

func csiShortNames() []string {
	var out []string
	for _, m := range csiMethods() {
		out = append(out, shortName(m))
	}
	slices.Sort(out)
	return out
}

func shortName(fullMethod string) string {
	return fullMethod[strings.LastIndex(fullMethod, "/")+1:]
}
