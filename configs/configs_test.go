package configs

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./configs/ -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run with -update if the change is intended)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// lines is the rule lines of an error: its FieldErrors, or its SetErrors, one string each.
func lines(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case *FieldError, *SetError:
			out = append(out, e.Error())
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		default:
			out = append(out, "other: "+err.Error())
		}
	}
	walk(err)
	return out
}

func mustNamed(t *testing.T, name string) *Config {
	t.Helper()
	cfg, err := Named(name)
	if err != nil {
		t.Fatalf("Named(%q): %v", name, err)
	}
	return cfg
}

func TestEmbedded(t *testing.T) {
	def := mustNamed(t, "default")
	smoke := mustNamed(t, "smoke")
	if err := def.Validate(); err != nil {
		t.Errorf("default: %v", err)
	}
	if err := smoke.Validate(); err != nil {
		t.Errorf("smoke: %v", err)
	}
	if !reflect.DeepEqual(def, Default()) {
		t.Error(`Named("default") differs from Default()`)
	}
	if reflect.DeepEqual(def, smoke) {
		t.Error("smoke equals default")
	}
	empty, err := Load("")
	if err != nil || !reflect.DeepEqual(empty, def) {
		t.Errorf(`Load("") = %v, want the default`, err)
	}
	if _, err := Named("large"); err == nil || err.Error() != `unknown embedded config "large" (want default or smoke)` {
		t.Errorf(`Named("large") error = %v`, err)
	}
	// Default hands out copies: changing one must not change the next.
	a := Default()
	a.Policy.Hidden[0] = 1
	a.Env.Families[0] = "changed"
	a.Curriculum.Stages[0].Exit[0].Value = 9
	if !reflect.DeepEqual(Default(), def) {
		t.Error("a change to one Default() leaked into the next")
	}
}

func TestDefaultStages(t *testing.T) {
	want := []Stage{
		{Name: "Phase1_Learn_Goal", Weights: Weights{"final": 1, "coherence": 0, "curiosity": 0},
			Exit: []Exit{{Kind: "threshold", Metric: "success_rate_ma100", Op: ">", Value: 0.87}, {Kind: "steps", Steps: 100}}},
		{Name: "Phase2_Learn_Coherence", Weights: Weights{"final": 1, "coherence": 0.1, "curiosity": 0},
			Exit: []Exit{{Kind: "slope", Metric: "coherence_ma100", Op: "<", Value: 0.001, N: 5}, {Kind: "steps", Steps: 180}}},
		{Name: "Phase3_Learn_Curiosity", Weights: Weights{"final": 1, "coherence": 0.1, "curiosity": 0.05}},
	}
	if got := Default().Curriculum.Stages; !reflect.DeepEqual(got, want) {
		t.Errorf("default stages = %+v, want %+v", got, want)
	}
	if got := Default().SFT.Curriculum.Stages; !reflect.DeepEqual(got, []string{"simple", "simple+medium", "simple+medium+hard"}) {
		t.Errorf("default SFT stages = %q", got)
	}
	if got := Default().Env.Families; !reflect.DeepEqual(got, Families) {
		t.Errorf("default families = %q, want all of %q", got, Families)
	}
}

// poison sets every leaf of v to a non-zero value unlikely to be a default.
func poison(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			poison(v.Field(i))
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		poison(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		poison(e)
		m.SetMapIndex(reflect.ValueOf("poison"), e)
		v.Set(m)
	case reflect.Int:
		v.SetInt(-987654)
	case reflect.Uint64:
		v.SetUint(987654)
	case reflect.Float64:
		v.SetFloat(-987.654)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("poison")
	}
}

// Default is default.toml decoded onto nothing, so default.toml must set every key: decoding it
// onto a poisoned config must overwrite every leaf.
func TestDefaultSetsEveryKey(t *testing.T) {
	poisoned := new(Config)
	poison(reflect.ValueOf(poisoned).Elem())
	if err := decode(poisoned, embedded("default")); err != nil {
		t.Fatal(err)
	}
	// Bools cannot be poisoned both ways; decode once more onto a config with all bools false.
	falsy := new(Config)
	if err := decode(falsy, embedded("default")); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(poisoned, falsy) || !reflect.DeepEqual(falsy, Default()) {
		var a, b bytes.Buffer
		_ = Encode(&a, poisoned)
		_ = Encode(&b, Default())
		t.Errorf("default.toml leaves keys unset:\n%s\nwant\n%s", a.String(), b.String())
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	for _, name := range Names {
		t.Run(name, func(t *testing.T) {
			cfg := mustNamed(t, name)
			var b bytes.Buffer
			if err := Encode(&b, cfg); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".encoded.toml", b.Bytes())

			// Loaded on top of the defaults, as Load does …
			path := filepath.Join(t.TempDir(), "config.toml")
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			back, err := Load(path)
			if err != nil {
				t.Fatalf("load encoded: %v", err)
			}
			if !reflect.DeepEqual(back, cfg) {
				t.Errorf("Encode → Load changed the config:\n%s", b.String())
			}
			// … and onto nothing: the encoding is complete on its own.
			bare := new(Config)
			if err := decode(bare, b.String()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(bare, cfg) {
				t.Error("the encoding alone does not rebuild the config")
			}
			if back.Hash() != cfg.Hash() {
				t.Error("hash changed across a round trip")
			}
		})
	}
}

func TestRoundTripLoRARanks(t *testing.T) {
	cfg := Default()
	if err := Apply(cfg, []string{"policy.lora_ranks.head=4", "policy.lora_ranks.trunk0=0"}); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Encode(&b, cfg); err != nil {
		t.Fatal(err)
	}
	back, err := resolve("encoded", b.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, cfg) {
		t.Errorf("lora_ranks lost in the round trip: %v", back.Policy.LoRARanks)
	}
}

func TestHash(t *testing.T) {
	h := Default().Hash()
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		t.Fatalf("Hash() = %q, want 64 hex digits", h)
	}
	if Default().Hash() != h {
		t.Error("Hash is not stable across calls")
	}
	golden(t, "default.hash", []byte(h+"\n"))
	if mustNamed(t, "smoke").Hash() == h {
		t.Error("smoke hashes like default")
	}
	for _, change := range []func(*Config){
		func(c *Config) { c.Run.Seed++ },
		func(c *Config) { c.RFT.LR *= 1.0000001 },
		func(c *Config) { c.Env.Families = c.Env.Families[1:] },
		func(c *Config) { c.Curriculum.Stages[1].Exit[0].N = 6 },
		func(c *Config) { c.Policy.LoRARanks = map[string]int{"head": 4} },
		func(c *Config) { c.UI.Mouse = true },
	} {
		c := Default()
		change(c)
		if c.Hash() == h {
			t.Errorf("a change left the hash equal: %+v", c)
		}
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// Keys a file leaves out keep their defaults.
	cfg, err := Load(write("partial.toml", "[rft]\ngroup_size = 4\n[curriculum]\nkpi_window = 100\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.RFT.GroupSize = 4
	if !reflect.DeepEqual(cfg, want) {
		t.Error("a partial file did not keep the other defaults")
	}

	// An array of tables replaces the default one whole: the new stage does not inherit exits.
	cfg, err = Load(write("stages.toml", "[[curriculum.stages]]\nname = \"only\"\nweights = { final = 1.0 }\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Curriculum.Stages; !reflect.DeepEqual(got, []Stage{{Name: "only", Weights: Weights{"final": 1}}}) {
		t.Errorf("stages = %+v", got)
	}

	if _, err := Load(filepath.Join(dir, "missing.toml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}

	p := write("syntax.toml", "[rft]\ngroup_size = = 4\n")
	_, err = Load(p)
	if err == nil || !strings.HasPrefix(err.Error(), "config "+p+": toml: line 2") || len(FieldErrors(err)) != 0 {
		t.Errorf("syntax error = %v", err)
	}

	p = write("bad.toml", "[rft]\ngroup_size = 1\n")
	_, err = Load(p)
	if want := "config " + p + ": rft.group_size: must be >= 2, got 1"; err == nil || err.Error() != want {
		t.Errorf("Load error =\n%v\nwant\n%s", err, want)
	}
}

// "smoke" and "default" name the embedded configs unless a file of that name exists.
func TestLoadEmbeddedNames(t *testing.T) {
	t.Chdir(t.TempDir())
	cfg, err := Load("smoke")
	if err != nil || !reflect.DeepEqual(cfg, mustNamed(t, "smoke")) {
		t.Fatalf(`Load("smoke") = %v, want the embedded smoke config`, err)
	}
	if err := os.WriteFile("smoke", []byte("[rft]\nsteps = 30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load("smoke")
	if err != nil {
		t.Fatalf(`Load("smoke") with a file named smoke: %v`, err)
	}
	if cfg.RFT.Steps != 30 || cfg.SFT.Steps != Default().SFT.Steps {
		t.Errorf(`Load("smoke") did not read the file named smoke: rft.steps %d, sft.steps %d`, cfg.RFT.Steps, cfg.SFT.Steps)
	}
}

// stage3 is a third curriculum stage, appended to a config that needs one.
const stage3 = "\n[[curriculum.stages]]\nname = \"c\"\nweights = { final = 1.0 }\n"

// loadErrorCases are configs that must not load, each with the errors it must give, in order.
var loadErrorCases = []struct {
	name string
	toml string
	want []string
}{
	{"unknown key", "[rft]\ngrup_size = 4\n",
		[]string{"rft.grup_size: unknown key (did you mean rft.group_size?)"}},
	{"unknown section", "[tarin]\nsteps = 4\n",
		[]string{"tarin: unknown key"}},
	{"nested unknown key", "[reward.curiosity]\nmode = \"icm\"\nbogus = 1\n",
		[]string{"reward.curiosity.bogus: unknown key"}},
	{"unknown key in array of tables",
		"[[curriculum.stages]]\nname = \"a\"\ncolour = 1\nweights = { final = 1.0, extra = 2.0 }\n",
		[]string{"curriculum.stages[0].colour: unknown key", "curriculum.stages[0].weights.extra: unknown key: the weighted reward components are final, coherence, curiosity"}},
	{"stage weights: a slip, a price", // the prices are added unweighted
		"[[curriculum.stages]]\nname = \"a\"\nweights = { final = 1.0, cohrence = 0.1, penalty = 1.0 }\n",
		[]string{"curriculum.stages[0].weights.cohrence: unknown key: the weighted reward components are final, coherence, curiosity (did you mean curriculum.stages[0].weights.coherence?)",
			"curriculum.stages[0].weights.penalty: unknown key: the weighted reward components are final, coherence, curiosity"}},
	{"stage weight negative", "[[curriculum.stages]]\nname = \"a\"\nweights = { final = -1.0, coherence = 0.1 }\n",
		[]string{"curriculum.stages[0].weights.final: must be >= 0, got -1"}},
	{"stage weights all 0", "[[curriculum.stages]]\nname = \"a\"\nweights = { final = 0.0 }\n",
		[]string{"curriculum.stages[0].weights: must not all be 0"}},
	{"removed key", "[eval]\ngreedy = true\n",
		[]string{"eval.greedy: removed: nothing read it; the test evaluation always reports greedy pass@1 (test/<model>/all/greedy) beside sampled pass@1 — delete the key"}},
	{"string for integer", "[rft]\ngroup_size = \"four\"\n",
		[]string{`rft.group_size: must be an integer, got string "four"`}},
	{"float for integer", "[rft]\ngroup_size = 2.5\n",
		[]string{"rft.group_size: must be an integer, got float 2.5"}},
	{"string for float", "[sft]\nlr = \"fast\"\n",
		[]string{`sft.lr: must be a number, got string "fast"`}},
	{"integer for boolean", "[ui]\nmouse = 1\n",
		[]string{"ui.mouse: must be a boolean, got integer 1"}},
	{"integer for string", "[run]\nname = 7\n",
		[]string{"run.name: must be a string, got integer 7"}},
	{"bad list element", "[policy]\nhidden = [256, \"x\"]\n",
		[]string{`policy.hidden[1]: must be an integer, got string "x"`}},
	{"string for list", "[env]\nfamilies = \"object_counting\"\n",
		[]string{`env.families: must be an array of strings, got string "object_counting"`}},
	{"value for table", "run = 3\n",
		[]string{"run: must be a table, got integer 3"}},
	{"datetime", "[run]\nname = 2026-11-22\n",
		[]string{"run.name: must be a string, got a datetime"}},
	{"negative seed", "[run]\nseed = -1\n",
		[]string{"run.seed: must be >= 0, got -1"}},
	{"group size", "[rft]\ngroup_size = 1\n",
		[]string{"rft.group_size: must be >= 2, got 1"}},
	{"non-positive float", "[rft]\nlr = 0.0\n",
		[]string{"rft.lr: must be > 0, got 0"}},
	{"nan", "[sft]\nlr = nan\n",
		[]string{"sft.lr: must be finite, got nan"}},
	{"inf", "[reward]\nclip = inf\n",
		[]string{"reward.clip: must be finite, got inf"}},
	{"closed interval", "[sft.curriculum]\nrollback_threshold = 0.1\n",
		[]string{"sft.curriculum.rollback_threshold: must be in [-1, 0], got 0.1"}},
	{"half-open interval", "[rft]\nreplay_ratio = 1.0\n",
		[]string{"rft.replay_ratio: must be in [0, 1), got 1"}},
	{"open interval", "[rft]\nclip_low = 0.0\n",
		[]string{"rft.clip_low: must be in (0, 1), got 0"}},
	{"clip order", "[rft]\nclip_high = 0.1\n",
		[]string{"rft.clip_high: must be >= clip_low (0.2), got 0.1"}},
	{"replay needs a buffer", "[rft]\nreplay_size = 0\n",
		[]string{"rft.replay_size: must be >= 1 when replay_ratio > 0, got 0"}},
	{"minibatches", "[rft]\nminibatches = 200\n",
		[]string{"rft.minibatches: must be <= tasks_per_step × group_size (128), got 200"}},
	{"warmup longer than run", "[sft]\nwarmup_steps = 5000\n",
		[]string{"sft.warmup_steps: must be <= sft.steps (2000), got 5000"}},
	{"eval tasks over split", "[sft]\neval_tasks = 400\n[eval]\ntasks = 0\n",
		[]string{"sft.eval_tasks: must be <= data.val_tasks (300), got 400", "eval.tasks: must be >= 1, got 0"}},
	{"bad enum", "[rft]\nkl_estimator = \"k2\"\n",
		[]string{`rft.kl_estimator: must be one of "k1", "k3", got "k2"`}},
	{"bad enum loss_agg", "[rft]\nloss_agg = \"sum\"\n",
		[]string{`rft.loss_agg: must be one of "token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "dr-grpo", got "sum"`}},
	{"bad ui", "[ui]\nfps = 0\ncolor = \"sometimes\"\nhistory = 5\n",
		[]string{"ui.fps: must be in [1, 60], got 0", "ui.history: must be >= 10, got 5",
			`ui.color: must be one of "auto", "always", "never", got "sometimes"`}},
	{"bad family name", "[env]\nfamilies = [\"object_counting\", \"colour_naming\", \"object_counting\"]\n",
		[]string{`env.families[1]: must be one of "attribute_recognition", "text_extraction", "object_counting", "spatial_reasoning", "geometric_comparison", "temporal_tracking", got "colour_naming"`,
			`env.families[2]: repeats "object_counting"`}},
	{"no families", "[env]\nfamilies = []\n",
		[]string{"env.families: must name at least one family"}},
	{"one frame", "[env]\nframes = 1\nfamilies = [\"object_counting\"]\n",
		[]string{"env.frames: must be in [2, 8], got 1"}},
	{"world ranges", "[env]\nmax_steps = 4\nmax_size = 40\nconfusion = 1.5\nop_cap = 1\n",
		[]string{"env.max_steps: must be in [5, 64], got 4", "env.max_size: must be in [20, 36], got 40", "env.op_cap: must be >= 2, got 1", "env.confusion: must be in [0, 1], got 1.5"}},
	{"object range", "[env]\nmin_objects = 4\nmax_objects = 3\nlabel_prob = 1.5\n",
		[]string{"env.max_objects: must be >= min_objects (4), got 3", "env.label_prob: must be in [0, 1], got 1.5"}},
	{"run name", "[run]\nname = \"a/b\"\ndir = \"\"\n",
		[]string{`run.name: must be a single directory name, got "a/b"`, "run.dir: must not be empty"}},
	{"empty hidden", "[policy]\nhidden = []\n",
		[]string{"policy.hidden: must list at least one layer width"}},
	{"lora ranks", "[policy.lora_ranks]\nhead = -1\n\"a.b\" = 2\ntrunk0 = 4\n",
		[]string{`policy.lora_ranks: layer name "a.b" must be a bare key (letters, digits, _ and -)`,
			"policy.lora_ranks.head: must be >= 0, got -1"}},
	{"loss weights", "[sft]\nop_weight = 0.0\nanswer_weight = 0.0\n",
		[]string{"sft: op_weight and answer_weight must not both be 0"}},
	{"negative loss weight", "[sft]\nop_weight = -1.0\n",
		[]string{"sft.op_weight: must be >= 0, got -1"}},
	{"sft stages", "[sft.curriculum]\nstages = [\"simple\", \"simple+easy\", \"simple\", \"hard+hard\"]\ninterval_growth = 0.5\n",
		[]string{`sft.curriculum.stages[1]: must join distinct difficulties from "simple", "medium", "hard" with +, got "simple+easy"`,
			`sft.curriculum.stages[2]: repeats "simple"`,
			`sft.curriculum.stages[3]: must join distinct difficulties from "simple", "medium", "hard" with +, got "hard+hard"`,
			"sft.curriculum.interval_growth: must be >= 1, got 0.5"}},
	{"coherence order", "[reward.coherence]\nsim_low = 0.8\n",
		[]string{"reward.coherence.sim_high: must be >= sim_low (0.8), got 0.7"}},
	{"coherence range", "[reward.coherence]\nsim_too_similar = 1.2\n",
		[]string{"reward.coherence.sim_too_similar: must be in [0, 1], got 1.2"}},
	{"coherence signs", "[reward.coherence]\nrepeat_penalty = 0.5\nsim_bonus = -0.1\n",
		[]string{"reward.coherence.repeat_penalty: must be <= 0, got 0.5", "reward.coherence.sim_bonus: must be >= 0, got -0.1"}},
	{"misuse sign", "[reward.misuse]\nrepeat = 0.1\n",
		[]string{"reward.misuse.repeat: must be <= 0, got 0.1"}},
	{"curiosity", "[reward.curiosity]\nmode = \"rnd\"\nbeta = 2.0\n",
		[]string{`reward.curiosity.mode: must be one of "icm", "rapr", got "rnd"`, "reward.curiosity.beta: must be in [0, 1], got 2"}},
	{"norm warmup", "[reward]\nnorm_window = 10\nnorm_warmup = 20\n",
		[]string{"reward.norm_warmup: must be <= reward.norm_window (10), got 20"}},
	{"no stages", "[curriculum]\nstages = []\n",
		[]string{"curriculum.stages: must list at least one stage"}},
	{"stage without exit", "[[curriculum.stages]]\nname = \"a\"\nweights = { final = 1.0 }\n" + stage3,
		[]string{"curriculum.stages[0].exit: must list at least one condition (only the last stage may have none)"}},
	{"stage names and weights",
		"[[curriculum.stages]]\nname = \"a\"\nweights = { final = 0.0 }\n[[curriculum.stages.exit]]\nkind = \"steps\"\nsteps = 5\n" +
			"[[curriculum.stages]]\nname = \"a\"\nweights = { final = -1.0 }\n[[curriculum.stages.exit]]\nkind = \"steps\"\nsteps = 5\n" +
			"[[curriculum.stages]]\nweights = { final = 1.0 }\n",
		[]string{"curriculum.stages[0].weights: must not all be 0", `curriculum.stages[1].name: repeats "a"`,
			"curriculum.stages[1].weights.final: must be >= 0, got -1", "curriculum.stages[2].name: must not be empty"}},
	{"bad exits",
		"[[curriculum.stages]]\nname = \"a\"\nweights = { final = 1.0 }\n" +
			"[[curriculum.stages.exit]]\nkind = \"plateau\"\n" +
			"[[curriculum.stages.exit]]\nkind = \"slope\"\nmetric = \"coherence_ma100\"\nop = \"<\"\nvalue = 0.001\nn = 1\n" +
			"[[curriculum.stages.exit]]\nkind = \"threshold\"\nmetric = \"accuracy\"\nop = \">=\"\nvalue = 0.7\n" +
			"[[curriculum.stages.exit]]\nkind = \"steps\"\n" +
			"[[curriculum.stages.exit]]\nkind = \"patience\"\nmetric = \"reward_final_ma100\"\nop = \">\"\nvalue = -0.1\n" + stage3,
		[]string{`curriculum.stages[0].exit[0].kind: must be one of "threshold", "patience", "slope", "steps", got "plateau"`,
			"curriculum.stages[0].exit[1].n: must be >= 2, got 1",
			`curriculum.stages[0].exit[2].metric: must be one of "success_rate_ma100", "reward_final_ma100", "coherence_ma100", "combined_score_ma100", got "accuracy"`,
			`curriculum.stages[0].exit[2].op: must be one of ">", "<", got ">="`,
			"curriculum.stages[0].exit[3].steps: must be >= 1, got 0",
			"curriculum.stages[0].exit[4].value: must be in [0, 1] (the range of reward_final_ma100), got -0.1",
			"curriculum.stages[0].exit[4].n: must be >= 1, got 0"}},
	// A rate's threshold outside [0, 1], or at the edge it must pass, never (or always) holds.
	{"exit values outside the KPI's range",
		"[[curriculum.stages]]\nname = \"a\"\nweights = { final = 1.0 }\n" +
			"[[curriculum.stages.exit]]\nkind = \"threshold\"\nmetric = \"success_rate_ma100\"\nop = \">\"\nvalue = 1.5\n" +
			"[[curriculum.stages.exit]]\nkind = \"threshold\"\nmetric = \"success_rate_ma100\"\nop = \">\"\nvalue = -0.3\n" +
			"[[curriculum.stages.exit]]\nkind = \"patience\"\nmetric = \"success_rate_ma100\"\nop = \">\"\nvalue = 1.0\nn = 3\n" +
			"[[curriculum.stages.exit]]\nkind = \"threshold\"\nmetric = \"success_rate_ma100\"\nop = \"<\"\nvalue = 0.0\n" +
			"[[curriculum.stages.exit]]\nkind = \"slope\"\nmetric = \"success_rate_ma100\"\nop = \">\"\nvalue = 2.0\nn = 3\n" +
			"[[curriculum.stages.exit]]\nkind = \"threshold\"\nmetric = \"coherence_ma100\"\nop = \">\"\nvalue = 1.5\n" + stage3,
		[]string{"curriculum.stages[0].exit[0].value: must be in [0, 1] (the range of success_rate_ma100), got 1.5",
			"curriculum.stages[0].exit[1].value: must be in [0, 1] (the range of success_rate_ma100), got -0.3",
			"curriculum.stages[0].exit[2].value: must be < 1: success_rate_ma100 > 1 can never hold",
			"curriculum.stages[0].exit[3].value: must be > 0: success_rate_ma100 < 0 can never hold",
			"curriculum.stages[0].exit[4].value: must be in [-1, 1] (a slope of success_rate_ma100, whose range is [0, 1]), got 2"}},
	// A window of 0 is reported once, not once more for every KPI name derived from it.
	{"kpi window 0", "[curriculum]\nkpi_window = 0\n",
		[]string{"curriculum.kpi_window: must be >= 1, got 0"}},
	// A bad step count is reported once, not again as the warmup's bound.
	{"negative steps", "[rft]\nsteps = -3\n[sft]\nsteps = 0\n",
		[]string{"sft.steps: must be >= 1, got 0", "rft.steps: must be >= 1, got -3"}},
	{"rollback drop larger than the range", "[curriculum]\nrollback_drop = 1.5\n",
		[]string{"curriculum.rollback_drop: must be <= 1 (the range of success_rate_ma100 is [0, 1]), got 1.5"}},
	{"curiosity adapter wider than its layers", "[reward.curiosity]\nmode = \"icm\"\nembed_dim = 16\nhidden = 12\nlora_rank = 20\n",
		[]string{"reward.curiosity.lora_rank: must be <= 12 (reward.curiosity.hidden, the narrower side of the layers its adapters sit on), got 20"}},
	{"memory cap and divergence guard", "[run]\nmax_memory_gb = -1\n[divergence]\nmax_skipped = -1\nmax_norm_growth = 0.5\n",
		[]string{"run.max_memory_gb: must be >= 0, got -1", "divergence.max_skipped: must be >= 0, got -1",
			"divergence.max_norm_growth: must be 0 (no check) or > 1 (a factor the norm may grow by), got 0.5"}},
	{"kpi window renames metrics", "[curriculum]\nkpi_window = 50\nrollback_metric = \"success_rate_ma50\"\n",
		[]string{`curriculum.stages[0].exit[0].metric: must be one of "success_rate_ma50", "reward_final_ma50", "coherence_ma50", "combined_score_ma50", got "success_rate_ma100"`,
			`curriculum.stages[1].exit[0].metric: must be one of "success_rate_ma50", "reward_final_ma50", "coherence_ma50", "combined_score_ma50", got "coherence_ma100"`}},
	{"curriculum scalars", "[curriculum]\nbackoff = 0.5\nrollback_window = 0\nrollback_drop = -0.1\n",
		[]string{"curriculum.rollback_drop: must be >= 0, got -0.1", "curriculum.rollback_window: must be >= 1, got 0",
			"curriculum.backoff: must be >= 1, got 0.5"}},
	{"checkpoint", "[checkpoint]\nevery = -1\nkeep = -2\n",
		[]string{"checkpoint.every: must be >= 0, got -1", "checkpoint.keep: must be >= 0, got -2"}},
	{"all kinds at once", "[rft]\ngrup_size = 4\ngroup_size = 1\nlr = \"fast\"\n[ui]\nfps = 61\n",
		[]string{"rft.grup_size: unknown key (did you mean rft.group_size?)", `rft.lr: must be a number, got string "fast"`,
			"rft.group_size: must be >= 2, got 1", "ui.fps: must be in [1, 60], got 61"}},
}

// TestLoadErrors loads each of loadErrorCases: exactly its errors, in order, and no config beside them.
func TestLoadErrors(t *testing.T) {
	for _, tt := range loadErrorCases {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := resolve("test.toml", tt.toml, nil)
			if got := lines(err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if (err == nil) != (cfg != nil) {
				t.Errorf("config %v with error %v", cfg != nil, err)
			}
		})
	}
}

// The full message: one problem per line, each naming the file, the key and the rule.
func TestErrorText(t *testing.T) {
	_, err := resolve("my.toml", "[rft]\ngrup_size = 4\ngroup_size = 1\n[env]\nnoise = 2.0\n", nil)
	want := "config my.toml: rft.grup_size: unknown key (did you mean rft.group_size?)\n" +
		"config my.toml: env.noise: must be in [0, 0.06], got 2\nconfig my.toml: rft.group_size: must be >= 2, got 1"
	if err == nil || err.Error() != want {
		t.Errorf("error text:\n%v\nwant:\n%s", err, want)
	}
	fes := FieldErrors(err)
	if len(fes) != 3 || *fes[0] != (FieldError{Path: "rft.grup_size", Rule: "unknown key", DidYouMean: "rft.group_size"}) {
		t.Errorf("FieldErrors = %v", fes)
	}
	if FieldErrors(nil) != nil {
		t.Error("FieldErrors(nil) is not empty")
	}
}

func TestApply(t *testing.T) {
	tests := []struct {
		name string
		sets []string
		want func(*Config)
	}{
		{"int", []string{"rft.group_size=4"}, func(c *Config) { c.RFT.GroupSize = 4 }},
		{"int with underscores and spaces", []string{" data.train_tasks = 1_000 "}, func(c *Config) { c.Data.TrainTasks = 1000 }},
		{"uint64", []string{"run.seed=42"}, func(c *Config) { c.Run.Seed = 42 }},
		{"float", []string{"rft.lr=1e-4"}, func(c *Config) { c.RFT.LR = 1e-4 }},
		{"integer into float", []string{"sft.lr=1"}, func(c *Config) { c.SFT.LR = 1 }},
		{"bool", []string{"ui.mouse=true", "rft.dynamic_sampling=false"}, func(c *Config) { c.UI.Mouse = true; c.RFT.DynamicSampling = false }},
		{"bare string", []string{"run.name=my-run"}, func(c *Config) { c.Run.Name = "my-run" }},
		{"string that looks like a number", []string{"run.name=123"}, func(c *Config) { c.Run.Name = "123" }},
		{"quoted string", []string{`run.dir="/tmp/pixelis runs"`}, func(c *Config) { c.Run.Dir = "/tmp/pixelis runs" }},
		{"empty string", []string{"data.train_file="}, func(c *Config) { c.Data.TrainFile = "" }},
		{"enum", []string{"rft.loss_agg=dr-grpo"}, func(c *Config) { c.RFT.LossAgg = "dr-grpo" }},
		{"int list", []string{"policy.hidden=[64,32]"}, func(c *Config) { c.Policy.Hidden = []int{64, 32} }},
		{"string list, TOML", []string{`env.families=["object_counting", "text_extraction"]`},
			func(c *Config) { c.Env.Families = []string{"object_counting", "text_extraction"} }},
		{"string list, bare words", []string{"env.families=[object_counting, text_extraction]", "sft.curriculum.stages=simple,simple+medium"},
			func(c *Config) {
				c.Env.Families = []string{"object_counting", "text_extraction"}
				c.SFT.Curriculum.Stages = []string{"simple", "simple+medium"}
			}},
		{"nested table", []string{"reward.curiosity.mode=rapr", "sft.curriculum.enabled=false"},
			func(c *Config) { c.Reward.Curiosity.Mode = "rapr"; c.SFT.Curriculum.Enabled = false }},
		{"curriculum table and stage elements", []string{
			"curriculum.kpi_window=50", "curriculum.rollback_metric=success_rate_ma50",
			"curriculum.stages[0].exit[0].metric=success_rate_ma50", "curriculum.stages.1.exit.0.metric=coherence_ma50",
			"curriculum.stages[2].weights.curiosity=0.1"},
			func(c *Config) {
				c.Curriculum.KPIWindow = 50
				c.Curriculum.RollbackMetric = "success_rate_ma50"
				c.Curriculum.Stages[0].Exit[0].Metric = "success_rate_ma50"
				c.Curriculum.Stages[1].Exit[0].Metric = "coherence_ma50"
				c.Curriculum.Stages[2].Weights["curiosity"] = 0.1
			}},
		{"map key", []string{"policy.lora_ranks.head=4"}, func(c *Config) { c.Policy.LoRARanks = map[string]int{"head": 4} }},
		{"later wins", []string{"rft.steps=10", "rft.steps=20"}, func(c *Config) { c.RFT.Steps = 20 }},
		{"none", nil, func(*Config) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Default()
			if err := Apply(got, tt.sets); err != nil {
				t.Fatalf("Apply(%q): %v", tt.sets, err)
			}
			want := Default()
			tt.want(want)
			if !reflect.DeepEqual(got, want) {
				var a, b bytes.Buffer
				_ = Encode(&a, got)
				_ = Encode(&b, want)
				t.Errorf("Apply(%q) gave\n%s\nwant\n%s", tt.sets, a.String(), b.String())
			}
		})
	}
}

func TestApplyErrors(t *testing.T) {
	tests := []struct {
		name string
		sets []string
		want []string
	}{
		{"unknown key", []string{"rft.grup_size=4"},
			[]string{"--set rft.grup_size=4: unknown key rft.grup_size (did you mean rft.group_size?)"}},
		{"unknown section", []string{"rtf.group_size=4"},
			[]string{"--set rtf.group_size=4: unknown key rtf (did you mean rft?)"}},
		{"key below a value", []string{"rft.group_size.max=4"},
			[]string{"--set rft.group_size.max=4: unknown key rft.group_size.max"}},
		{"no value", []string{"rft.group_size"},
			[]string{"--set rft.group_size: must be key=value"}},
		{"empty key", []string{"=4"},
			[]string{"--set =4: empty key"}},
		{"malformed key", []string{"rft..steps=4", "curriculum.stages[0=1"},
			[]string{`--set rft..steps=4: malformed key "rft..steps"`, `--set curriculum.stages[0=1: malformed key "curriculum.stages[0"`}},
		{"wrong type int", []string{"rft.group_size=four"},
			[]string{`--set rft.group_size=four: must be an integer, got string "four"`}},
		{"wrong type float", []string{"rft.lr=fast"},
			[]string{`--set rft.lr=fast: must be a number, got string "fast"`}},
		{"wrong type bool", []string{"ui.mouse=yes"},
			[]string{`--set ui.mouse=yes: must be a boolean, got string "yes"`}},
		{"wrong list element", []string{`policy.hidden=[256,"x"]`},
			[]string{`--set policy.hidden=[256,"x"]: policy.hidden[1]: must be an integer, got string "x"`}},
		{"list wanted", []string{"policy.hidden=256"},
			[]string{"--set policy.hidden=256: must be an array of integers, got integer 256"}},
		{"negative seed", []string{"run.seed=-3"},
			[]string{"--set run.seed=-3: must be >= 0, got -3"}},
		{"table", []string{"rft=1"},
			[]string{"--set rft=1: is a table; set one of its keys"}},
		{"array of tables", []string{"curriculum.stages=x"},
			[]string{"--set curriculum.stages=x: is an array of tables; set a key of one element, as curriculum.stages[0].<key>"}},
		{"bad index", []string{"curriculum.stages[7].name=x", "curriculum.stages.first.name=x"},
			[]string{"--set curriculum.stages[7].name=x: curriculum.stages: has 3 elements, index 7 is out of range",
				`--set curriculum.stages.first.name=x: curriculum.stages: is an array of tables; index it, as curriculum.stages[0], got "first"`}},
		{"bad map key", []string{`policy.lora_ranks.head=x`},
			[]string{`--set policy.lora_ranks.head=x: must be an integer, got string "x"`}},
		{"all at once", []string{"rft.grup_size=4", "rft.steps=10", "ui.fps=fast"},
			[]string{"--set rft.grup_size=4: unknown key rft.grup_size (did you mean rft.group_size?)", `--set ui.fps=fast: must be an integer, got string "fast"`}},
		// Values that parse but break a rule are reported by Validate, by key.
		{"out of range", []string{"rft.group_size=1", "ui.color=pink"},
			[]string{"rft.group_size: must be >= 2, got 1", `ui.color: must be one of "auto", "always", "never", got "pink"`}},
		{"seed too large for TOML", []string{"run.seed=18446744073709551615"},
			[]string{"--set run.seed=18446744073709551615: must be an integer, got string \"18446744073709551615\""}},
		{"bad family", []string{"env.families=[object_counting,colours]"},
			[]string{`env.families[1]: must be one of "attribute_recognition", "text_extraction", "object_counting", "spatial_reasoning", "geometric_comparison", "temporal_tracking", got "colours"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			err := Apply(cfg, tt.sets)
			if got := lines(err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Apply(%q) errors:\n%s\nwant:\n%s", tt.sets, strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if !reflect.DeepEqual(cfg, Default()) {
				t.Error("a failed Apply changed the config")
			}
		})
	}
}

func TestValidateSeedBound(t *testing.T) {
	cfg := Default()
	cfg.Run.Seed = 1 << 63
	want := []string{"run.seed: must be <= 9223372036854775807 (the largest TOML integer), got 9223372036854775808"}
	if got := lines(cfg.Validate()); !reflect.DeepEqual(got, want) {
		t.Errorf("Validate = %q, want %q", got, want)
	}
}

func TestClone(t *testing.T) {
	a := Default()
	a.Policy.LoRARanks = map[string]int{"head": 2}
	b := a.Clone()
	if !reflect.DeepEqual(a, b) {
		t.Fatal("clone differs")
	}
	b.Policy.LoRARanks["head"] = 3
	b.Curriculum.Stages[1].Exit[1].Steps = 7
	b.SFT.Curriculum.Stages[0] = "hard"
	if a.Policy.LoRARanks["head"] != 2 || a.Curriculum.Stages[1].Exit[1].Steps != 180 || a.SFT.Curriculum.Stages[0] != "simple" {
		t.Error("clone shares memory with the original")
	}
}

func TestResolve(t *testing.T) {
	path := filepath.Join(t.TempDir(), "short.toml")
	if err := os.WriteFile(path, []byte("[rft]\nsteps = 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Invalid on its own (warm-up 10 > 5 steps) …
	if _, err := Load(path); err == nil {
		t.Fatal("Load accepted rft.warmup_steps > rft.steps")
	}
	// … repaired by a --set.
	cfg, err := Resolve(path, []string{"rft.warmup_steps=0"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RFT.Steps != 5 || cfg.RFT.WarmupSteps != 0 {
		t.Errorf("rft.steps %d, rft.warmup_steps %d", cfg.RFT.Steps, cfg.RFT.WarmupSteps)
	}

	// The file's, the arguments' and the result's problems come together.
	_, err = Resolve(path, []string{"rft.grup_size=4", "rft.group_size=1"})
	from := "config " + path + " with --set rft.grup_size=4 --set rft.group_size=1: "
	want := "--set rft.grup_size=4: unknown key rft.grup_size (did you mean rft.group_size?)\n" +
		from + "rft.group_size: must be >= 2, got 1\n" +
		from + "rft.warmup_steps: must be <= rft.steps (5), got 10"
	if err == nil || err.Error() != want {
		t.Errorf("Resolve error:\n%v\nwant:\n%s", err, want)
	}

	// Only the arguments at fault: no heading blames the file or the default.
	_, err = Resolve("", []string{"rft.lr=fast", "rft.grup=3"})
	want = "--set rft.lr=fast: must be a number, got string \"fast\"\n--set rft.grup=3: unknown key rft.grup"
	if err == nil || err.Error() != want {
		t.Errorf("Resolve error:\n%v\nwant:\n%s", err, want)
	}

	cfg, err = Resolve("", []string{"run.seed=7"})
	if err != nil || cfg.Run.Seed != 7 {
		t.Errorf(`Resolve("", run.seed=7) = %v`, err)
	}
}

// TestTrainingHashLeavesAlertsOut: the alerts change a run only through edits
// its checkpoints keep, so they are not in the training hash — not even as an
// empty [alerts] table, which would change the hash of every config and make a
// checkpoint written before [alerts] existed refuse to resume ("written under
// another config").
func TestTrainingHashLeavesAlertsOut(t *testing.T) {
	cfg := Default()
	var b bytes.Buffer
	if err := Encode(&b, cfg.Training()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "[alerts") {
		t.Errorf("the training config encodes an [alerts] table:\n%s", b.String())
	}
	other := cfg.Clone()
	other.Alerts.ToolCollapse.Enabled = !other.Alerts.ToolCollapse.Enabled
	if other.TrainingHash() != cfg.TrainingHash() {
		t.Error("an alert's setting changes the training hash")
	}
}
