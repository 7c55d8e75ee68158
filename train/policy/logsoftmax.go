package policy

import (
	G "gorgonia.org/gorgonia"

	"github.com/pixelis/pixelis/internal/nn"
)

// logSoftmax is the stable row-wise log-softmax of nn (gorgonia's own LogSoftMax
// overflows).
func logSoftmax(x *G.Node) (*G.Node, error) { return nn.LogSoftmax(x) }
