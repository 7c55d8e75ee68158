//go:build !amd64 || purego

package nn

// useAVX2 is false: vec.go's loops run their Go forms.
var useAVX2 = false

// useFMA is false: product runs its Go form.
var useFMA = false

func expAVX2(x, out *float32, n int) { panic("nn: no AVX2") }

func productAVX2(x, out *float32, s float32, n int) { panic("nn: no FMA") }

func reluMaskAVX2(x, out *float32, bits *byte, n int)            { panic("nn: no AVX2") }
func maskMulAVX2(grad *float32, bits *byte, out *float32, n int) { panic("nn: no AVX2") }
func addAVX2(a, b, out *float32, n int)                          { panic("nn: no AVX2") }
func mulAddAVX2(y, z, out *float32, s float32, n int)            { panic("nn: no AVX2") }
func scaleAVX2(x, out *float32, s float32, n int)                { panic("nn: no AVX2") }
