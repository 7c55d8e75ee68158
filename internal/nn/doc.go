// Package nn holds gorgonia building blocks that gorgonia gets wrong or lacks,
// written once so every model in pixelis uses the same fix:
//
//   - LogSoftmax: gorgonia's LogSoftMax shifts each row by its first element and
//     overflows to ±Inf; this one shifts by the row maximum.
//   - Min and Max of two nodes with (sub)gradients, which gorgonia offers only for
//     same-shaped tensors (no scalar broadcasting).
//   - Fused row-wise ops (fused.go): ReLU, AddRows, AddGroups, SumGroups and
//     AddScaled, each one pass over its data with its own derivative, giving
//     exactly the bits of gorgonia's general forms (which take two or three
//     passes, a repeated copy of a broadcast operand and an allocation a run).
//
// Selecting log p[action] must be done by multiplying with a one-hot mask and
// summing (gorgonia's ByIndices has wrong gradients); the policy graph does that.
//
// Importing nn also makes gorgonia multiply matrices with the project's BLAS
// (blas.go: internal/blas, whose Sgemm is several times gonum's); gorgonia's
// default is gonum's pure-Go implementation.
//
// Reading a forward value after a tape machine run needs G.Read: the machine
// keeps only inputs and gradients live to the end and reuses any other node's
// buffer, in place, once its last reader has run (policy.TrainGraph.Value and
// the curiosity model's losses go through Read for this).
package nn
