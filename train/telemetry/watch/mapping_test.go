package watch

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDefaultMapping(t *testing.T) {
	m := DefaultMapping()
	if got := m.Trainers(); !slices.Equal(got, []string{"pixelis", "trl", "verl"}) {
		t.Fatalf("trainers %v", got)
	}
	for _, c := range []struct{ name, to, by string }{
		// TRL, as TensorBoardCallback names its logs.
		{"train/reward", "reward/total", "trl"},
		{"train/reward_std", "reward/std", "trl"},
		{"train/rewards/accuracy_reward/mean", "reward/accuracy_reward/raw", "trl"},
		{"train/rewards/accuracy_reward/std", "reward/accuracy_reward/std", "trl"},
		{"train/rewards/format_reward", "reward/format_reward/raw", "trl"},
		{"train/kl", "policy/kl", "trl"},
		{"train/entropy", "policy/entropy", "trl"},
		{"train/clip_ratio/region_mean", "policy/clip_ratio", "trl"},
		{"train/clip_ratio/low_mean", "policy/clip_ratio/low_mean", "trl"},
		{"train/clip_ratio/high_mean", "policy/clip_ratio/high_mean", "trl"},
		{"train/completions/mean_length", "behavior/traj_len_mean", "trl"},
		{"train/frac_reward_zero_std", "grpo/frac_zero_std", "trl"},
		{"train/learning_rate", "policy/lr", "trl"},
		// verl.
		{"critic/score/mean", "reward/final/raw", "verl"},
		{"critic/rewards/mean", "reward/total", "verl"},
		{"actor/kl_loss", "policy/kl", "verl"},
		{"actor/entropy", "policy/entropy", "verl"},
		{"actor/pg_clipfrac", "policy/clip_ratio", "verl"},
		{"response_length/mean", "behavior/traj_len_mean", "verl"},
		{"timing_s/step", "perf/step_time_s", "verl"},
		{"val-core/openai/gsm8k/acc/mean@8", "val/openai/gsm8k/pass@1", "verl"},
		{"val-core/geo3k/reward/best@8/mean", "val/geo3k/pass@8", "verl"},
		{"val-core/geo3k/reward/maj@8/mean", "val/geo3k/maj@8", "verl"},
		// Unknown names, and pixelis's own, pass unchanged.
		{"timing_s/gen", "timing_s/gen", ""},
		{"val-aux/geo3k/reward/std@8", "val-aux/geo3k/reward/std@8", ""},
		{"train/num_tokens", "train/num_tokens", ""},
		{"reward/total", "reward/total", ""},
		{"kpi/success_rate_ma100", "kpi/success_rate_ma100", "pixelis"},
	} {
		if to, by := m.Rename("", c.name); to != c.to || by != c.by {
			t.Errorf("Rename(%q) = %q by %q, want %q by %q", c.name, to, by, c.to, c.by)
		}
	}
}

func TestPatterns(t *testing.T) {
	m, err := ParseMapping(`
[x]
"a/*/b/*" = "z/*/*"
"a/*" = "y/*"
"a/*/b/c" = "exact-ish/*"
"*/tail" = "t/*"
"keep/*" = ""
`)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"a/1/b/2":     "z/1/2",
		"a/1/2/b/3":   "z/1/2/3", // a star spans slashes
		"a/1/b/c":     "exact-ish/1",
		"a/b":         "y/b",
		"a/":          "a/", // a star matches at least one byte
		"x/y/tail":    "t/x/y",
		"keep/this":   "keep/this",
		"a/b/b/c/b/d": "z/b/c/b/d", // the shortest first star that lets the rest match
	} {
		if to, _ := m.Rename("", name); to != want {
			t.Errorf("Rename(%q) = %q, want %q", name, to, want)
		}
	}
}

func TestLoadMappingExtends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "map.toml")
	os.WriteFile(path, []byte(`
[verl]
"critic/score/mean" = "kpi/success_rate"   # replaces the default rule
"timing_s/step" = ""                        # keeps the name
"val-core/openai/gsm8k/acc/mean@*" = "val/all/pass@1"

[openrlhf]
"train/policy_loss" = "policy/loss"
`), 0o644)
	m, err := LoadMapping(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Trainers(); !slices.Equal(got, []string{"openrlhf", "pixelis", "trl", "verl"}) {
		t.Fatalf("trainers %v", got)
	}
	for name, want := range map[string]string{
		"critic/score/mean":                "kpi/success_rate",
		"timing_s/step":                    "timing_s/step",
		"actor/entropy":                    "policy/entropy", // default rules stay
		"val-core/openai/gsm8k/acc/mean@4": "val/all/pass@1", // longer literal text beats the default pattern
		"val-core/other/acc/mean@4":        "val/other/pass@1",
		"train/policy_loss":                "policy/loss",
	} {
		if to, _ := m.Rename("", name); to != want {
			t.Errorf("Rename(%q) = %q, want %q", name, to, want)
		}
	}
}

// When two trainers' rules match a name, the declared trainer's come first, then
// the others' in name order; exact rules beat patterns.
func TestRulePrecedence(t *testing.T) {
	m, err := ParseMapping(`
[aaa]
"train/loss" = "from/aaa"
"x/*" = "pattern/aaa"
[zzz]
"train/loss" = "from/zzz"
"x/y" = "exact/zzz"
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ trainer, name, want string }{
		{"", "train/loss", "from/aaa"},
		{"zzz", "train/loss", "from/zzz"},
		{"trl", "train/loss", "policy/loss"},
		{"aaa", "x/y", "exact/zzz"},
	} {
		if to, _ := m.Rename(c.trainer, c.name); to != c.want {
			t.Errorf("Rename(%q, %q) = %q, want %q", c.trainer, c.name, to, c.want)
		}
	}
}

func TestMappingErrors(t *testing.T) {
	_, err := ParseMapping(`
[x]
"a/**" = "b"
"*" = "c"
"d" = "e/*"
`)
	if err == nil {
		t.Fatal("bad rules accepted")
	}
	for _, want := range []string{`[x] "a/**"`, `[x] "*"`, `[x] "d"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if _, err := ParseMapping(`"top" = "level"`); err == nil {
		t.Error("a rule outside a trainer table accepted")
	}
	if _, err := ParseMapping("[x]\n\"a\" = 3\n"); err == nil {
		t.Error("a number accepted as a name")
	}
	if _, err := LoadMapping(filepath.Join(t.TempDir(), "missing.toml")); err == nil {
		t.Error("missing file accepted")
	}
}

// A metric logged in other units is converted: verl's SFT trainer logs its
// learning rate in thousandths as train/lr(1e-3), shown as policy/lr, the rate
// itself. A user file can scale its own names.
func TestScaledRules(t *testing.T) {
	if to, by := DefaultMapping().Rename("", "train/lr(1e-3)"); to != "policy/lr" || by != "verl" {
		t.Fatalf("train/lr(1e-3) is %q by %q", to, by)
	}
	n := DefaultMapping().Namer(NamerOptions{Trainer: "verl"})
	got := n.Map(map[string]float64{"train/lr(1e-3)": 0.002, "train/loss": 0.5})
	if got["policy/lr"] != 0.002*1e-3 || got["policy/loss"] != 0.5 || len(got) != 2 {
		t.Fatalf("mapped %v", got)
	}
	if n.Scale("train/lr(1e-3)") != 1e-3 || n.Scale("train/loss") != 1 || n.Scale("custom/x") != 1 {
		t.Fatal("Scale")
	}
	m, err := ParseMapping(`
[mine]
"time_ms" = { to = "perf/step_time_s", scale = 0.001 }
"tokens_k" = { to = "behavior/traj_len_mean", scale = 1000 }
`)
	if err != nil {
		t.Fatal(err)
	}
	got = m.Namer(NamerOptions{}).Map(map[string]float64{"time_ms": 1500, "tokens_k": 2})
	if got["perf/step_time_s"] != 1.5 || got["behavior/traj_len_mean"] != 2000 {
		t.Fatalf("user scales: %v", got)
	}
	for text, want := range map[string]string{
		`"a" = { to = "b", scale = 0 }`:             "finite number other than 0",
		`"a" = { to = "b", scale = inf }`:           "finite number other than 0",
		`"a" = { to = "b", scale = "1e-3" }`:        `"scale" is string`,
		`"a" = { to = "b" }`:                        `"scale" is <nil>`,
		`"a" = { scale = 2.0 }`:                     `"to" is <nil>`,
		`"a" = { to = "b", scale = 2.0, unit = 1 }`: `"unit": want only`,
		`"a" = { to = "", scale = 2.0 }`:            "needs a name of its own",
	} {
		_, err := ParseMapping("[x]\n" + text + "\n")
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `[x] "a"`) {
			t.Errorf("%s: error %v, want one naming the rule and saying %q", text, err, want)
		}
	}
	if _, err := ParseMapping("[kinds]\n\"a\" = { to = \"rl\", scale = 2.0 }\n"); err == nil || !strings.Contains(err.Error(), "no scale") {
		t.Errorf("a scaled kind: %v", err)
	}
}

func BenchmarkRename(b *testing.B) {
	m := DefaultMapping()
	names := []string{"train/rewards/accuracy_reward/mean", "val-core/openai/gsm8k/acc/mean@8", "critic/score/mean", "custom/unknown/name"}
	for i := 0; b.Loop(); i++ {
		m.Rename("", names[i%len(names)])
	}
}
