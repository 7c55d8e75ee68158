package ckpt

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPrune(t *testing.T) {
	type ck struct {
		step int64
		kind Kind
	}
	tests := []struct {
		name    string
		saves   []ck   // in save order; latest names the last
		latest  string // overrides latest when set
		broken  string // a checkpoint whose manifest is made unreadable
		keep    int
		removed []string
	}{
		{"keeps last k periodic", []ck{{1, KindPeriodic}, {2, KindPeriodic}, {3, KindPeriodic}, {4, KindPeriodic}}, "", "", 2,
			[]string{"step_000001", "step_000002"}},
		{"nothing to do", []ck{{1, KindPeriodic}, {2, KindPeriodic}}, "", "", 3, nil},
		{"stage manual final always kept", []ck{{1, KindStage}, {2, KindPeriodic}, {3, KindManual}, {4, KindPeriodic}, {5, KindFinal}, {6, KindPeriodic}}, "", "", 1,
			[]string{"step_000002", "step_000004"}},
		{"signal counts as periodic", []ck{{1, KindSignal}, {2, KindPeriodic}, {3, KindSignal}}, "", "", 1,
			[]string{"step_000001", "step_000002"}},
		{"keep zero spares only latest", []ck{{1, KindPeriodic}, {2, KindPeriodic}, {3, KindPeriodic}}, "", "", 0,
			[]string{"step_000001", "step_000002"}},
		{"latest never removed", []ck{{1, KindPeriodic}, {2, KindPeriodic}, {3, KindPeriodic}}, "step_000001", "", 1,
			[]string{"step_000002"}},
		{"unreadable manifest left alone", []ck{{1, KindPeriodic}, {2, KindPeriodic}, {3, KindPeriodic}}, "", "step_000001", 1,
			[]string{"step_000002"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			var all []string
			for _, s := range tc.saves {
				if _, err := Save(root, testCheckpoint(s.step, s.kind)); err != nil {
					t.Fatal(err)
				}
				all = append(all, StepName(s.step))
			}
			if tc.latest != "" {
				if err := os.WriteFile(filepath.Join(root, "latest"), []byte(tc.latest+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.broken != "" {
				if err := os.WriteFile(filepath.Join(root, tc.broken, ManifestFile), []byte("not json"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			removed, err := Prune(root, tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(removed, tc.removed) {
				t.Fatalf("removed %v, want %v", removed, tc.removed)
			}
			infos, err := List(root)
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, in := range infos {
				left = append(left, in.Name)
			}
			slices.Sort(left)
			want := slices.DeleteFunc(slices.Clone(all), func(n string) bool { return slices.Contains(tc.removed, n) })
			if !slices.Equal(left, want) {
				t.Errorf("left %v, want %v", left, want)
			}
			if d := dotEntries(t, root); len(d) != 0 {
				t.Errorf("prune left %v", d)
			}
			if _, err := Latest(root); err != nil {
				t.Errorf("latest broken by prune: %v", err)
			}
		})
	}
}

func TestPruneRejectsNegativeKeep(t *testing.T) {
	if _, err := Prune(t.TempDir(), -1); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("error %v", err)
	}
}

func TestListOrderAndLatest(t *testing.T) {
	root := t.TempDir()
	for _, s := range []int64{30, 10, 20} { // saved out of order; List sorts by step
		if _, err := Save(root, testCheckpoint(s, KindPeriodic)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "junk"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, ".tmp-step_000040-99"), 0o755); err != nil {
		t.Fatal(err)
	}
	infos, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range infos {
		name := in.Name
		if in.Err != nil {
			name += "!"
		}
		if in.Latest {
			name += "*"
		}
		got = append(got, name)
	}
	if want := []string{"junk!", "step_000010", "step_000020*", "step_000030"}; !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v (damaged first, temporaries hidden, latest marked)", got, want)
	}
}

func TestLatestErrors(t *testing.T) {
	tests := []struct {
		name    string
		content *string // nil: no latest file
		msg     string
	}{
		{"no pointer", nil, "does not exist"},
		{"points nowhere", ptr("step_000999\n"), `names "step_000999", which does not exist`},
		{"points outside", ptr("../../etc\n"), "name"},
		{"empty", ptr(""), "empty name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.content != nil {
				os.WriteFile(filepath.Join(root, "latest"), []byte(*tc.content), 0o644)
			}
			_, err := Latest(root)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.msg)
			}
		})
	}
}

func ptr(s string) *string { return &s }
