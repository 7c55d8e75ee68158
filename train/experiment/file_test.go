package experiment

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/configs"
)

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadDefaults(t *testing.T) {
	f, err := Load(writeFile(t, "e.toml", "name = \"e\"\nconfig = \"smoke\"\nseeds = [1, 2]\nshared_sft = true\n[[arms]]\nname = \"a\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.BaseConfig() != "smoke" || f.Tail != 10 || len(f.Series) != 2 || f.Report[0] != "test/rft/all/pass@1" {
		t.Fatalf("defaults: %+v", f)
	}
	g, err := Load(writeFile(t, "e.toml", "name = \"e\"\nconfig = \"smoke\"\nseeds = [1]\nphases = [\"sft\", \"test\"]\n[[arms]]\nname = \"a\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if g.Report[0] != "test/sft/all/pass@1" || len(g.Report) != 2 {
		t.Fatalf("an SFT-only experiment reports %v", g.Report)
	}
}

// Every problem is named by its key, all at once.
func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"unknown key", "name = \"e\"\nseeds = [1]\nbogus = 1\n[[arms]]\nname = \"a\"\n", []string{"bogus: unknown key"}},
		{"nothing", "", []string{"name: must be a directory name", "seeds: must list at least one seed", "arms: must list at least one arm"}},
		{"arms", "name = \"e\"\nconfig = \"smoke\"\nseeds = [1, 1]\n[[arms]]\nname = \"a\"\n[[arms]]\nname = \"a\"\n[[arms]]\nname = \"sft\"\n",
			[]string{"seeds[1]: repeats 1", "arms[1].name: repeats \"a\"", "arms[2].name: must be a directory name other than sft"}},
		{"bad override", "name = \"e\"\nconfig = \"smoke\"\nseeds = [1]\n[[arms]]\nname = \"a\"\nset = [\"rft.grup_size=4\"]\n",
			[]string{"arms[0] (a):", "--set rft.grup_size=4: unknown key rft.grup_size"}},
		{"shared sft", "name = \"e\"\nconfig = \"smoke\"\nseeds = [1]\nshared_sft = true\n[[arms]]\nname = \"a\"\nset = [\"sft.lr=0.1\", \"policy.lora_rank=4\"]\n",
			[]string{"arms[0].set[0]: sft.lr cannot differ", "arms[0].set[1]: policy.lora_rank cannot differ"}},
		{"phases", "name = \"e\"\nconfig = \"smoke\"\nseeds = [1]\nphases = [\"rft\", \"sft\"]\n[[arms]]\nname = \"a\"\n",
			[]string{"phases[1]: must be some of sft, rft, ttrl, test in that order"}},
		{"shared rft", "name = \"e\"\nconfig = \"smoke\"\nseeds = [1]\nshared_rft = true\n[[arms]]\nname = \"a\"\nset = [\"rft.lr=0.1\", \"reward.clip=3\", \"env.shift=blur\", \"ttrl.lr=0.1\"]\n[[arms]]\nname = \"rft\"\n",
			[]string{"arms[0].set[0]: rft.lr cannot differ between arms that share their RFT model", "arms[0].set[1]: reward.clip cannot differ", "arms[1].name: must be a directory name other than sft and rft"}},
		{"shared both", "name = \"e\"\nconfig = \"smoke\"\nseeds = [1]\nshared_rft = true\nshared_sft = true\n[[arms]]\nname = \"a\"\n",
			[]string{"shared_rft: the shared RFT run trains its own SFT model"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(writeFile(t, "e.toml", c.text))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not say %q", err, w)
				}
			}
		})
	}
}

// An arm of its own base config may not change the policy its shared SFT trains.
func TestArmConfigKeepsPolicy(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "wide.toml"), []byte("[policy]\nhidden = [64]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "e.toml")
	text := "name = \"e\"\nconfig = \"smoke\"\nseeds = [1]\nshared_sft = true\n[[arms]]\nname = \"a\"\nconfig = \"wide.toml\"\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "arms[0].config: its [policy] differs") {
		t.Fatalf("error %v", err)
	}
}

func TestPlanSharedSFT(t *testing.T) {
	f, err := Load(writeFile(t, "e.toml", "name = \"e\"\nconfig = \"smoke\"\nseeds = [3, 4]\nshared_sft = true\nset = [\"rft.steps=2\"]\n[[arms]]\nname = \"a\"\nset = [\"rft.lr=0.01\"]\n[[arms]]\nname = \"b\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	jobs := Plan(f, "/out")
	if len(jobs) != 6 {
		t.Fatalf("%d jobs, want 2 SFT + 2 arms × 2 seeds", len(jobs))
	}
	a4 := jobs[3]
	if a4.Name() != "a/seed-4" || a4.Needs != jobs[1] || a4.Dir != "/out/runs/a/seed-4" {
		t.Fatalf("job %s needs %v in %s", a4.Name(), a4.Needs, a4.Dir)
	}
	args := strings.Join(a4.Args, " ")
	for _, w := range []string{"--phases rft,test", "--init /out/sft/seed-4/checkpoints/sft_final", "--set rft.steps=2 --set rft.lr=0.01 --set run.seed=4"} {
		if !strings.Contains(args, w) {
			t.Errorf("args %q lack %q", args, w)
		}
	}
	if s := strings.Join(jobs[0].Args, " "); !strings.Contains(s, "--phases sft") || strings.Contains(s, "rft.lr") {
		t.Errorf("SFT job args %q", s)
	}
	if jobs[0].Status() != StateNew {
		t.Error("a job with no directory is not new")
	}
}

// With shared RFT each seed's SFT and RFT run once, and every arm's TTRL and
// test start from that seed's RFT model, in the world the arm names.
func TestPlanSharedRFT(t *testing.T) {
	f, err := Load(writeFile(t, "e.toml", "name = \"e\"\nconfig = \"smoke\"\nseeds = [3, 4]\nshared_rft = true\nset = [\"ttrl.steps=2\"]\n[[arms]]\nname = \"a\"\nset = [\"env.shift=blur\"]\n[[arms]]\nname = \"b\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	jobs := Plan(f, "/out")
	if len(jobs) != 6 {
		t.Fatalf("%d jobs, want 2 shared RFT + 2 arms × 2 seeds", len(jobs))
	}
	if jobs[1].Name() != "rft/seed-4" || jobs[1].Dir != "/out/rft/seed-4" || jobs[1].DoneMark() != "checkpoints/rft_final" {
		t.Fatalf("shared job %s in %s, done at %s", jobs[1].Name(), jobs[1].Dir, jobs[1].DoneMark())
	}
	if s := strings.Join(jobs[1].Args, " "); !strings.Contains(s, "--phases sft,rft") || strings.Contains(s, "env.shift") {
		t.Errorf("shared job args %q", s)
	}
	a4 := jobs[3]
	args := strings.Join(a4.Args, " ")
	if a4.Name() != "a/seed-4" || a4.Needs != jobs[1] {
		t.Fatalf("job %s needs %v", a4.Name(), a4.Needs)
	}
	for _, w := range []string{"--phases ttrl,test", "--init /out/rft/seed-4/checkpoints/rft_final", "--set env.shift=blur --set run.seed=4"} {
		if !strings.Contains(args, w) {
			t.Errorf("args %q lack %q", args, w)
		}
	}
	if !slices.Contains(f.Report, "test/ttrl_minus_rft/pass@1") {
		t.Errorf("default report %v lacks the paired TTRL − RFT change", f.Report)
	}
}

// The shipped experiment files load, every arm's config resolved.
func TestShippedExperiments(t *testing.T) {
	for _, name := range []string{"pixel_reasoner", "reward_curriculum", "sft_curriculum", "ttrl"} {
		f, err := Load(filepath.Join("..", "..", "configs", "experiments", name+".toml"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(f.Seeds) < 3 || len(f.Arms) < 2 {
			t.Errorf("%s: %d seeds, %d arms", name, len(f.Seeds), len(f.Arms))
		}
	}
}

// A shared RFT run never reads [ttrl]: changing the file's TTRL settings
// keeps it (its model is still the one the arms start from), while an arm's
// run trained under other TTRL settings is refused, naming the key.
func TestCheckRunsJudgesSharedRFTWithoutTTRL(t *testing.T) {
	f, err := Load(writeFile(t, "e.toml", "name = \"e\"\nconfig = \"smoke\"\nseeds = [3]\nshared_rft = true\nset = [\"ttrl.steps=2\"]\n[[arms]]\nname = \"a\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	jobs := Plan(f, t.TempDir())
	recordWithTTRLSteps := func(j *Job, steps int) {
		cfg, err := configs.Resolve(f.ArmConfig(j.arm), append(f.sets(j.arm, j.Seed), fmt.Sprintf("ttrl.steps=%d", steps)))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := configs.Encode(&b, cfg); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(j.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(j.Dir, "config.toml"), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recordWithTTRLSteps(jobs[0], 7)
	if err := CheckRuns(f, jobs); err != nil {
		t.Fatalf("the shared RFT run is refused for a [ttrl] key: %v", err)
	}
	recordWithTTRLSteps(jobs[1], 7)
	err = CheckRuns(f, jobs)
	if err == nil || !strings.Contains(err.Error(), "a/seed-3") || !strings.Contains(err.Error(), "ttrl.steps = 7, the experiment's: 2") {
		t.Fatalf("an arm trained with other TTRL settings: %v", err)
	}
	if strings.Contains(err.Error(), "rft/seed-3") {
		t.Errorf("the shared RFT run is named: %v", err)
	}
}
