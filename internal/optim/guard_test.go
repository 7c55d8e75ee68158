package optim

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// An update whose result is not finite (a finite gradient at an absurd
// learning rate), or that would multiply the weights' norm by more than
// MaxGrowth, is refused whole: weights, moments and step count stay as they
// were, and the next sound update is exactly what it would have been.
func TestAdamRefusesDivergingUpdates(t *testing.T) {
	cfg := DefaultAdam()
	cfg.MaxGrowth = 10
	grad := []float32{0.5, -1, 2}
	for _, c := range []struct {
		lr   float64
		want error
	}{{1e40, ErrNonFinite}, {1e30, ErrDiverged}, {1e3, ErrDiverged}} {
		w := []float32{1, 2, 3}
		a := NewAdam(cfg)
		ref := NewAdam(cfg)
		wRef := slices.Clone(w)
		if _, err := a.Step([]Param{{Name: "w", Data: w, Grad: grad}}, 0.01); err != nil {
			t.Fatal(err)
		}
		ref.Step([]Param{{Name: "w", Data: wRef, Grad: grad}}, 0.01)
		before := slices.Clone(w)
		m, v := slices.Clone(a.State().M["w"]), slices.Clone(a.State().V["w"])
		_, err := a.Step([]Param{{Name: "w", Data: w, Grad: grad}}, c.lr)
		if !errors.Is(err, c.want) {
			t.Fatalf("lr %g: err %v, want %v", c.lr, err, c.want)
		}
		if !slices.Equal(w, before) || !slices.Equal(a.State().M["w"], m) || !slices.Equal(a.State().V["w"], v) || a.State().Step != 1 {
			t.Fatalf("lr %g: the refused update changed the state: w %v", c.lr, w)
		}
		a.Step([]Param{{Name: "w", Data: w, Grad: grad}}, 0.01)
		ref.Step([]Param{{Name: "w", Data: wRef, Grad: grad}}, 0.01)
		for i := range w {
			if math.Float32bits(w[i]) != math.Float32bits(wRef[i]) {
				t.Fatalf("lr %g: after a refused update w = %v, without it %v", c.lr, w, wRef)
			}
		}
	}
}

// Norms below 1 count as 1: weights starting at zero (a LoRA B) may move.
func TestAdamGrowthFromSmallNorm(t *testing.T) {
	cfg := DefaultAdam()
	cfg.MaxGrowth = 2
	w := []float32{0, 0, 0}
	if _, err := NewAdam(cfg).Step([]Param{{Name: "b", Data: w, Grad: []float32{1, 1, 1}}}, 0.1); err != nil {
		t.Fatal(err)
	}
}
