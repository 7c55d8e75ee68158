package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/alerts"
)

// resumeSteps are the run-wide steps a run was resumed at, from its
// events.jsonl ("… resumed at step N from …" phase events).
func resumeSteps(dir string) []int {
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []int
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	for sc.Scan() {
		var e struct {
			Step    int    `json:"step"`
			Kind    string `json:"kind"`
			Message string `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Kind == "phase" && strings.Contains(e.Message, " resumed at step ") {
			out = append(out, e.Step)
		}
	}
	return out
}

// replay runs cfg's detectors over a run as its processes judged it live:
// alerts.Replay's order (Set.ObserveLogged), and at each resume the detectors' state is carried
// through a checkpoint as the runner carries it (alerts.Set's MarshalState
// and RestoreState), so the time a run spent stopped is no stall.
func replay(r run, cfg configs.Alerts) []alerts.Alert {
	s := alerts.New(cfg)
	var out []alerts.Alert
	resumes := r.Resumes
	for _, rec := range r.Records {
		if len(resumes) > 0 && rec.Step > resumes[0] {
			for len(resumes) > 0 && rec.Step > resumes[0] {
				resumes = resumes[1:]
			}
			s = restored(s, cfg)
		}
		out = append(out, s.ObserveLogged(rec)...)
	}
	return out
}

// restored is a fresh set of cfg's detectors given s's state, as a resumed run builds it.
func restored(s *alerts.Set, cfg configs.Alerts) *alerts.Set {
	raw, err := s.MarshalState()
	if err != nil {
		panic(err) // the state is plain data
	}
	n := alerts.New(cfg)
	if err := n.RestoreState(raw); err != nil {
		panic(err)
	}
	return n
}
