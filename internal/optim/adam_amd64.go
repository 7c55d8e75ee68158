//go:build !purego

package optim

import "golang.org/x/sys/cpu"

// useAVX2 is whether adamUpdate runs its assembly form; tests switch it off
// to compare with the Go form.
var useAVX2 = cpu.X86.HasAVX2

//go:noescape
func adamUpdateAVX2(c *adamCoef, grad, data, m, v, nd, nm, nv *float32, n int) bool
