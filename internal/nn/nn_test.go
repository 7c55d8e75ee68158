package nn

import (
	"math"
	"slices"
	"testing"

	"github.com/pixelis/pixelis/internal/blas"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func run(t *testing.T, g *G.ExprGraph, wrt []*G.Node, out *G.Node) {
	t.Helper()
	loss, err := G.Sum(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(wrt) > 0 {
		if _, err := G.Grad(loss, wrt...); err != nil {
			t.Fatal(err)
		}
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
}

// Rows with large logits stay finite and match the float64 formula.
func TestLogSoftmaxStable(t *testing.T) {
	x := []float32{1000, 999, -1000, 0, 1, 2}
	g := G.NewGraph()
	n := G.NewMatrix(g, tensor.Float32, G.WithShape(2, 3), G.WithName("x"), G.WithValue(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(append([]float32(nil), x...)))))
	lp, err := LogSoftmax(nil, n)
	if err != nil {
		t.Fatal(err)
	}
	run(t, g, nil, lp)
	got := lp.Value().Data().([]float32)
	for r := 0; r < 2; r++ {
		row := x[r*3 : r*3+3]
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, float64(v))
		}
		var s float64
		for _, v := range row {
			s += math.Exp(float64(v) - m)
		}
		for j, v := range row {
			want := float64(v) - m - math.Log(s)
			if math.Abs(float64(got[r*3+j])-want) > 1e-4 {
				t.Fatalf("row %d col %d: %v, want %v", r, j, got[r*3+j], want)
			}
		}
	}
}

// Min and Max against a scalar give the right values and route the gradient to
// the chosen operand.
func TestMinMaxValuesAndGradients(t *testing.T) {
	for _, c := range []struct {
		name     string
		f        func(a, b *G.Node) (*G.Node, error)
		want     []float32
		wantGrad []float32
	}{
		{"min", Min, []float32{-1, 0.25, 0.5}, []float32{1, 1, 0}},
		{"max", Max, []float32{0.5, 0.5, 2}, []float32{0, 0, 1}},
	} {
		g := G.NewGraph()
		a := G.NewVector(g, tensor.Float32, G.WithShape(3), G.WithName("a"), G.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{-1, 0.25, 2}))))
		out, err := c.f(a, G.NewConstant(float32(0.5)))
		if err != nil {
			t.Fatal(err)
		}
		run(t, g, []*G.Node{a}, out)
		got := out.Value().Data().([]float32)
		grad, err := a.Grad()
		if err != nil {
			t.Fatal(err)
		}
		gv := grad.Data().([]float32)
		for i := range got {
			if got[i] != c.want[i] || gv[i] != c.wantGrad[i] {
				t.Fatalf("%s: values %v grads %v, want %v %v", c.name, got, gv, c.want, c.wantGrad)
			}
		}
	}
}

// gorgonia and its tensor package multiply with the project's BLAS (and a
// graph's product comes out right).
func TestProjectBLAS(t *testing.T) {
	if _, ok := G.WhichBLAS().(blas.Implementation); !ok {
		t.Fatalf("gorgonia uses %T", G.WhichBLAS())
	}
	if _, ok := tensor.WhichBLAS().(blas.Implementation); !ok {
		t.Fatalf("tensor uses %T", tensor.WhichBLAS())
	}
	g := G.NewGraph()
	a := G.NewMatrix(g, G.Float32, G.WithShape(2, 3), G.WithValue(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float32{1, 2, 3, 4, 5, 6}))))
	b := G.NewMatrix(g, G.Float32, G.WithShape(3, 2), G.WithValue(tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float32{1, 0, 0, 1, 1, 1}))))
	c := G.Must(G.Mul(a, b))
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	got := c.Value().Data().([]float32)
	if want := []float32{4, 5, 10, 11}; !slices.Equal(got, want) {
		t.Fatalf("product %v, want %v", got, want)
	}
}
