package ckpt

import "math"

// NonFinite counts the NaN and ±Inf values of an F32 tensor and gives the index of the
// first (-1 when there is none). Other element types have none.
func NonFinite(t Tensor) (count, first int) {
	first = -1
	if t.dtype() != F32 {
		return 0, -1
	}
	for i, v := range t.Data {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			if count == 0 {
				first = i
			}
			count++
		}
	}
	return count, first
}
