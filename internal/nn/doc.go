// Package nn holds gorgonia building blocks that gorgonia gets wrong or lacks,
// written once so every model in pixelis uses the same fix:
//
//   - Min and Max of two nodes with (sub)gradients, which gorgonia offers only for
//     same-shaped tensors (no scalar broadcasting).
//   - LogSoftmax as one op (logsoftmax.go): gorgonia's LogSoftMax shifts each
//     row by its first element and overflows to ±Inf; this one shifts by the
//     row maximum, and computes what gorgonia's chain of Max, Sub, Exp, Sum
//     and Log would, derivatives included, in one pass a row.
//   - Whole layers (dense.go): Dense is a layer's product, bias, LoRA adapter,
//     per-example term and ReLU in one pass over blocks of rows, keeping the
//     ReLU's mask as bits for its derivative; MatMul (matmul.go) is
//     gorgonia's matrix product without its transposes in memory; the
//     column ops (columns.go) join and split columns in one copy; the row-wise
//     ops of their derivatives (fused.go) are one pass each. They give
//     gorgonia's bits too (train/policy's TestTrainGraphMatchesGorgoniaBits)
//     and split their work over internal/par's goroutines by rows or columns of
//     the result, which changes no element's operations: the same bits on
//     any number of cores.
//   - The element-wise loops (vec.go) run in AVX2 assembly where the CPU has
//     it (vec_amd64.s), the same IEEE operation for each element as the Go
//     loop.
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
