package blas

import (
	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Transpose flags, re-exported so callers need not import gonum's blas too.
const (
	NoTrans = gblas.NoTrans
	Trans   = gblas.Trans
)

// Implementation is gonum's pure-Go BLAS with Sgemm replaced by this
// package's blocked kernel. It satisfies gorgonia's BLAS interface
// (blas.Float32, Float64, Complex64 and Complex128); every routine but Sgemm
// is gonum's.
type Implementation struct {
	gonum.Implementation
}

// The panic values of gonum's implementation, so callers see the same errors.
const (
	badTranspose = "blas: illegal transpose"
	mLT0         = "blas: m < 0"
	nLT0         = "blas: n < 0"
	kLT0         = "blas: k < 0"
	badLdA       = "blas: bad leading dimension of A"
	badLdB       = "blas: bad leading dimension of B"
	badLdC       = "blas: bad leading dimension of C"
	shortA       = "blas: insufficient length of a"
	shortB       = "blas: insufficient length of b"
	shortC       = "blas: insufficient length of c"
)

// Sgemm performs one of the matrix-matrix operations
//
//	C = alpha * A * B + beta * C
//	C = alpha * Aᵀ * B + beta * C
//	C = alpha * A * Bᵀ + beta * C
//	C = alpha * Aᵀ * Bᵀ + beta * C
//
// where A is an m×k or k×m row-major matrix, B is a k×n or n×k matrix and C
// is m×n, as gonum's Sgemm, and panics on bad arguments with gonum's
// messages. When beta is zero C is only written, never read, so whatever it
// held (NaN included) is overwritten; when alpha is zero A and B are not read.
//
// With the assembly kernels (amd64 with AVX2 and FMA) each element of C is a
// single chain of fused multiply-adds over k in order (in blocks of a fixed
// length), so its value does not depend on the shape of the rest of the
// product (the batch size, say), on the goroutine that computed it or on
// timing, nor on the kernel family (AVX-512 or AVX2): the same inputs give
// the same bits on every amd64 CPU with AVX2 and FMA. Elsewhere,
// and in builds tagged purego, gonum's Sgemm computes the product
// (deterministic too, but summed in an order that depends on the shape).
func (Implementation) Sgemm(tA, tB gblas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Sgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Sgemm is Implementation.Sgemm as a function.
func Sgemm(tA, tB gblas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkSgemmArgs(tA, tB, m, n, k, lda, ldb, ldc)
	if m == 0 || n == 0 {
		return
	}
	aTrans := tA != gblas.NoTrans
	bTrans := tB != gblas.NoTrans
	checkSgemmLengths(aTrans, bTrans, m, n, k, a, lda, b, ldb, c, ldc)

	if alpha == 0 || k == 0 {
		scale(m, n, beta, c, ldc)
		return
	}
	if kernel == nil {
		// gonum reads A and B even when alpha is zero (NaN·0 is NaN): that
		// case has returned above.
		gonum.Implementation{}.Sgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if beta != 0 && beta != 1 {
		scale(m, n, beta, c, ldc)
		beta = 1
	}
	if n == 1 && ldc == 1 && aTrans && m > 1 {
		// A column C is also the row Cᵀ = op(B)ᵀ·op(A)ᵀ, whose right operand
		// is A as stored (k×m): the kernels read it in place, all lanes
		// busy, rather than one lane of each vector down A's panels. Each
		// element is the same chain of products, so the bits are the same.
		gemm(!bTrans, false, 1, m, k, alpha, b, ldb, a, lda, beta != 0, c, m)
		return
	}
	gemm(aTrans, bTrans, m, n, k, alpha, a, lda, b, ldb, beta != 0, c, ldc)
}

// FMAChains reports whether Sgemm computes each element of C as one chain
// of fused multiply-adds from +0 over k in order (the assembly kernels), so
// that callers may compute special shapes themselves with the same bits —
// a product over k = 1 is a·b + 0, then times alpha.
func FMAChains() bool { return kernel != nil }

// scale sets C = beta·C, writing zeros when beta is zero.
func scale(m, n int, beta float32, c []float32, ldc int) {
	switch beta {
	case 1:
	case 0:
		for i := range m {
			clear(c[i*ldc : i*ldc+n])
		}
	default:
		for i := range m {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				row[j] *= beta
			}
		}
	}
}

// checkSgemmArgs panics, as gonum's Sgemm does, on a bad transpose flag, a negative size or a
// leading dimension too small for its matrix.
func checkSgemmArgs(tA, tB gblas.Transpose, m, n, k, lda, ldb, ldc int) {
	switch tA {
	default:
		panic(badTranspose)
	case gblas.NoTrans, gblas.Trans, gblas.ConjTrans:
	}
	switch tB {
	default:
		panic(badTranspose)
	case gblas.NoTrans, gblas.Trans, gblas.ConjTrans:
	}
	if m < 0 {
		panic(mLT0)
	}
	if n < 0 {
		panic(nLT0)
	}
	if k < 0 {
		panic(kLT0)
	}
	aTrans := tA != gblas.NoTrans
	if aTrans {
		if lda < max(1, m) {
			panic(badLdA)
		}
	} else if lda < max(1, k) {
		panic(badLdA)
	}
	bTrans := tB != gblas.NoTrans
	if bTrans {
		if ldb < max(1, k) {
			panic(badLdB)
		}
	} else if ldb < max(1, n) {
		panic(badLdB)
	}
	if ldc < max(1, n) {
		panic(badLdC)
	}
}

// checkSgemmLengths panics, as gonum's Sgemm does, on a slice too short for its matrix; m and n
// are non-zero.
func checkSgemmLengths(aTrans, bTrans bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	// The slice length checks hold trivially for k == 0.
	if aTrans {
		if len(a) < (k-1)*lda+m {
			panic(shortA)
		}
	} else if len(a) < (m-1)*lda+k {
		panic(shortA)
	}
	if bTrans {
		if len(b) < (n-1)*ldb+k {
			panic(shortB)
		}
	} else if len(b) < (k-1)*ldb+n {
		panic(shortB)
	}
	if len(c) < (m-1)*ldc+n {
		panic(shortC)
	}
}
