package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pixelis/pixelis/internal/blas"
	"github.com/pixelis/pixelis/internal/par"
)

// A product split over any number of workers, by rows or by columns, gives
// the bits of one Sgemm call, for every transpose and shapes around the
// kernels' panels.
func TestMatMulSplitsGiveSgemmBits(t *testing.T) {
	defer SplitFinely()()
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			for _, s := range [][3]int{{1, 1, 1}, {40, 33, 1}, {143, 51, 33}, {7, 300, 5}, {300, 1, 40}, {14, 32, 700}, {50, 100, 260}} {
				m, n, k := s[0], s[1], s[2]
				a, b := specialValues(rng, m*k), specialValues(rng, k*n)
				lda, ldb := k, n
				ta, tb := blas.NoTrans, blas.NoTrans
				if tA {
					lda, ta = m, blas.Trans
				}
				if tB {
					ldb, tb = k, blas.Trans
				}
				want := make([]float32, m*n)
				blas.Sgemm(ta, tb, m, n, k, 1, a, lda, b, ldb, 0, want, n)
				for _, workers := range []int{1, 2, 3, 4} {
					got := make([]float32, m*n)
					matMul(par.NewTeam(workers), tA, tB, m, n, k, a, b, got)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("tA %t tB %t %v, %d workers: [%d] = %v, Sgemm gives %v", tA, tB, s, workers, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}
