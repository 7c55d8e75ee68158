package blas

import (
	"unsafe"

	"gonum.org/v1/gonum/blas/gonum"
)

// sparseArgs is the argument block of the sparse kernels (asmgen's offS*):
// m rows of A from x (xs bytes apart) times B from b, added to the rows of
// C from c (cs bytes apart), in a chunk of columns.
type sparseArgs struct {
	x, b, c unsafe.Pointer // A's first row, B and C at the chunk's first column
	k       int
	bs      int    // B's row stride in bytes
	mask    uint32 // columns of the chunk's last vector
	_       uint32
	m       int
	xs, cs  int
}

// SgemmSparseA computes C += A·B for row-major A (m×k), B (k×n) and C (m×n)
// with leading dimensions lda, ldb and ldc, when most entries of A are zero
// (the policy's observations: one-hot blocks, under a tenth non-zero). Its
// cost is in proportion to A's non-zero entries: each row of C adds the rows
// of B that its row of A selects, a[i, p]·B[p, :] for a[i, p] ≠ 0 in order
// of p, which is the same sum as the dense product's but for the order of
// rounding. A NaN in A counts as non-zero; an Inf in B does not reach rows
// of C whose A is zero there (0·Inf is not added). Each row of C depends
// only on its own row of A, so batching never changes a result.
//
// With AVX-512 the row of C stays in registers (up to 256 columns at a
// time) while the non-zeros are found sixteen at a time; elsewhere it is a
// loop of gonum's Saxpy. Both round each product before adding it (no fused
// multiply-add), so a CPU with AVX-512 gets the same bits as one without.
// It panics on bad arguments as Sgemm does.
func SgemmSparseA(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	switch {
	case m < 0:
		panic(mLT0)
	case n < 0:
		panic(nLT0)
	case k < 0:
		panic(kLT0)
	case lda < max(1, k):
		panic(badLdA)
	case ldb < max(1, n):
		panic(badLdB)
	case ldc < max(1, n):
		panic(badLdC)
	}
	if m == 0 || n == 0 || k == 0 {
		return
	}
	if len(a) < (m-1)*lda+k {
		panic(shortA)
	}
	if len(b) < (k-1)*ldb+n {
		panic(shortB)
	}
	if len(c) < (m-1)*ldc+n {
		panic(shortC)
	}
	if !sparseAsm {
		var impl gonum.Implementation
		for i := range m {
			row := c[i*ldc : i*ldc+n]
			for p, v := range a[i*lda : i*lda+k] {
				if v != 0 {
					impl.Saxpy(n, v, b[p*ldb:p*ldb+n], 1, row, 1)
				}
			}
		}
		return
	}
	const chunk = 16 * maxSparseNV
	args := sparseArgs{x: unsafe.Pointer(&a[0]), k: k, bs: 4 * ldb, m: m, xs: 4 * lda, cs: 4 * ldc}
	for j0 := 0; j0 < n; j0 += chunk {
		w := min(chunk, n-j0)
		nv := (w + 15) / 16
		args.b = unsafe.Pointer(&b[j0])
		args.c = unsafe.Pointer(&c[j0])
		args.mask = uint32(1)<<(w-16*(nv-1)) - 1
		sparseK512(nv, &args)
	}
}
