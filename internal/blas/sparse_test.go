package blas

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	gblas "gonum.org/v1/gonum/blas"
)

// forEachSparse runs f with the sparse kernel of the CPU, if any, and with
// the fallback.
func forEachSparse(t *testing.T, f func(t *testing.T)) {
	saved := sparseAsm
	defer func() { sparseAsm = saved }()
	if saved {
		sparseAsm = true
		t.Run("avx512", f)
	}
	sparseAsm = false
	t.Run("saxpy", f)
}

// sparseProblem is C (+)= A·B with A's entries zero with probability 1-density.
func sparseProblem(rng *rand.Rand, m, n, k int, density float64, pad [3]int) problem {
	p := newProblem(rng, gblas.NoTrans, gblas.NoTrans, m, n, k, 1, 1, pad)
	for i := range m {
		for l := range k {
			if rng.Float64() >= density {
				p.a[i*p.lda+l] = 0
			}
		}
	}
	return p
}

func runSparse(p problem) {
	SgemmSparseA(p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, p.c, p.ldc)
}

func TestSgemmSparseA(t *testing.T) {
	forEachSparse(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 11))
		for _, m := range []int{0, 1, 3, 20} {
			for _, n := range []int{1, 15, 16, 17, 100, 255, 256, 257, 300, 513} {
				for _, k := range []int{0, 1, 15, 16, 17, 33, 1416} {
					for _, d := range []float64{0, 0.08, 1} {
						p := sparseProblem(rng, m, n, k, d, [3]int{rng.IntN(4), rng.IntN(4), rng.IntN(4)})
						got := p.clone()
						runSparse(got)
						check(t, p, got)
					}
				}
			}
		}
	})
}

// A NaN in A reaches its row of C; an Inf in B reaches only rows that use
// it; every row is computed alone, so a row's bits do not depend on the
// others.
func TestSgemmSparseANonFiniteAndRows(t *testing.T) {
	forEachSparse(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(12, 12))
		const m, n, k = 6, 40, 50
		p := sparseProblem(rng, m, n, k, 0.1, [3]int{})
		for i := range m {
			p.a[i*p.lda+7] = 0
		}
		p.a[2*p.lda+7] = 1
		p.b[7*p.ldb+5] = float32(math.Inf(1))
		p.a[4*p.lda+30] = float32(math.NaN())
		got := p.clone()
		runSparse(got)
		for i := range m {
			for j := range n {
				v := float64(got.c[i*got.ldc+j])
				switch {
				case i == 4:
					if !math.IsNaN(v) {
						t.Fatalf("C[4,%d] = %v, want NaN from A", j, v)
					}
				case i == 2 && j == 5:
					if !math.IsInf(v, 1) {
						t.Fatalf("C[2,5] = %v, want +Inf from B", v)
					}
				case math.IsNaN(v) || math.IsInf(v, 0):
					t.Fatalf("C[%d,%d] = %v", i, j, v)
				}
			}
		}
		for i := range m {
			row := problem{m: 1, n: n, k: k, a: p.a[i*p.lda:], lda: p.lda, b: p.b, ldb: p.ldb, c: append([]float32(nil), p.c[i*p.ldc:i*p.ldc+n]...), ldc: n}
			runSparse(row)
			for j := range n {
				a, b := row.c[j], got.c[i*got.ldc+j]
				if a != b && !(a != a && b != b) {
					t.Fatalf("row %d col %d: alone %v, in the batch %v", i, j, a, b)
				}
			}
		}
	})
}

func TestSgemmSparseAPanics(t *testing.T) {
	catch := func(f func()) (v any) {
		defer func() { v = recover() }()
		f()
		return nil
	}
	s := make([]float32, 100)
	for _, c := range []struct {
		m, n, k, lda, ldb, ldc int
		a, b, c                []float32
		want                   any
	}{
		{-1, 2, 2, 2, 2, 2, s, s, s, mLT0},
		{2, -1, 2, 2, 2, 2, s, s, s, nLT0},
		{2, 2, -1, 2, 2, 2, s, s, s, kLT0},
		{2, 2, 3, 2, 2, 2, s, s, s, badLdA},
		{2, 3, 2, 2, 2, 3, s, s, s, badLdB},
		{2, 3, 2, 2, 3, 2, s, s, s, badLdC},
		{4, 4, 4, 4, 4, 4, s[:15], s, s, shortA},
		{4, 4, 4, 4, 4, 4, s, s[:15], s, shortB},
		{4, 4, 4, 4, 4, 4, s, s, s[:15], shortC},
		{0, 4, 4, 4, 4, 4, nil, nil, nil, nil},
	} {
		if got := catch(func() { SgemmSparseA(c.m, c.n, c.k, c.a, c.lda, c.b, c.ldb, c.c, c.ldc) }); got != c.want {
			t.Errorf("%+v: panic %v, want %v", c, got, c.want)
		}
	}
}

// The sparse kernels read sparseArgs by the offsets asmgen was written with.
func TestSparseArgsLayout(t *testing.T) {
	var p sparseArgs
	got := []uintptr{unsafe.Offsetof(p.x), unsafe.Offsetof(p.b), unsafe.Offsetof(p.c), unsafe.Offsetof(p.k),
		unsafe.Offsetof(p.bs), unsafe.Offsetof(p.mask), unsafe.Offsetof(p.m), unsafe.Offsetof(p.xs), unsafe.Offsetof(p.cs)}
	want := []uintptr{0, 8, 16, 24, 32, 40, 48, 56, 64}
	if !slices.Equal(got, want) {
		t.Fatalf("sparseArgs offsets %v, asmgen uses %v", got, want)
	}
}

// The AVX-512 kernel and the loop of Saxpy that runs without it give the
// same bits, so a run's results do not depend on whether its CPU has
// AVX-512 (each product is rounded before it is added, in order of p).
func TestSgemmSparseASameBitsWithAndWithoutAVX512(t *testing.T) {
	if !sparseAsm {
		t.Skip("this CPU runs only the fallback")
	}
	defer func() { sparseAsm = true }()
	rng := rand.New(rand.NewPCG(13, 13))
	for _, sh := range [][3]int{{384, 256, 167}, {100, 32, 14}, {7, 257, 1416}, {20, 8, 33}} {
		p := sparseProblem(rng, sh[0], sh[1], sh[2], 0.3, [3]int{1, 2, 3})
		asm, saxpy := p.clone(), p.clone()
		sparseAsm = true
		runSparse(asm)
		sparseAsm = false
		runSparse(saxpy)
		for i, v := range asm.c {
			if math.Float32bits(v) != math.Float32bits(saxpy.c[i]) {
				t.Fatalf("%v: C[%d] is %v with AVX-512, %v without", sh, i, v, saxpy.c[i])
			}
		}
	}
}

// Every kernel family gives every element of C the same bits: one chain of
// fused multiply-adds over k in order, whatever the vector width.
func TestSgemmKernelsSameBits(t *testing.T) {
	ks := kernels()
	if len(ks) < 2 {
		t.Skipf("one kernel family on this CPU (%d)", len(ks))
	}
	saved := kernel
	defer func() { kernel = saved }()
	rng := rand.New(rand.NewPCG(14, 14))
	for _, sh := range [][3]int{{384, 256, 256}, {256, 256, 167}, {16384, 32, 14}, {7, 9, 300}, {100, 8, 256}} {
		p := newProblem(rng, gblas.NoTrans, gblas.Trans, sh[0], sh[1], sh[2], 1, 0, [3]int{})
		var first []float32
		for _, k := range ks {
			kernel = k
			got := p.clone()
			got.run(Sgemm)
			if first == nil {
				first = got.c
				continue
			}
			for i, v := range got.c {
				if math.Float32bits(v) != math.Float32bits(first[i]) {
					t.Fatalf("%v: C[%d] is %v with %s, %v with %s", sh, i, v, k.name, first[i], ks[0].name)
				}
			}
		}
	}
}
