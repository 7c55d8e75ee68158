package watch

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

//go:embed mapping.toml
var defaultMapping string

// Mapping renames other trainers' metrics to the names pixelis's panes read. It is
// read from TOML: one table per trainer, each key a name as the trainer logs it
// (with `*` matching any non-empty text), each value the pixelis name (whose `*`s
// take the matched texts in order; "" keeps the name), or { to = "pixelis name",
// scale = x } for a metric logged in other units: its values are multiplied by x
// (verl's SFT trainer logs its learning rate in thousandths). The table [kinds] says which
// kind of run a pixelis name marks (RunKind). The embedded mapping.toml is the
// default and documents where each trainer's names come from. A Mapping is
// immutable once built and safe for concurrent use; a Namer applies it to one run.
type Mapping struct {
	trainers []*ruleSet // sorted by name
	kinds    *ruleSet   // pixelis name → RunKind, "" when the mapping has none
}

type ruleSet struct {
	name     string
	exact    map[string]rule
	patterns []pattern // most specific first
}

// rule is one rename; rank is its place in the mapping (a user file's rules first,
// then the embedded file's, each in the order written), which decides between two
// source names of one run that map to one pixelis name.
type rule struct {
	to    string
	rank  int
	scale float64 // what the values are multiplied by: 1 but for other units
}

type pattern struct {
	from  string
	parts []string // the literal texts around the stars: len(parts) = stars+1
	rule
}

// kindsTable names the table of run kinds, which is not a trainer's.
const kindsTable = "kinds"

// DefaultMapping is the embedded mapping.
func DefaultMapping() *Mapping {
	m, err := parseMapping(nil, "mapping.toml (embedded)", defaultMapping)
	if err != nil {
		panic(err) // the embedded file is tested
	}
	return m
}

// LoadMapping returns the default mapping extended by the TOML file at path: its
// tables add trainers or rules, and its rules replace the default's with the same key.
func LoadMapping(path string) (*Mapping, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mapping: %w", err)
	}
	return parseMapping(DefaultMapping(), path, string(b))
}

// ParseMapping is LoadMapping on TOML text: the default mapping extended by text.
func ParseMapping(text string) (*Mapping, error) {
	return parseMapping(DefaultMapping(), "mapping", text)
}

// rawRule is a rule as written: its table, key and value, in file order.
type rawRule struct {
	table, from, to string
	scale           float64 // 1 when the value is a name alone
}

// decodeRules reads the rules of a mapping file in the order they are written.
func decodeRules(name, text string) ([]rawRule, error) {
	var raw map[string]any
	md, err := toml.Decode(text, &raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var errs []error
	for trainer, v := range raw {
		if _, ok := v.(map[string]any); !ok {
			errs = append(errs, fmt.Errorf("%s: %q: want a [trainer] table of \"name\" = \"pixelis name\", got %T", name, trainer, v))
		}
	}
	var out []rawRule
	for _, k := range md.Keys() {
		if len(k) != 2 {
			continue
		}
		table, ok := raw[k[0]].(map[string]any)
		if !ok {
			continue
		}
		to, scale, err := ruleValue(table[k[1]])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: [%s] %q: %w", name, k[0], k[1], err))
			continue
		}
		out = append(out, rawRule{k[0], k[1], to, scale})
	}
	return out, sortedErrors(errs)
}

// ruleValue reads a rule's value: a name in quotes, or { to = "name", scale = x }.
func ruleValue(v any) (to string, scale float64, err error) {
	switch v := v.(type) {
	case string:
		return v, 1, nil
	case map[string]any:
		to, ok := v["to"].(string)
		if !ok {
			return "", 0, fmt.Errorf(`want { to = "pixelis name", scale = x }: "to" is %T %v`, v["to"], v["to"])
		}
		switch x := v["scale"].(type) {
		case float64:
			scale = x
		case int64:
			scale = float64(x)
		default:
			return "", 0, fmt.Errorf(`want { to = "pixelis name", scale = x }: "scale" is %T %v`, v["scale"], v["scale"])
		}
		for k := range v {
			if k != "to" && k != "scale" {
				return "", 0, fmt.Errorf("%q: want only \"to\" and \"scale\"", k)
			}
		}
		return to, scale, nil
	}
	return "", 0, fmt.Errorf("want a name in quotes, got %T %v", v, v)
}

func sortedErrors(errs []error) error {
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

func parseMapping(base *Mapping, name, text string) (*Mapping, error) {
	rules, err := decodeRules(name, text)
	if err != nil {
		return nil, err
	}
	var errs []error
	merged := map[string]map[string]rule{}
	add := func(table, from string, r rule) {
		if merged[table] == nil {
			merged[table] = map[string]rule{}
		}
		merged[table][from] = r
	}
	for i, r := range rules {
		err := checkRule(r.from, r.to, r.scale)
		if r.table == kindsTable {
			err = checkKindRule(r.from, r.to, r.scale)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: [%s] %q: %w", name, r.table, r.from, err))
			continue
		}
		add(r.table, r.from, rule{to: r.to, rank: i, scale: r.scale})
	}
	if base != nil {
		// The base's rules rank after this file's and give way to its keys.
		for _, t := range base.sets() {
			for from, r := range t.all() {
				if _, ok := merged[t.name][from]; !ok {
					add(t.name, from, rule{to: r.to, rank: len(rules) + r.rank, scale: r.scale})
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, sortedErrors(errs)
	}
	m := &Mapping{}
	for table, r := range merged {
		t := newRuleSet(table, r)
		if table == kindsTable {
			m.kinds = t
			continue
		}
		m.trainers = append(m.trainers, t)
	}
	slices.SortFunc(m.trainers, func(a, b *ruleSet) int { return strings.Compare(a.name, b.name) })
	return m, nil
}

// sets is every rule set of the mapping, the kinds table included.
func (m *Mapping) sets() []*ruleSet {
	if m.kinds == nil {
		return m.trainers
	}
	return append(slices.Clone(m.trainers), m.kinds)
}

func newRuleSet(name string, rules map[string]rule) *ruleSet {
	t := &ruleSet{name: name, exact: map[string]rule{}}
	for from, r := range rules {
		if !strings.Contains(from, "*") {
			t.exact[from] = r
			continue
		}
		t.patterns = append(t.patterns, pattern{from: from, parts: strings.Split(from, "*"), rule: r})
	}
	slices.SortFunc(t.patterns, func(a, b pattern) int {
		if la, lb := len(a.from)-len(a.parts)+1, len(b.from)-len(b.parts)+1; la != lb {
			return lb - la // more literal text first
		}
		if len(a.parts) != len(b.parts) {
			return len(a.parts) - len(b.parts) // fewer stars first
		}
		return strings.Compare(a.from, b.from)
	})
	return t
}

// all is the set's rules by key.
func (t *ruleSet) all() map[string]rule {
	out := make(map[string]rule, len(t.exact)+len(t.patterns))
	for from, r := range t.exact {
		out[from] = r
	}
	for _, p := range t.patterns {
		out[p.from] = p.rule
	}
	return out
}

// match returns the rule of the set for name (exact before patterns) and the texts
// its stars matched.
func (t *ruleSet) match(name string, caps []string) (rule, []string, bool) {
	if r, ok := t.exact[name]; ok {
		return r, nil, true
	}
	for _, p := range t.patterns {
		if caps = p.match(name, caps[:0]); caps != nil {
			return p.rule, caps, true
		}
	}
	return rule{}, nil, false
}

func checkKindRule(from, to string, scale float64) error {
	if err := checkRule(from, "", 1); err != nil {
		return err
	}
	if scale != 1 {
		return errors.New("a kind takes no scale")
	}
	if _, ok := kindStrength[RunKind(to)]; !ok || to == "" {
		return fmt.Errorf("%q is not a kind of run: want %q, %q or %q", to, RunRL, RunSFT, RunPreference)
	}
	return nil
}

func checkRule(from, to string, scale float64) error {
	switch {
	case scale == 0 || math.IsInf(scale, 0) || math.IsNaN(scale):
		return fmt.Errorf("scale %v: want a finite number other than 0", scale)
	case scale != 1 && to == "":
		return errors.New("a scaled metric needs a name of its own: its values are no longer the name's")
	case from == "" || from == "*":
		return errors.New("the name must hold some literal text")
	case strings.Contains(from, "**"):
		return errors.New("two stars in a row match ambiguously")
	case strings.Count(to, "*") > strings.Count(from, "*"):
		return fmt.Errorf("%q has more stars than the name matches", to)
	}
	return nil
}

// Trainers lists the trainers the mapping has rules for.
func (m *Mapping) Trainers() []string {
	out := make([]string, len(m.trainers))
	for i, t := range m.trainers {
		out[i] = t.name
	}
	return out
}

// Rename returns pixelis's name for a metric and the trainer whose rule matched
// ("" and the name itself when none did). The rules of trainer (when not "") are
// tried first, then the others' in name order; exact rules before patterns.
func (m *Mapping) Rename(trainer, name string) (to, by string) {
	r := m.rename(trainer, name)
	return r.to, r.by
}

// noRule ranks a name no rule matched: after every rule.
const noRule = math.MaxInt

// renamed is what the mapping makes of a name: the pixelis name, the trainer whose
// rule matched ("" none), that rule's rank (noRule for none) and its scale.
type renamed struct {
	to, by string
	rank   int
	scale  float64
}

// rename is Rename with the rank and scale of the rule that matched.
func (m *Mapping) rename(trainer, name string) renamed {
	order := m.trainers
	if trainer != "" {
		if i := slices.IndexFunc(order, func(t *ruleSet) bool { return t.name == trainer }); i > 0 {
			order = append([]*ruleSet{order[i]}, slices.Delete(slices.Clone(order), i, i+1)...)
		}
	}
	for _, t := range order {
		if r, ok := t.exact[name]; ok {
			return renamed{r.expand(name, nil), t.name, r.rank, r.scale}
		}
	}
	var caps []string
	for _, t := range order {
		for _, p := range t.patterns {
			if caps = p.match(name, caps[:0]); caps != nil {
				return renamed{p.expand(name, caps), t.name, p.rank, p.scale}
			}
		}
	}
	return renamed{name, "", noRule, 1}
}

// KindOf is the kind of run a pixelis name marks ("" for none): the [kinds] table.
func (m *Mapping) KindOf(name string) RunKind {
	if m.kinds == nil {
		return ""
	}
	r, _, ok := m.kinds.match(name, nil)
	if !ok {
		return ""
	}
	return RunKind(r.to)
}

// match returns the texts the stars matched, nil when name does not match. Each
// star matches the shortest non-empty text that lets the rest match.
func (p pattern) match(name string, caps []string) []string {
	first, last := p.parts[0], p.parts[len(p.parts)-1]
	// Every star matches at least one byte: a match is at least as long as the pattern.
	if len(name) < len(p.from) || !strings.HasPrefix(name, first) || !strings.HasSuffix(name, last) {
		return nil
	}
	return matchParts(name[len(first):], p.parts[1:], caps)
}

// matchParts matches s against star, parts[0], star, parts[1] … (the final part
// anchored at the end of s).
func matchParts(s string, parts []string, caps []string) []string {
	if len(parts) == 1 {
		rest := len(s) - len(parts[0])
		if rest < 1 || !strings.HasSuffix(s, parts[0]) {
			return nil
		}
		return append(caps, s[:rest])
	}
	for i := 1; i < len(s); i++ {
		j := strings.Index(s[i:], parts[0])
		if j < 0 {
			return nil
		}
		i += j
		if out := matchParts(s[i+len(parts[0]):], parts[1:], append(caps, s[:i])); out != nil {
			return out
		}
	}
	return nil
}

func (r rule) expand(name string, caps []string) string {
	if r.to == "" {
		return name
	}
	var b strings.Builder
	k := 0
	for i := 0; i < len(r.to); i++ {
		if r.to[i] == '*' {
			b.WriteString(caps[k])
			k++
			continue
		}
		b.WriteByte(r.to[i])
	}
	return b.String()
}
