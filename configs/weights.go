package configs

import (
	"bytes"
	"maps"
	"slices"
	"strings"

	"github.com/pixelis/pixelis/internal/suggest"
)

// Weights are the reward component weights of a stage, keyed by component name
// (weights = { final = 1.0, coherence = 0.1, curiosity = 0.0 }), each >= 0 and not
// all 0. A component the table leaves out weighs 0. The names are the weighted
// components of the reward registry (package reward); the prices it lists (the
// misuse penalty, the tool cost) are added with weight 1 and cannot be weighed.
type Weights map[string]float64

// weightNames lists the components a stage may weigh, in the reward registry's
// order. Package reward installs it (SetWeightNames) when it is linked in:
// configs sits below reward, whose components take their sections from here,
// and cannot import it. Nil when reward is not linked: Validate then checks the
// values and not the names.
var weightNames func() []string

// SetWeightNames installs the reward registry's list of weighted components,
// the one list Validate checks a stage's weights against and Encode orders them by.
func SetWeightNames(names func() []string) { weightNames = names }

// WeightNames is the reward registry's list of weighted components, nil when
// package reward is not linked in.
func WeightNames() []string {
	if weightNames == nil {
		return nil
	}
	return weightNames()
}

// unknownWeight is the error of a weights key that names no weighted
// component, nil when it names one or the names are not known here.
func unknownWeight(path, name string) *FieldError {
	names := WeightNames()
	if names == nil || slices.Contains(names, name) {
		return nil
	}
	fe := &FieldError{Path: path + "." + name, Rule: ruleUnknown + ": the weighted reward components are " + strings.Join(names, ", ")}
	if near := suggest.Closest(name, names); near != "" {
		fe.DidYouMean = path + "." + near
	}
	return fe
}

// weights checks one stage's weights (path "curriculum.stages[i].weights"):
// every name a weighted component, every value >= 0, not all 0.
func (c *checker) weights(path string, w Weights) {
	ok, sum := true, 0.0
	for _, n := range slices.Sorted(maps.Keys(w)) {
		p := path + "." + n
		if fe := unknownWeight(path, n); fe != nil {
			c.errs = append(c.errs, fe)
			ok = false
			continue
		}
		if !c.nonNegative(p, w[n]) {
			ok = false
			continue
		}
		sum += w[n]
	}
	if ok && sum == 0 { // every value is >= 0: a sum of 0 is all 0
		c.add(path, "must not all be 0")
	}
}

// weightsHeader opens a stage's weights table in Encode's output.
const weightsHeader = "[curriculum.stages.weights]\n"

// orderWeights puts the keys of every weights table of an encoded config in
// the reward registry's order (names it does not list after, by name). The TOML
// encoder sorts map keys; the registry's order is the one the weights had when
// they were fields of a struct, so a config encodes (and hashes, and so matches
// the checkpoints it made) as it always did.
func orderWeights(b []byte) []byte {
	names := WeightNames()
	rank := func(line []byte) int {
		key, _, _ := bytes.Cut(line, []byte(" = "))
		if i := slices.Index(names, string(key)); i >= 0 {
			return i
		}
		return len(names)
	}
	var out bytes.Buffer
	for {
		i := bytes.Index(b, []byte(weightsHeader))
		if i < 0 {
			out.Write(b)
			return out.Bytes()
		}
		i += len(weightsHeader)
		out.Write(b[:i])
		b = b[i:]
		end := bytes.Index(b, []byte("\n\n")) + 1 // the table ends at a blank line
		if end == 0 {
			end = len(b)
		}
		lines := bytes.SplitAfter(b[:end], []byte("\n"))
		if len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		slices.SortFunc(lines, func(x, y []byte) int {
			if d := rank(x) - rank(y); d != 0 {
				return d
			}
			return bytes.Compare(x, y)
		})
		for _, l := range lines {
			out.Write(l)
		}
		b = b[end:]
	}
}
