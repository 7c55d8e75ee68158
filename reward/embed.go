package reward

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pixelis/pixelis/internal/blas"
)

// Embedder maps an observation to a fixed-size embedding φ(obs), written into
// dst (len(dst) == Dim()). The coherence analyzer compares consecutive
// embeddings; with icm curiosity the ICM encoder is the embedder, otherwise a
// RandomProjection.
type Embedder interface {
	Dim() int
	Embed(obs []float32, dst []float32)
}

// RandomProjection is a fixed Gaussian random projection
//
//	φ(x) = P·x,  P ∈ ℝ^{out×in},  P_ij ~ N(0, 1/out)
//
// By the Johnson–Lindenstrauss lemma it keeps inner products, hence cosine
// similarities, of observations up to O(1/√out) distortion, so it is a
// training-free stand-in for a learned encoder.
type RandomProjection struct {
	in, out int
	p       []float32 // P transposed, row-major in×out
}

// NewRandomProjection draws the projection from rng.
func NewRandomProjection(in, out int, rng *rand.Rand) (*RandomProjection, error) {
	if in <= 0 || out <= 0 {
		return nil, fmt.Errorf("random projection: dimensions %d→%d must be positive", in, out)
	}
	if rng == nil {
		return nil, fmt.Errorf("random projection: nil random source")
	}
	rp := &RandomProjection{in: in, out: out, p: make([]float32, in*out)}
	s := 1 / math.Sqrt(float64(out))
	for i := range rp.p {
		rp.p[i] = float32(rng.NormFloat64() * s)
	}
	return rp, nil
}

// Dim is the embedding size.
func (rp *RandomProjection) Dim() int { return rp.out }

// Embed writes P·obs into dst. It panics when the sizes do not match the
// projection, which is a wiring error, not a data condition.
func (rp *RandomProjection) Embed(obs []float32, dst []float32) {
	if len(obs) != rp.in || len(dst) != rp.out {
		panic(fmt.Sprintf("random projection: embed %d→%d with obs %d, dst %d", rp.in, rp.out, len(obs), len(dst)))
	}
	clear(dst)
	gemvT(rp.p, rp.in, rp.out, obs, dst)
}

// gemvT adds xᵀ·W to y for W row-major rows×cols (y += Wᵀx), in float32. x
// is an observation, mostly zeros, so only the rows of W it selects are
// added (blas.SgemmSparseA): the same bits with or without AVX-512, and the
// same bits as a row of encodeRows.
func gemvT(w []float32, rows, cols int, x, y []float32) {
	blas.SgemmSparseA(1, cols, rows, x, rows, w, cols, y, cols)
}

// cosine is u·v / (‖u‖‖v‖); ok is false when either vector is zero.
func cosine(u, v []float32) (c float64, ok bool) {
	var dot, nu, nv float64
	for i := range u {
		a, b := float64(u[i]), float64(v[i])
		dot += a * b
		nu += a * a
		nv += b * b
	}
	if nu == 0 || nv == 0 {
		return 0, false
	}
	return dot / math.Sqrt(nu*nv), true
}
