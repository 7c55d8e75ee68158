//go:build !amd64 || purego

package optim

// useAVX2 is false: adamUpdate runs its Go form.
var useAVX2 = false

func adamUpdateAVX2(c *adamCoef, grad, data, m, v, nd, nm, nv *float32, n int) bool {
	panic("optim: no AVX2")
}
