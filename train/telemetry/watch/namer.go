package watch

import (
	"cmp"
	"slices"
	"strings"
)

// RunKind is what a run trains, as its metric names tell: reinforcement learning
// (rewards, a policy's KL), supervised fine-tuning (a loss and nothing else), or
// preference optimisation (DPO, ORPO, KTO, SimPO: chosen and rejected rewards).
// The console lays out panes that fit each.
type RunKind string

const (
	RunRL         RunKind = "rl"
	RunSFT        RunKind = "sft"
	RunPreference RunKind = "preference"
)

// kindStrength orders the kinds: a run logging names of several kinds is of the
// strongest. A DPO run logs a loss (SFT's mark) and KTO a KL (RL's); their chosen and
// rejected rewards say what they are.
var kindStrength = map[RunKind]int{"": 0, RunSFT: 1, RunRL: 2, RunPreference: 3}

// Label is how the console names the kind: "RL", "SFT", "preference"; "" unknown.
func (k RunKind) Label() string {
	switch k {
	case RunRL:
		return "RL"
	case RunSFT:
		return "SFT"
	}
	return string(k)
}

// NamerOptions say how the names a Namer is given are written.
type NamerOptions struct {
	// Trainer is the mapping table whose rules are tried first ("trl", "verl"); ""
	// tries every table in name order.
	Trainer string
	// HFLogs: the names are a Hugging Face Trainer's log keys ("reward",
	// "eval_loss"), as on_log and trainer_state.json's log_history give them,
	// rather than TensorBoard tags ("train/reward", "eval/loss"). They are rewritten
	// as transformers' TensorBoardCallback writes them (HFLogName) first.
	HFLogs bool
}

// Namer applies a Mapping to the metrics of one run as they arrive, record by
// record, and learns the run's kind and trainer from the names it sees. It is what
// `pixelis watch` reads every foreign log through, and what a launched trainer's
// metrics go through on their way to the console.
//
// Precedence: when two source names of a run map to one pixelis name (TRL 0.19
// logs both completion_length and completions/mean_length), the name whose rule
// comes first in the mapping keeps it — a user file's rules before the embedded
// mapping.toml's, each in the order written — and the other's values are dropped.
// A name no rule matches is a pixelis name already (or one no pane knows): it
// keeps its own name against any name a rule maps onto it — pixelis's own
// TensorBoard log holds reward/final/raw and, for verl's dashboards, a
// critic/score/mean that verl's rule would map there. A better-ranked name seen
// later takes the pixelis name over from then on.
//
// A Namer is not safe for concurrent use.
type Namer struct {
	m     *Mapping
	opts  NamerOptions
	names map[string]naming          // source name → its naming, cached
	owner map[string]owner           // pixelis name → the source name that keeps it
	hits  map[string]map[string]bool // trainer → the source names its rules matched
	kind  RunKind
}

type naming struct {
	to, by string
	rank   int
	scale  float64
}

type owner struct {
	source string
	rank   int
}

// maxNamed bounds the names a Namer remembers: a run that invents names cannot grow it.
const maxNamed = 4 * maxSeries

// Namer returns a Namer of one run over m.
func (m *Mapping) Namer(o NamerOptions) *Namer {
	return &Namer{m: m, opts: o, names: map[string]naming{}, owner: map[string]owner{}, hits: map[string]map[string]bool{}}
}

// Map renames one record's metrics (one step's, as a trainer logs them) and
// returns them under pixelis's names; values of names that lose by precedence are
// left out. The record's names also teach the Namer the run's kind and trainer.
func (n *Namer) Map(metrics map[string]float64) map[string]float64 {
	// Names of one record are decided best rank first, so that the record's own
	// winner keeps the name whatever the map's order.
	type entry struct {
		source string
		v      float64
		rank   int
	}
	entries := make([]entry, 0, len(metrics))
	for k, v := range metrics {
		entries = append(entries, entry{k, v, n.naming(k).rank})
	}
	slices.SortFunc(entries, func(a, b entry) int {
		if a.rank != b.rank {
			return cmp.Compare(a.rank, b.rank)
		}
		return strings.Compare(a.source, b.source)
	})
	out := make(map[string]float64, len(metrics))
	for _, e := range entries {
		if to, keep, _ := n.name(e.source); keep {
			out[to] = e.v * n.naming(e.source).scale
		}
	}
	return out
}

// Name returns pixelis's name for one source name and whether its values are kept
// (false when another source name of the run keeps that pixelis name).
func (n *Namer) Name(source string) (to string, keep bool) {
	to, keep, _ = n.name(source)
	return to, keep
}

// Scale is what the values of a source name are multiplied by to be in pixelis's
// units: 1 but for a name its trainer logs in other units (verl's SFT trainer
// logs train/lr(1e-3), the learning rate in thousandths). Map applies it; a
// caller of Name applies it to each value.
func (n *Namer) Scale(source string) float64 { return n.naming(source).scale }

// name is Name, and took reports that source has just taken its pixelis name over
// from a worse-ranked source name: the values kept under it so far are that name's.
func (n *Namer) name(source string) (to string, keep, took bool) {
	nm := n.naming(source)
	cur, held := n.owner[nm.to]
	switch {
	case held && cur.source == source:
		return nm.to, true, false
	case held && cur.rank <= nm.rank:
		return nm.to, false, false
	}
	if len(n.owner) < maxNamed || held {
		n.owner[nm.to] = owner{source: source, rank: nm.rank}
	}
	if k := n.m.KindOf(nm.to); kindStrength[k] > kindStrength[n.kind] {
		n.kind = k
	}
	return nm.to, true, held
}

func (n *Namer) naming(source string) naming {
	if nm, ok := n.names[source]; ok {
		return nm
	}
	from := source
	if n.opts.HFLogs {
		from = HFLogName(source)
	}
	r := n.m.rename(n.opts.Trainer, from)
	if r.by == "" {
		r.rank = -1 // the name is its own: it wins over names mapped onto it
	}
	nm := naming{to: r.to, by: r.by, rank: r.rank, scale: r.scale}
	if len(n.names) < maxNamed {
		n.names[source] = nm
	}
	if nm.by != "" {
		if n.hits[nm.by] == nil {
			n.hits[nm.by] = map[string]bool{}
		}
		if len(n.hits[nm.by]) < maxNamed {
			n.hits[nm.by][source] = true
		}
	}
	return nm
}

// Kind is the kind of run the names seen so far mark ("" while none has).
func (n *Namer) Kind() RunKind { return n.kind }

// Trainer is NamerOptions.Trainer when set, else the mapping table whose rules
// matched the most names seen (the first in name order on a tie), "" when none did.
func (n *Namer) Trainer() string {
	if n.opts.Trainer != "" {
		return n.opts.Trainer
	}
	best, most := "", 0
	for _, t := range n.m.Trainers() {
		if k := len(n.hits[t]); k > most {
			best, most = t, k
		}
	}
	return best
}

// HFLogName is the TensorBoard tag transformers' TensorBoardCallback gives a
// Trainer's logged metric (rewrite_logs in transformers/integrations/
// integration_utils.py): "eval_loss" is "eval/loss", "test_x" "test/x", any other
// name "train/<name>".
func HFLogName(k string) string {
	switch {
	case strings.HasPrefix(k, "eval_"):
		return "eval/" + k[len("eval_"):]
	case strings.HasPrefix(k, "test_"):
		return "test/" + k[len("test_"):]
	}
	return "train/" + k
}
