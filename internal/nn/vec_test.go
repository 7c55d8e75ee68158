package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chewxy/math32"
)

// specialValues are random floats with every kind of special value among
// them: zeros of both signs, subnormals, the largest finite, infinities, NaN.
func specialValues(rng *rand.Rand, n int) []float32 {
	specials := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1.5e-39, 3.4e38, -3.4e38,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	v := make([]float32, n)
	for i := range v {
		if rng.IntN(4) == 0 {
			v[i] = specials[rng.IntN(len(specials))]
		} else {
			v[i] = float32(rng.NormFloat64())
		}
	}
	return v
}

// The assembly and Go forms of every loop give the same bits, and both give
// the operation's definition, at every length around the vector widths.
func TestVecMatchesGo(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this machine: only the Go forms run")
	}
	hasFMA := useFMA
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 70; n++ {
		x, y := specialValues(rng, n), specialValues(rng, n)
		s := float32(rng.NormFloat64())
		bits := make([]byte, (n+7)/8)
		for i := range n {
			if rng.IntN(2) == 0 {
				bits[i/8] |= 1 << (i % 8)
			}
		}
		forms := map[string]func(out []float32, outBits []byte){
			"reluMask": func(out []float32, ob []byte) { reluMask(x, out, ob) },
			"maskMul":  func(out []float32, _ []byte) { maskMul(x, bits, out) },
			"add":      func(out []float32, _ []byte) { add(x, y, out) },
			"mulAdd":   func(out []float32, _ []byte) { mulAdd(x, y, out, s) },
			"scale":    func(out []float32, _ []byte) { scale(x, out, s) },
			"product":  func(out []float32, _ []byte) { product(x, out, s) },
			"exp":      func(out []float32, _ []byte) { exp(x, out) },
		}
		def := map[string]func(i int, ob []byte) float32{
			"reluMask": func(i int, ob []byte) float32 {
				m := float32(0)
				if x[i] >= 0 {
					m = 1
				}
				if got := ob[i/8] >> (i % 8) & 1; float32(got) != m {
					t.Fatalf("reluMask n=%d: bit %d is %d for %v", n, i, got, x[i])
				}
				return x[i] * m
			},
			"maskMul": func(i int, _ []byte) float32 { return x[i] * float32(bits[i/8]>>(i%8)&1) },
			"add":     func(i int, _ []byte) float32 { return x[i] + y[i] },
			"mulAdd":  func(i int, _ []byte) float32 { p := y[i] * s; return x[i] + p },
			"scale":   func(i int, _ []byte) float32 { return x[i] * s },
			"product": func(i int, _ []byte) float32 { return float32(math.FMA(float64(x[i]), float64(s), 0)) },
			"exp":     func(i int, _ []byte) float32 { return math32.Exp(x[i]) },
		}
		for name, f := range forms {
			asm, asmBits := make([]float32, n), make([]byte, (n+7)/8)
			f(asm, asmBits)
			useAVX2, useFMA = false, false
			gof, goBits := make([]float32, n), make([]byte, (n+7)/8)
			f(gof, goBits)
			useAVX2, useFMA = true, hasFMA
			for i := range n {
				want := def[name](i, goBits)
				if math.Float32bits(asm[i]) != math.Float32bits(want) || math.Float32bits(gof[i]) != math.Float32bits(want) {
					t.Fatalf("%s n=%d [%d]: assembly %v, Go %v, want %v", name, n, i, asm[i], gof[i], want)
				}
			}
			if string(asmBits) != string(goBits) {
				t.Fatalf("%s n=%d: assembly bits %x, Go bits %x", name, n, asmBits, goBits)
			}
		}
	}
}

// The assembly exp gives math32.Exp's bits over a sweep of every kind of
// float32: a bit pattern every 1021 from 0 to 2³², both signs, all
// exponents, subnormals, infinities and NaNs among them.
func TestExpMatchesMath32(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this machine: only the Go form runs")
	}
	const stride = 1021
	x := make([]float32, 0, 1<<20)
	out := make([]float32, 1<<20)
	check := func() {
		exp(x, out)
		for i, v := range x {
			if want := math32.Exp(v); math.Float32bits(out[i]) != math.Float32bits(want) {
				t.Fatalf("exp(%v) (bits %#x) = %v (%#x), math32 gives %v (%#x)", v, math.Float32bits(v), out[i], math.Float32bits(out[i]), want, math.Float32bits(want))
			}
		}
		x = x[:0]
	}
	for b := uint64(0); b < 1<<32; b += stride {
		x = append(x, math.Float32frombits(uint32(b)))
		if len(x) == cap(x) {
			check()
		}
	}
	check()
}
