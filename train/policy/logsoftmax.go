package policy

import (
	G "gorgonia.org/gorgonia"
)

// logSoftmax is a numerically stable row-wise log-softmax of x [B, A]:
//
//	log p = x − m − log Σ_j exp(x_j − m),  m = max_j x_j
//
// gorgonia's own LogSoftMax shifts by the first element of the row instead of
// the maximum and overflows. The gradient through m cancels exactly
// (∂/∂m = −1 + Σ p = 0), so differentiating through Max is harmless.
func logSoftmax(x *G.Node) (*G.Node, error) {
	m, err := G.Max(x, 1) // [B]
	if err != nil {
		return nil, err
	}
	shifted, err := G.BroadcastSub(x, m, nil, []byte{1})
	if err != nil {
		return nil, err
	}
	e, err := G.Exp(shifted)
	if err != nil {
		return nil, err
	}
	s, err := G.Sum(e, 1)
	if err != nil {
		return nil, err
	}
	lse, err := G.Log(s)
	if err != nil {
		return nil, err
	}
	return G.BroadcastSub(shifted, lse, nil, []byte{1})
}
