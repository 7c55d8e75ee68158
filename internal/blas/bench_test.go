package blas

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pixelis/pixelis/internal/cputime"
	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

type sgemmFunc = func(tA, tB gblas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)

// BenchmarkSgemm times each of the project's products with this package
// (impl=pixelis, the fastest kernel of the CPU) and with gonum
// (impl=gonum), reporting GFLOP/s of wall time and per CPU-second (gonum
// spreads large products over all cores, so the two differ).
//
//	go test ./internal/blas -run '^$' -bench Sgemm -cpu 1
func BenchmarkSgemm(b *testing.B) {
	impls := []struct {
		name string
		f    sgemmFunc
	}{{"pixelis", Sgemm}, {"gonum", gonum.Implementation{}.Sgemm}}
	for _, s := range policyShapes {
		for _, impl := range impls {
			b.Run(s.name+"/impl="+impl.name, func(b *testing.B) { benchShape(b, s, impl.f) })
		}
	}
}

// BenchmarkSgemmKernels times the policy's products with each kernel family
// this CPU has and with none (kernel=gonum: gonum's Sgemm behind this
// package's argument handling).
func BenchmarkSgemmKernels(b *testing.B) {
	saved := kernel
	defer func() { kernel = saved }()
	for _, s := range policyShapes {
		for _, k := range append(kernels(), nil) {
			b.Run(s.name+"/kernel="+kernelName(k), func(b *testing.B) {
				kernel = k
				benchShape(b, s, Sgemm)
			})
		}
	}
}

func benchShape(b *testing.B, s shape, f sgemmFunc) {
	rng := rand.New(rand.NewPCG(1, 1))
	p := newProblem(rng, s.tA, s.tB, s.m, s.n, s.k, 1, 0, [3]int{})
	cpu0 := cputime.Process()
	b.ResetTimer()
	for b.Loop() {
		f(p.tA, p.tB, p.m, p.n, p.k, 1, p.a, p.lda, p.b, p.ldb, 0, p.c, p.ldc)
	}
	b.StopTimer()
	cpu := (cputime.Process() - cpu0).Seconds()
	work := s.flops() * float64(b.N)
	b.ReportMetric(work/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu > 0 {
		b.ReportMetric(work/cpu/1e9, "GFLOP/cpu-s")
	}
}

// BenchmarkSgemmSparseA times the policy's first layer on one-hot
// observations (167 inputs, 8 % non-zero, 256 outputs) with the CPU's
// sparse kernel and with the Saxpy loop, reporting the non-zero products'
// GFLOP per CPU-second.
//
//	go test ./internal/blas -run '^$' -bench SgemmSparseA -cpu 1
func BenchmarkSgemmSparseA(b *testing.B) {
	saved := sparseAsm
	defer func() { sparseAsm = saved }()
	for _, rows := range []int{1, 128} {
		for _, asm := range []bool{true, false} {
			if asm && !saved {
				continue
			}
			name := map[bool]string{true: "avx512", false: "saxpy"}[asm]
			b.Run(fmt.Sprintf("rows=%d/kernel=%s", rows, name), func(b *testing.B) {
				sparseAsm = asm
				p := sparseProblem(rand.New(rand.NewPCG(2, 2)), rows, 256, 167, 0.08, [3]int{})
				nz := 0
				for _, v := range p.a {
					if v != 0 {
						nz++
					}
				}
				cpu0 := cputime.Process()
				for b.Loop() {
					runSparse(p)
				}
				if cpu := (cputime.Process() - cpu0).Seconds(); cpu > 0 {
					b.ReportMetric(2*float64(nz*p.n*b.N)/cpu/1e9, "GFLOP/cpu-s")
				}
			})
		}
	}
}
