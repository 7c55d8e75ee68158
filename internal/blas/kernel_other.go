//go:build !amd64 || purego

package blas

// kernels lists the kernel families this build can run: none, so Sgemm is
// gonum's.
func kernels() []*gemmKernel { return nil }

// sparseAsm: SgemmSparseA has no assembly kernel in this build.
var sparseAsm = false

// maxSparseNV is the widest chunk of the (absent) sparse kernel.
const maxSparseNV = 16

func sparseK512(nv int, p *sparseArgs) { panic("blas: no sparse kernel in this build") }
