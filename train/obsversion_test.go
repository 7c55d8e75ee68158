package train

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/stream"
)

// A checkpoint made on another observation is refused by evaluation, RFT's
// initialisation and resume alike, naming both versions, before any shape
// is compared; one made on this observation loads.
func TestCheckpointOfAnotherObservationIsRefused(t *testing.T) {
	cfg := configs.Default()
	params, err := policy.New(setup.PolicyConfig(cfg), stream.New(1, stream.Init, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	save := func(name string, obs *ckpt.Observation) string {
		path, err := ckpt.Save(root, ckpt.Checkpoint{
			Name: name, Phase: ckpt.PhaseSFT, Step: 1, Kind: ckpt.KindFinal, ConfigHash: cfg.TrainingHash(),
			Files: map[string][]ckpt.Tensor{filePolicy: setup.PolicyTensors(params)}, State: []byte(`{"phase":"sft","step":1}`),
			Observation: obs,
		})
		if err != nil {
			t.Fatal(err)
		}
		return path
	}
	want := fmt.Sprintf("was made on observation version 1, this pixelis observes version %d", env.ObsVersion)
	for name, obs := range map[string]*ckpt.Observation{"unrecorded": nil, "older": {Version: 1, Width: env.ObsDim}} {
		path := save(name, obs)
		if _, err := setup.LoadPolicy(cfg, path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: LoadPolicy: %v, want %q", name, err, want)
		}
		if err := CheckResume(cfg, path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: CheckResume: %v, want %q", name, err, want)
		}
	}
	path := save("current", &ckpt.Observation{Version: env.ObsVersion, Width: env.ObsDim})
	if _, err := setup.LoadPolicy(cfg, path); err != nil {
		t.Errorf("a checkpoint of this observation: %v", err)
	}
	m, err := ckpt.Inspect(path)
	if err != nil || m.ObservationVersion() != env.ObsVersion {
		t.Errorf("manifest observation %+v, %v", m.Observation, err)
	}
}
