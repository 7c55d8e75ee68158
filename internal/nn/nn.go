package nn

import (
	G "gorgonia.org/gorgonia"
)

// Min is min(a, b) = (a + b − |a − b|)/2, element-wise; b may be a scalar.
// Its subgradient is that of min: 1 for the smaller operand, ½ each on ties.
func Min(a, b *G.Node) (*G.Node, error) { return minMax(a, b, -1) }

// Max is max(a, b) = (a + b + |a − b|)/2, element-wise; b may be a scalar.
func Max(a, b *G.Node) (*G.Node, error) { return minMax(a, b, +1) }

func minMax(a, b *G.Node, sign float32) (*G.Node, error) {
	sum, err := G.Add(a, b)
	if err != nil {
		return nil, err
	}
	d, err := G.Sub(a, b)
	if err != nil {
		return nil, err
	}
	abs, err := G.Abs(d)
	if err != nil {
		return nil, err
	}
	var out *G.Node
	if sign > 0 {
		out, err = G.Add(sum, abs)
	} else {
		out, err = G.Sub(sum, abs)
	}
	if err != nil {
		return nil, err
	}
	return G.Mul(out, G.NewConstant(float32(0.5)))
}
