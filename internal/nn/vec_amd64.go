//go:build !purego

package nn

import "golang.org/x/sys/cpu"

// useAVX2 is whether vec.go's loops run their assembly forms; tests switch
// it off to compare with the Go forms.
var useAVX2 = cpu.X86.HasAVX2

// useFMA is whether product runs its assembly form (AVX2 and FMA).
var useFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func expAVX2(x, out *float32, n int)

//go:noescape
func productAVX2(x, out *float32, s float32, n int)

//go:noescape
func reluMaskAVX2(x, out *float32, bits *byte, n int)

//go:noescape
func maskMulAVX2(grad *float32, bits *byte, out *float32, n int)

//go:noescape
func addAVX2(a, b, out *float32, n int)

//go:noescape
func mulAddAVX2(y, z, out *float32, s float32, n int)

//go:noescape
func scaleAVX2(x, out *float32, s float32, n int)
