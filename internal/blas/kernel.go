package blas

import "unsafe"

// kernelArgs is the argument block of a micro-kernel call. The assembly
// reads it by offset: keep the layout in step with asmgen (a test checks).
//
// A call computes `panels` consecutive panels of mr rows of C, each against
// the same panel of B:
//
//	C[i, j] (+)= alpha · Σ_{p<kc} A[i, p]·B[p, j]
//
// for the columns j whose bit is set in mask, with
// A[i, p] = *(a + q·ap + p·as + i·ai) in panel q, B[p, j] = *(b + p·bs + 4j),
// C[i, j] = *(c + (q·mr + i)·ldc + 4j) (all strides in bytes), storing when
// acc is 0 and adding to C otherwise. A is read in place, strided when
// transposed (ai = 4, as = 4·lda) or by rows when not (as = 4, ai = 4·lda);
// the assembly has a variant for each (mode). B is an untransposed B in
// place (bs = 4·ldb) or a packed panel (bs = 4·width). curA and curC are
// the kernels' own cursors.
type kernelArgs struct {
	a, b, c unsafe.Pointer
	kc      int
	as, ap  int
	bs      int
	ldc     int
	panels  int
	mask    uint32
	acc     uint32
	alpha   float32
	_       uint32
	ai      int
	mask8   [16]int32 // mask as AVX2 lane masks (-1: column in C)
	// The current panel's A and C: integers, not pointers, since they end
	// up past the end of the matrices.
	curA, curC uintptr
}

// Modes of reading A (kernelArgs).
const (
	modeStrided = 0
	modeRows    = 1
)

// kernelFunc computes one call's panels; its row count is fixed.
type kernelFunc func(*kernelArgs)

// gemmKernel is a family of micro-kernels sharing a panel geometry.
type gemmKernel struct {
	name  string
	mr    int // rows of a full panel of A
	lanes int // floats per vector
	nv    int // vectors in a full panel of B: NR = lanes·nv columns
	// fns[mode][v][r] computes r rows (1 ≤ r ≤ mr) of a B panel v vectors
	// wide (1 ≤ v ≤ nv), reading A strided (modeStrided) or by rows (modeRows).
	fns [][][]kernelFunc
	// narrow[mode][r], if any, is fns[mode][1][r] for a panel of at most 8
	// columns, in 8-float vectors.
	narrow [][]kernelFunc
	// maskedB: the kernels read B only in the mask's columns, so a partial
	// panel of an untransposed B can be read in place (otherwise only full
	// panels are, and a partial one is copied).
	maskedB bool
}

func (k *gemmKernel) nr() int { return k.lanes * k.nv }
