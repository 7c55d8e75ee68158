package nn

import "github.com/chewxy/math32"

// Element-wise loops of the fused ops. Each has a pure-Go form (below) and,
// on amd64 with AVX2, an assembly form that computes the same IEEE
// operation for each element, 8 at a time (vec_amd64.s): the results are
// the same bits either way (TestVecMatchesGo).

// reluMask is out = x·[x ≥ 0] with the mask kept as bits: bit i%8 of
// bits[i/8] is [x_i ≥ 0] (−0 counts as ≥ 0, NaN does not). out may be x.
func reluMask(x, out []float32, bits []byte) {
	n := len(x)
	out, bits = out[:n], bits[:(n+7)/8]
	done := 0
	if useAVX2 && n >= 8 {
		done = n &^ 7
		reluMaskAVX2(&x[0], &out[0], &bits[0], done)
	}
	for i := done; i < n; i += 8 {
		var b byte
		for j := i; j < min(i+8, n); j++ {
			m := float32(0)
			if x[j] >= 0 {
				m = 1
				b |= 1 << (j - i)
			}
			out[j] = x[j] * m
		}
		bits[i/8] = b
	}
}

// maskMul is out = g·[bit i of bits], the gradient through reluMask.
func maskMul(g []float32, bits []byte, out []float32) {
	n := len(g)
	out, bits = out[:n], bits[:(n+7)/8]
	done := 0
	if useAVX2 && n >= 8 {
		done = n &^ 7
		maskMulAVX2(&g[0], &bits[0], &out[0], done)
	}
	for i := done; i < n; i++ {
		m := float32(bits[i/8] >> (i % 8) & 1)
		out[i] = g[i] * m
	}
}

// Add is out = a + b, element by element (each sum rounded as Go's a[i]+b[i]);
// out may be a or b.
func Add(a, b, out []float32) { add(a, b, out) }

// add is out = a + b. out may be a or b.
func add(a, b, out []float32) {
	n := len(a)
	b, out = b[:n], out[:n]
	done := 0
	if useAVX2 && n >= 8 {
		done = n &^ 7
		addAVX2(&a[0], &b[0], &out[0], done)
	}
	for i := done; i < n; i++ {
		out[i] = a[i] + b[i]
	}
}

// mulAdd is out = y + z·s, the product rounded first. out may be y or z.
func mulAdd(y, z, out []float32, s float32) {
	n := len(y)
	z, out = z[:n], out[:n]
	done := 0
	if useAVX2 && n >= 8 {
		done = n &^ 7
		mulAddAVX2(&y[0], &z[0], &out[0], s, done)
	}
	for i := done; i < n; i++ {
		out[i] = y[i] + z[i]*s
	}
}

// product is out = fma(x, s, +0), the product rounded once as a fused
// multiply-add onto +0 rounds it: x·s + 0 but for a product too small for a
// float, which rounds to a zero of its sign. out may be x.
func product(x, out []float32, s float32) {
	n := len(x)
	out = out[:n]
	done := 0
	if useFMA && n >= 8 {
		done = n &^ 7
		productAVX2(&x[0], &out[0], s, done)
	}
	for i := done; i < n; i++ {
		// The float64 product is exact; adding +0 turns −0 into +0 before
		// the one rounding to float32.
		out[i] = float32(float64(x[i])*float64(s) + 0)
	}
}

// exp is out = math32.Exp(x) (the exponential gorgonia's Exp computes for
// float32). out may be x.
func exp(x, out []float32) {
	n := len(x)
	out = out[:n]
	done := 0
	if useAVX2 && n >= 8 {
		done = n &^ 7
		expAVX2(&x[0], &out[0], done)
	}
	for i := done; i < n; i++ {
		out[i] = math32.Exp(x[i])
	}
}

// scale is out = x·s. out may be x.
func scale(x, out []float32, s float32) {
	n := len(x)
	out = out[:n]
	done := 0
	if useAVX2 && n >= 8 {
		done = n &^ 7
		scaleAVX2(&x[0], &out[0], s, done)
	}
	for i := done; i < n; i++ {
		out[i] = x[i] * s
	}
}
