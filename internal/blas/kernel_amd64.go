//go:build !purego

package blas

import "golang.org/x/sys/cpu"

//go:generate go run ./asmgen -o kernel_amd64.s -go kernel_table_amd64.go

// Panel geometry of the assembly kernels (asmgen's mr512 and mr256).
const (
	mr512 = 12
	mr256 = 6
)

// kernelAVX512 computes 12×32 tiles: 24 accumulators of 16 floats, B loaded
// under the column mask, A broadcast from memory into each FMA. Panels of at
// most 8 columns (the adapters' rank) use 8-float vectors under the mask.
var kernelAVX512 = &gemmKernel{name: "avx512", mr: mr512, lanes: 16, nv: 2, maskedB: true, fns: kernels512, narrow: kernels512x8}

// kernelAVX2 computes 6×16 tiles: 12 accumulators of 8 floats.
var kernelAVX2 = &gemmKernel{name: "avx2", mr: mr256, lanes: 8, nv: 2, fns: kernels256}

// kernels lists the kernel families this CPU can run, fastest first; with
// none Sgemm is gonum's.
func kernels() []*gemmKernel {
	var ks []*gemmKernel
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasFMA {
		ks = append(ks, kernelAVX512)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, kernelAVX2)
	}
	return ks
}

// sparseAsm is whether SgemmSparseA runs its AVX-512 kernel (it also needs
// BMI1's TZCNT and BLSR); tests switch it off to cover the fallback.
var sparseAsm = cpu.X86.HasAVX512F && cpu.X86.HasBMI1
