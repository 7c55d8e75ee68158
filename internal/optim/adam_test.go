package optim

import (
	"errors"
	"math"
	"testing"
)

// One Adam step from zero moments moves every weight by lr·sign(g) (bias-corrected m̂/√v̂ = ±1).
func TestAdamFirstStepIsSignTimesLR(t *testing.T) {
	p := []Param{{Name: "w", Data: []float32{1, -2, 3}, Grad: []float32{0.5, -4, 1e-3}}}
	a := NewAdam(DefaultAdam())
	if _, err := a.Step(p, 0.1); err != nil {
		t.Fatal(err)
	}
	want := []float32{0.9, -1.9, 2.9}
	for i := range want {
		if math.Abs(float64(p[0].Data[i]-want[i])) > 1e-4 {
			t.Fatalf("w[%d] = %v, want %v", i, p[0].Data[i], want[i])
		}
	}
}

// Adam minimises a quadratic.
func TestAdamConverges(t *testing.T) {
	w := []float32{5, -3}
	g := make([]float32, 2)
	a := NewAdam(DefaultAdam())
	for i := 0; i < 2000; i++ {
		for j := range w {
			g[j] = 2 * (w[j] - 1)
		}
		if _, err := a.Step([]Param{{Name: "w", Data: w, Grad: g}}, 0.05); err != nil {
			t.Fatal(err)
		}
	}
	for j := range w {
		if math.Abs(float64(w[j]-1)) > 1e-2 {
			t.Fatalf("w = %v, want 1", w)
		}
	}
}

func TestAdamRejectsNonFiniteAndKeepsWeights(t *testing.T) {
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		w := []float32{1, 2}
		a := NewAdam(DefaultAdam())
		_, err := a.Step([]Param{{Name: "w", Data: w, Grad: []float32{0.1, bad}}}, 0.1)
		if !errors.Is(err, ErrNonFinite) {
			t.Fatalf("err = %v, want ErrNonFinite", err)
		}
		if w[0] != 1 || w[1] != 2 || a.State().Step != 0 {
			t.Fatalf("weights or step changed after a non-finite gradient: %v step %d", w, a.State().Step)
		}
	}
}

func TestAdamClipsGlobalNorm(t *testing.T) {
	cfg := DefaultAdam()
	cfg.ClipNorm = 1
	a := NewAdam(cfg)
	res, err := a.Step([]Param{{Name: "w", Data: []float32{0, 0}, Grad: []float32{3, 4}}}, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Clipped || math.Abs(res.GradNorm-5) > 1e-9 {
		t.Fatalf("got %+v, want norm 5 clipped", res)
	}
}

// Restoring the state makes the next step identical to an uninterrupted run.
func TestAdamRestoreIsExact(t *testing.T) {
	grads := [][]float32{{0.3, -0.1}, {0.2, 0.4}, {-0.5, 0.1}}
	run := func(split int) []float32 {
		w := []float32{1, 1}
		a := NewAdam(DefaultAdam())
		for i, g := range grads {
			if i == split {
				st := a.State()
				cp := AdamState{Step: st.Step, M: map[string][]float32{}, V: map[string][]float32{}}
				for k, v := range st.M {
					cp.M[k] = append([]float32(nil), v...)
				}
				for k, v := range st.V {
					cp.V[k] = append([]float32(nil), v...)
				}
				a = NewAdam(DefaultAdam())
				a.Restore(cp)
			}
			if _, err := a.Step([]Param{{Name: "w", Data: w, Grad: g}}, 0.01); err != nil {
				t.Fatal(err)
			}
		}
		return w
	}
	a, b := run(-1), run(2)
	if a[0] != b[0] || a[1] != b[1] {
		t.Fatalf("resumed %v != uninterrupted %v", b, a)
	}
}

func TestScheduleWarmupCosine(t *testing.T) {
	s := Schedule{Kind: "cosine", Base: 1, Warmup: 10, Total: 110}
	cases := []struct {
		step int
		want float64
	}{{0, 0.1}, {9, 1}, {10, 1}, {60, 0.5}, {110, 0}, {500, 0}}
	for _, c := range cases {
		if got := s.At(c.step); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("At(%d) = %v, want %v", c.step, got, c.want)
		}
	}
	if got := (Schedule{Kind: "constant", Base: 0.3}).At(1000); got != 0.3 {
		t.Errorf("constant = %v", got)
	}
}
