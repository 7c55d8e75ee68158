package watch

import (
	_ "embed"
	"errors"
	"fmt"
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
// take the matched texts in order; "" keeps the name). The embedded mapping.toml is
// the default and documents where each trainer's names come from. A Mapping is
// immutable once built and safe for concurrent use.
type Mapping struct {
	trainers []*ruleSet // sorted by name
}

type ruleSet struct {
	name     string
	exact    map[string]string
	patterns []pattern // most specific first
}

type pattern struct {
	from  string
	parts []string // the literal texts around the stars: len(parts) = stars+1
	to    string
}

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

func parseMapping(base *Mapping, name, text string) (*Mapping, error) {
	var raw map[string]any
	if _, err := toml.Decode(text, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var errs []error
	doc := map[string]map[string]string{}
	for trainer, v := range raw {
		table, ok := v.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %q: want a [trainer] table of \"name\" = \"pixelis name\", got %T", name, trainer, v))
			continue
		}
		doc[trainer] = map[string]string{}
		for from, to := range table {
			s, ok := to.(string)
			if !ok {
				errs = append(errs, fmt.Errorf("%s: [%s] %q: want a name in quotes, got %T %v", name, trainer, from, to, to))
				continue
			}
			doc[trainer][from] = s
		}
	}
	rules := map[string]map[string]string{}
	if base != nil {
		for _, t := range base.trainers {
			r := map[string]string{}
			for from, to := range t.exact {
				r[from] = to
			}
			for _, p := range t.patterns {
				r[p.from] = p.to
			}
			rules[t.name] = r
		}
	}
	for trainer, table := range doc {
		if rules[trainer] == nil {
			rules[trainer] = map[string]string{}
		}
		for from, to := range table {
			if err := checkRule(from, to); err != nil {
				errs = append(errs, fmt.Errorf("%s: [%s] %q: %w", name, trainer, from, err))
				continue
			}
			rules[trainer][from] = to
		}
	}
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		return nil, errors.Join(errs...)
	}
	m := &Mapping{}
	for trainer, r := range rules {
		t := &ruleSet{name: trainer, exact: map[string]string{}}
		for from, to := range r {
			if !strings.Contains(from, "*") {
				t.exact[from] = to
				continue
			}
			t.patterns = append(t.patterns, pattern{from: from, parts: strings.Split(from, "*"), to: to})
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
		m.trainers = append(m.trainers, t)
	}
	slices.SortFunc(m.trainers, func(a, b *ruleSet) int { return strings.Compare(a.name, b.name) })
	return m, nil
}

func checkRule(from, to string) error {
	switch {
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
	order := m.trainers
	if trainer != "" {
		if i := slices.IndexFunc(order, func(t *ruleSet) bool { return t.name == trainer }); i > 0 {
			order = append([]*ruleSet{order[i]}, slices.Delete(slices.Clone(order), i, i+1)...)
		}
	}
	for _, t := range order {
		if to, ok := t.exact[name]; ok {
			if to == "" {
				to = name
			}
			return to, t.name
		}
	}
	var caps []string
	for _, t := range order {
		for _, p := range t.patterns {
			if caps = p.match(name, caps[:0]); caps != nil {
				return p.expand(name, caps), t.name
			}
		}
	}
	return name, ""
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

func (p pattern) expand(name string, caps []string) string {
	if p.to == "" {
		return name
	}
	var b strings.Builder
	k := 0
	for i := 0; i < len(p.to); i++ {
		if p.to[i] == '*' {
			b.WriteString(caps[k])
			k++
			continue
		}
		b.WriteByte(p.to[i])
	}
	return b.String()
}
