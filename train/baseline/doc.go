// Package baseline is the adversarial no-tool baseline: how well each task
// family can be answered from the first observation alone, before any
// operation, by the strongest probes tried against it — an MLP on the whole
// observation, a CNN over the coarse view's 8×8 cells, a small MLP on the
// features an adversary would compute from the view, and fixed rules over
// those features. The networks are gorgonia graphs trained to convergence,
// stopped early on a validation slice; a family's baseline is its best probe
// by validation accuracy, scored on held-out test tasks with the split into
// tasks drawn with and without a look-alike. A family that needs operations
// must stay near its majority answer under every probe.
package baseline
