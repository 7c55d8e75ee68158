package blas

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// problem is one Sgemm call's arguments.
type problem struct {
	tA, tB        gblas.Transpose
	m, n, k       int
	alpha, beta   float32
	lda, ldb, ldc int
	a, b, c       []float32
}

func (p problem) String() string {
	return fmt.Sprintf("%c%c m=%d n=%d k=%d alpha=%v beta=%v lda=%d ldb=%d ldc=%d", p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.beta, p.lda, p.ldb, p.ldc)
}

// guard fills the parts of slices no call may write.
const guard = float32(-12345.5)

// newProblem draws matrices for the shape, with leading dimensions padded by
// pad[0..2] and the padding (and one float past the end) holding guard.
func newProblem(rng *rand.Rand, tA, tB gblas.Transpose, m, n, k int, alpha, beta float32, pad [3]int) problem {
	p := problem{tA: tA, tB: tB, m: m, n: n, k: k, alpha: alpha, beta: beta}
	ar, ac := m, k
	if tA != gblas.NoTrans {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB != gblas.NoTrans {
		br, bc = n, k
	}
	p.lda, p.ldb, p.ldc = max(1, ac)+pad[0], max(1, bc)+pad[1], max(1, n)+pad[2]
	fill := func(rows, cols, ld int) []float32 {
		s := make([]float32, rows*ld+1)
		for i := range s {
			if i/ld < rows && i%ld < cols {
				s[i] = float32(rng.NormFloat64())
			} else {
				s[i] = guard
			}
		}
		return s
	}
	p.a, p.b, p.c = fill(ar, ac, p.lda), fill(br, bc, p.ldb), fill(m, n, p.ldc)
	return p
}

func (p problem) clone() problem {
	p.a = append([]float32(nil), p.a...)
	p.b = append([]float32(nil), p.b...)
	p.c = append([]float32(nil), p.c...)
	return p
}

func (p problem) opA(i, l int) float64 {
	if p.tA != gblas.NoTrans {
		return float64(p.a[l*p.lda+i])
	}
	return float64(p.a[i*p.lda+l])
}

func (p problem) opB(l, j int) float64 {
	if p.tB != gblas.NoTrans {
		return float64(p.b[j*p.ldb+l])
	}
	return float64(p.b[l*p.ldb+j])
}

func (p problem) run(impl func(tA, tB gblas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)) {
	impl(p.tA, p.tB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc)
}

// check compares got (p after the call, from the inputs in p0) with the
// product in float64. The bound is the classic one for a dot product of
// length k in float32, (k+2)·u·(|α|·Σ|a||b| + |β||c|), with a factor of 2
// to spare; a wrong element, a missed or doubled term, is far outside it.
func check(t *testing.T, p0, got problem) {
	t.Helper()
	const u = 1.0 / (1 << 24)
	for i, v := range got.a {
		if v != p0.a[i] {
			t.Fatalf("%v: a[%d] changed", p0, i)
		}
	}
	for i, v := range got.b {
		if v != p0.b[i] {
			t.Fatalf("%v: b[%d] changed", p0, i)
		}
	}
	// op(A) by rows and op(B) by columns, in float64, so each element of
	// the reference is a contiguous dot product.
	opA := make([]float64, p0.m*p0.k)
	for i := range p0.m {
		for l := range p0.k {
			opA[i*p0.k+l] = p0.opA(i, l)
		}
	}
	opBT := make([]float64, p0.n*p0.k)
	for j := range p0.n {
		for l := range p0.k {
			opBT[j*p0.k+l] = p0.opB(l, j)
		}
	}
	for idx, v := range got.c {
		i, j := idx/p0.ldc, idx%p0.ldc
		if i >= p0.m || j >= p0.n {
			if v != guard {
				t.Fatalf("%v: c[%d] outside C changed to %v", p0, idx, v)
			}
			continue
		}
		var want, mag float64
		if p0.alpha != 0 {
			ar, bc := opA[i*p0.k:(i+1)*p0.k], opBT[j*p0.k:(j+1)*p0.k]
			for l, x := range ar {
				x *= bc[l]
				want += x
				mag += math.Abs(x)
			}
		}
		want *= float64(p0.alpha)
		mag *= math.Abs(float64(p0.alpha))
		if p0.beta != 0 {
			cv := float64(p0.c[idx])
			want += float64(p0.beta) * cv
			mag += math.Abs(float64(p0.beta) * cv)
		}
		tol := 2 * float64(p0.k+2) * u * mag
		if math.IsNaN(float64(v)) || math.Abs(float64(v)-want) > tol {
			t.Fatalf("%v: C[%d,%d] = %v, want %v (tolerance %.3g)", p0, i, j, v, want, tol)
		}
	}
}

// forEachKernel runs f with each kernel family this CPU has and with none
// (gonum's Sgemm, the fallback).
func forEachKernel(t *testing.T, f func(t *testing.T)) {
	saved := kernel
	defer func() { kernel = saved }()
	for _, k := range append(kernels(), nil) {
		kernel = k
		t.Run(kernelName(k), f)
	}
}

func kernelName(k *gemmKernel) string {
	if k == nil {
		return "gonum"
	}
	return k.name
}

// withBlocking runs f with the given block sizes.
func withBlocking(bk, bm, bn int, f func()) {
	k, m, n := blockK, blockM, blockN
	blockK, blockM, blockN = bk, bm, bn
	defer func() { blockK, blockM, blockN = k, m, n }()
	f()
}

var transposes = []gblas.Transpose{gblas.NoTrans, gblas.Trans}

func TestKernelsAvailable(t *testing.T) {
	var names []string
	for _, k := range kernels() {
		names = append(names, k.name)
	}
	t.Logf("kernels: %v, in use: %s", names, kernelName(kernel))
	if len(names) == 0 {
		if kernel != nil {
			t.Fatalf("kernel %s in use without any available", kernel.name)
		}
		return
	}
	if kernel != kernels()[0] {
		t.Fatalf("in use %s, fastest available %s", kernelName(kernel), names[0])
	}
}

// The edge cases of the contract on small shapes, every transpose, several
// alphas and betas, with padded leading dimensions.
func TestSgemmSmall(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 1))
		dims := []int{0, 1, 2, 3, 5, 7}
		for _, tA := range transposes {
			for _, tB := range transposes {
				for _, m := range dims {
					for _, n := range dims {
						for _, k := range dims {
							for _, ab := range [][2]float32{{1, 0}, {1, 1}, {-0.5, 2}, {0, 0.5}, {0, 0}, {2, 1}} {
								pad := [3]int{rng.IntN(3), rng.IntN(3), rng.IntN(3)}
								p := newProblem(rng, tA, tB, m, n, k, ab[0], ab[1], pad)
								got := p.clone()
								got.run(Sgemm)
								check(t, p, got)
							}
						}
					}
				}
			}
		}
	})
}

// Shapes around every tile and block edge of every kernel, with the default
// blocking and with small blocks (so that k, m and n each span several).
func TestSgemmEdges(t *testing.T) {
	shapes := [][3]int{
		{1, 1, 1}, {1, 100, 300}, {300, 1, 1}, {13, 33, 1}, {12, 32, 256}, {11, 31, 257}, {25, 65, 511},
		{24, 48, 512}, {193, 17, 20}, {200, 100, 9}, {6, 16, 8}, {7, 17, 8}, {5, 15, 3}, {4, 9, 600},
		{37, 1025, 3}, {3, 1100, 2}, {64, 8, 1416}, {8, 64, 300},
	}
	forEachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(2, 2))
		blockings := [][3]int{{blockK, blockM, blockN}}
		if kernel != nil {
			blockings = append(blockings, [3]int{7, 2 * kernel.mr, 2 * kernel.nr()}, [3]int{1, kernel.mr, kernel.nr()})
		}
		for _, blocks := range blockings {
			withBlocking(blocks[0], blocks[1], blocks[2], func() {
				for _, s := range shapes {
					for _, tA := range transposes {
						for _, tB := range transposes {
							for _, ab := range [][2]float32{{1, 0}, {0.75, -1.5}} {
								pad := [3]int{rng.IntN(5), rng.IntN(5), rng.IntN(5)}
								p := newProblem(rng, tA, tB, s[0], s[1], s[2], ab[0], ab[1], pad)
								got := p.clone()
								got.run(Sgemm)
								check(t, p, got)
							}
						}
					}
				}
			})
		}
	})
}

// The policy's shapes (see bench_test.go), each transpose.
func TestSgemmPolicyShapes(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 3))
		for _, s := range policyShapes {
			if testing.Short() && s.m*s.n*s.k > 1<<22 {
				continue
			}
			p := newProblem(rng, s.tA, s.tB, s.m, s.n, s.k, 1, 0, [3]int{})
			got := p.clone()
			got.run(Sgemm)
			check(t, p, got)
		}
	})
}

// beta == 0 overwrites C without reading it: NaN and Inf in C do not leak.
func TestSgemmBetaZeroIgnoresC(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(4, 4))
		for _, s := range [][3]int{{1, 1, 1}, {13, 35, 300}, {30, 70, 0}, {2, 3, 4}} {
			for _, alpha := range []float32{1, 0} {
				p := newProblem(rng, gblas.NoTrans, gblas.Trans, s[0], s[1], s[2], alpha, 0, [3]int{1, 1, 1})
				for i := range p.m {
					for j := range p.n {
						p.c[i*p.ldc+j] = float32([]float64{math.NaN(), math.Inf(1)}[(i+j)%2])
					}
				}
				got := p.clone()
				got.run(Sgemm)
				check(t, p, got)
			}
		}
	})
}

// alpha == 0 does not read A or B: NaN there does not reach C.
func TestSgemmAlphaZeroIgnoresAB(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 5))
		for _, beta := range []float32{0.5, 0, 1} {
			p := newProblem(rng, gblas.NoTrans, gblas.NoTrans, 9, 40, 20, 0, beta, [3]int{1, 0, 1})
			for i := range p.a {
				p.a[i] = float32(math.NaN())
			}
			got := p.clone()
			got.run(Sgemm)
			for i, v := range got.c {
				want := p.c[i] * beta
				if i/p.ldc >= p.m || i%p.ldc >= p.n {
					want = guard
				}
				if v != want {
					t.Fatalf("beta %v: c[%d] = %v, want %v", beta, i, v, want)
				}
			}
		}
	})
}

// Each element of C depends only on its row of op(A) and column of op(B):
// computing a row alone, or a column alone, gives the same bits as the whole
// product (so batch sizes and tiling never change a result).
func TestSgemmRowsAndColumnsIndependent(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		if kernel == nil {
			t.Skip("gonum's Sgemm makes no such promise")
		}
		rng := rand.New(rand.NewPCG(6, 6))
		for _, tA := range transposes {
			for _, tB := range transposes {
				const m, n, k = 29, 70, 600
				p := newProblem(rng, tA, tB, m, n, k, 1, 0, [3]int{})
				whole := p.clone()
				whole.run(Sgemm)
				for _, i := range []int{0, 13, 28} {
					row := problem{tA: tA, tB: tB, m: 1, n: n, k: k, alpha: 1, b: p.b, ldb: p.ldb, ldc: n, c: make([]float32, n)}
					if tA == gblas.NoTrans {
						row.a, row.lda = p.a[i*p.lda:], p.lda
					} else {
						row.a, row.lda = p.a[i:], p.lda
					}
					row.run(Sgemm)
					for j := range n {
						if row.c[j] != whole.c[i*whole.ldc+j] {
							t.Fatalf("%c%c row %d col %d: alone %v, in the product %v", tA, tB, i, j, row.c[j], whole.c[i*whole.ldc+j])
						}
					}
				}
				for _, j := range []int{0, 33, 69} {
					col := problem{tA: tA, tB: tB, m: m, n: 1, k: k, alpha: 1, a: p.a, lda: p.lda, ldc: 1, c: make([]float32, m)}
					if tB == gblas.NoTrans {
						col.b, col.ldb = p.b[j:], p.ldb
					} else {
						col.b, col.ldb = p.b[j*p.ldb:], p.ldb
					}
					col.run(Sgemm)
					for i := range m {
						if col.c[i] != whole.c[i*whole.ldc+j] {
							t.Fatalf("%c%c col %d row %d: alone %v, in the product %v", tA, tB, j, i, col.c[i], whole.c[i*whole.ldc+j])
						}
					}
				}
			}
		}
	})
}

// Bad arguments panic with gonum's messages, in gonum's order.
func TestSgemmPanics(t *testing.T) {
	catch := func(f func()) (v any) {
		defer func() { v = recover() }()
		f()
		return nil
	}
	s := make([]float32, 100)
	N, T := gblas.NoTrans, gblas.Trans
	cases := []struct {
		tA, tB        gblas.Transpose
		m, n, k       int
		lda, ldb, ldc int
		a, b, c       []float32
	}{
		{'X', N, 2, 2, 2, 2, 2, 2, s, s, s},
		{N, 'X', 2, 2, 2, 2, 2, 2, s, s, s},
		{N, N, -1, 2, 2, 2, 2, 2, s, s, s},
		{N, N, 2, -1, 2, 2, 2, 2, s, s, s},
		{N, N, 2, 2, -1, 2, 2, 2, s, s, s},
		{N, N, 2, 2, 3, 2, 2, 2, s, s, s},      // lda < k
		{T, N, 3, 2, 2, 2, 2, 2, s, s, s},      // lda < m
		{N, N, 2, 3, 2, 2, 2, 3, s, s, s},      // ldb < n
		{N, T, 2, 2, 3, 3, 2, 2, s, s, s},      // ldb < k
		{N, N, 2, 3, 2, 2, 3, 2, s, s, s},      // ldc < n
		{N, N, 0, 0, 0, 0, 1, 1, nil, s, s},    // lda < 1
		{N, N, 4, 4, 4, 4, 4, 4, s[:14], s, s}, // short a
		{T, N, 4, 4, 4, 4, 4, 4, s[:14], s, s},
		{N, N, 4, 4, 4, 4, 4, 4, s, s[:15], s}, // short b
		{N, T, 4, 4, 4, 4, 4, 4, s, s[:15], s},
		{N, N, 4, 4, 4, 4, 4, 4, s, s, s[:15]},  // short c
		{N, N, 0, 4, 4, 4, 4, 4, nil, nil, nil}, // m == 0: no length checks
		{N, N, 4, 4, 0, 1, 4, 4, nil, nil, s},   // k == 0: a and b may be empty
		{N, N, 4, 4, 0, 1, 4, 4, nil, nil, s[:15]},
	}
	for _, c := range cases {
		want := catch(func() {
			gonum.Implementation{}.Sgemm(c.tA, c.tB, c.m, c.n, c.k, 1, c.a, c.lda, c.b, c.ldb, 0, c.c, c.ldc)
		})
		got := catch(func() {
			Implementation{}.Sgemm(c.tA, c.tB, c.m, c.n, c.k, 1, c.a, c.lda, c.b, c.ldb, 0, c.c, c.ldc)
		})
		if got != want {
			t.Errorf("%+v: panic %v, gonum %v", c, got, want)
		}
	}
}

// Random shapes, transposes, strides, alpha and beta, against the float64
// reference and against gonum.
func TestSgemmRandom(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 7))
		n := 300
		if testing.Short() {
			n = 60
		}
		for range n {
			p := randomProblem(rng)
			got := p.clone()
			got.run(Sgemm)
			check(t, p, got)
			ref := p.clone()
			ref.run(gonum.Implementation{}.Sgemm)
			check(t, p, ref) // the reference's bound is not too tight for gonum either
		}
	})
}

func randomProblem(rng *rand.Rand) problem {
	dim := func() int {
		switch rng.IntN(4) {
		case 0:
			return rng.IntN(4)
		case 1:
			return rng.IntN(40)
		default:
			return rng.IntN(300)
		}
	}
	tA, tB := transposes[rng.IntN(2)], transposes[rng.IntN(2)]
	alpha := []float32{1, 1, -1, 0.5, 0, 3}[rng.IntN(6)]
	beta := []float32{0, 0, 1, -2, 0.25}[rng.IntN(5)]
	return newProblem(rng, tA, tB, dim(), dim(), dim(), alpha, beta, [3]int{rng.IntN(9), rng.IntN(9), rng.IntN(9)})
}

// Concurrent calls (each with its own workspace) give the same results as
// serial ones.
func TestSgemmConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	ps := make([]problem, 8)
	want := make([]problem, len(ps))
	for i := range ps {
		ps[i] = newProblem(rng, transposes[i%2], transposes[i/2%2], 50+i, 70+3*i, 300+i, 1, 0, [3]int{})
		want[i] = ps[i].clone()
		want[i].run(Sgemm)
	}
	done := make(chan int)
	for i := range ps {
		go func() {
			for range 20 {
				got := ps[i].clone()
				got.run(Sgemm)
				for j, v := range got.c {
					if v != want[i].c[j] {
						t.Errorf("problem %d: c[%d] = %v concurrently, %v alone", i, j, v, want[i].c[j])
						break
					}
				}
			}
			done <- i
		}()
	}
	for range ps {
		<-done
	}
}

func FuzzSgemm(f *testing.F) {
	f.Add(uint8(3), uint8(5), uint8(7), uint8(0), uint8(0), uint8(0), uint8(0), float32(1), float32(0), uint64(1))
	f.Add(uint8(13), uint8(33), uint8(255), uint8(3), uint8(1), uint8(2), uint8(3), float32(-2), float32(0.5), uint64(2))
	f.Fuzz(func(t *testing.T, m, n, k, flags, padA, padB, padC uint8, alpha, beta float32, seed uint64) {
		if math.IsNaN(float64(alpha)) || math.IsInf(float64(alpha), 0) || math.Abs(float64(alpha)) > 1e6 ||
			math.IsNaN(float64(beta)) || math.IsInf(float64(beta), 0) || math.Abs(float64(beta)) > 1e6 {
			t.Skip()
		}
		rng := rand.New(rand.NewPCG(seed, seed))
		p := newProblem(rng, transposes[flags&1], transposes[flags>>1&1], int(m), int(n), int(k), alpha, beta,
			[3]int{int(padA % 8), int(padB % 8), int(padC % 8)})
		saved := kernel
		defer func() { kernel = saved }()
		ks := append(kernels(), nil)
		kernel = ks[int(flags>>2)%len(ks)]
		got := p.clone()
		got.run(Sgemm)
		check(t, p, got)
	})
}

// The assembly reads kernelArgs by the offsets asmgen was written with.
func TestKernelArgsLayout(t *testing.T) {
	var p kernelArgs
	got := []uintptr{unsafe.Offsetof(p.a), unsafe.Offsetof(p.b), unsafe.Offsetof(p.c), unsafe.Offsetof(p.kc),
		unsafe.Offsetof(p.as), unsafe.Offsetof(p.ap), unsafe.Offsetof(p.bs), unsafe.Offsetof(p.ldc),
		unsafe.Offsetof(p.panels), unsafe.Offsetof(p.mask), unsafe.Offsetof(p.acc), unsafe.Offsetof(p.alpha),
		unsafe.Offsetof(p.ai), unsafe.Offsetof(p.mask8), unsafe.Offsetof(p.curA), unsafe.Offsetof(p.curC)}
	want := []uintptr{0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 76, 80, 88, 96, 160, 168}
	if !slices.Equal(got, want) {
		t.Fatalf("kernelArgs offsets %v, asmgen uses %v", got, want)
	}
}
