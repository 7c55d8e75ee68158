package policy

// Shape is one layer's size as New builds it, known without allocating its weights:
// the memory estimate and the config checks of a run need the sizes of a network that
// may be far too large to build.
type Shape struct {
	Name    string
	In, Out int
	Bias    bool
	Rank    int // adapter rank; 0 = no adapter
}

// Params is the number of floats the layer holds: weights, bias and adapter factors.
func (s Shape) Params() float64 {
	n := float64(s.In) * float64(s.Out)
	if s.Bias {
		n += float64(s.Out)
	}
	return n + float64(s.Rank)*(float64(s.In)+float64(s.Out))
}

// Shapes lists the layers New builds for c (after WithEnvLayout), in forward order.
// TestShapesMatchNew keeps the two in step.
func (c Config) Shapes() []Shape {
	c = c.WithEnvLayout()
	shape := func(name string, in, out int, bias bool) Shape {
		return Shape{Name: name, In: in, Out: out, Bias: bias, Rank: max(c.rank(name), 0)}
	}
	out := []Shape{shape(LayerCellEnc, c.CellFeatures, c.CellEmbed, true)}
	in := c.TrunkIn()
	for i, h := range c.Hidden {
		out = append(out, shape(TrunkLayer(i), in, h, true))
		in = h
	}
	return append(out,
		shape(LayerHead, in, c.Actions, true),
		shape(LayerLocCell, c.CellFeatures, c.LocHidden, false),
		shape(LayerLocTrunk, in, c.LocHidden, true),
		shape(LayerLocScore, c.LocHidden, 1, false))
}
