// Package blas is the project's BLAS: gonum's pure-Go implementation
// (gonum.org/v1/gonum/blas/gonum) with its single-precision matrix multiply,
// Sgemm, replaced by register-blocked kernels in assembly, plus SgemmSparseA,
// a product whose cost follows the non-zeros of its left operand.
//
// train/nn installs Implementation as the BLAS of gorgonia and its tensor
// package, so every training graph multiplies with it; the rollout forward
// pass (train/policy.Inference), the adapter merge and the curiosity model's
// encoder call Sgemm and SgemmSparseA directly.
//
// # Sgemm
//
// C is computed in tiles of 12 rows by 32 columns held in 24 AVX-512
// registers while the kernel runs down k: each step loads two vectors of a
// row of B and multiplies them by the tile's 12 values of A, broadcast from
// memory into the fused multiply-adds. Tiles at the bottom edge use kernels
// for fewer rows; at the right edge the columns are masked, and a tile of at
// most 16 columns uses one vector per row, of at most 8 (the adapters' rank)
// one 8-float vector, which does twice the multiply-adds per cycle of a
// half-masked 16-float one. On CPUs with AVX2 and FMA but not AVX-512 the
// tiles are 6×16 in 12 registers. The kernels are chosen at
// start-up with golang.org/x/sys/cpu; on other CPUs, and in builds tagged
// purego, Sgemm is gonum's behind this package's argument handling.
//
// The kernels read A and an untransposed B where they are (A by rows, or
// strided when transposed); only a transposed B is copied into panels. The
// product is blocked 256 deep in k and 192 rows at a time so that the rows
// of A being used stay in L2 (see gemm.go). A column result of a transposed
// A (n = 1, as gorgonia's backward pass makes) is computed as the row Cᵀ, so
// that all vector lanes work. Sgemm starts no goroutines.
//
// Sgemm panics on bad arguments with gonum's messages, overwrites C without
// reading it when beta is zero (NaN in C does not survive) and does not read
// A or B when alpha is zero.
//
// # Determinism
//
// With the assembly kernels every element of C is one chain of fused
// multiply-adds over k in order, in blocks of 256: its bits depend only on
// its row of op(A), its column of op(B), alpha, beta and its old value, not
// on m, n, the tile it falls in or the timing. A batch of any size gives
// each row the bits it would get alone, and the same inputs give the same
// results run after run.
//
// # Assembly
//
// kernel_amd64.s and kernel_table_amd64.go are written by asmgen (go generate
// in this directory); change asmgen, not them. Benchmarks of the project's
// own products, against gonum's, are in bench_test.go:
//
//	go test ./internal/blas -run '^$' -bench . -cpu 1
package blas
