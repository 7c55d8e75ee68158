package blas

import gblas "gonum.org/v1/gonum/blas"

// shape is one matrix product of the project, as the training graph and the
// rollout forward pass call it (row-major; B is the batch).
type shape struct {
	name    string
	tA, tB  gblas.Transpose
	m, n, k int
}

func (s shape) flops() float64 { return 2 * float64(s.m) * float64(s.n) * float64(s.k) }

const (
	nt = gblas.NoTrans
	tr = gblas.Trans
)

// policyShapes are the products of one SFT update (batch 256: a cell
// encoder 14→32 over 256·64 cell rows pooled into the trunk's input, trunk
// 167→256→256, action head →100, location head over 256·64 cells, LoRA rank
// 8 in RFT), an RFT update chunk, rollout batches and single-row inference,
// with the calls' own transposes (gorgonia's backward pass multiplies by
// transposed operands).
var policyShapes = []shape{
	{"trunk0/fwd", nt, nt, 256, 256, 167},  // x·W₀
	{"trunk0/dW", tr, nt, 167, 256, 256},   // xᵀ·dY
	{"trunk0/dX", nt, tr, 256, 167, 256},   // dY·W₀ᵀ
	{"trunk1/fwd", nt, nt, 256, 256, 256},  // h·W₁
	{"trunk1/dW", tr, nt, 256, 256, 256},   // hᵀ·dY
	{"trunk1/dX", nt, tr, 256, 256, 256},   // dY·W₁ᵀ
	{"head/fwd", nt, nt, 256, 100, 256},    // h·W_head
	{"head/dW", tr, nt, 256, 100, 256},     // hᵀ·dY
	{"head/dX", nt, tr, 256, 256, 100},     // dY·W_headᵀ
	{"lora/xA", nt, nt, 256, 8, 167},       // x·A, rank 8
	{"lora/xAB", nt, nt, 256, 256, 8},      // (x·A)·B
	{"lora/dA", tr, nt, 167, 8, 256},       // xᵀ·(dY·Bᵀ)
	{"lora/dXA", nt, tr, 256, 256, 8},      // d(x·A)·Aᵀ
	{"cells/fwd", nt, nt, 16384, 32, 14},   // cells·E (cell encoder), cells·U (location head)
	{"cells/dW", tr, nt, 14, 32, 16384},    // cellsᵀ·dZ
	{"cells/lora", nt, nt, 16384, 8, 14},   // cells·A of a cell layer's adapter
	{"cells/loraB", nt, nt, 16384, 32, 8},  // (cells·A)·B
	{"cells/dA", tr, nt, 14, 8, 16384},     // cellsᵀ·(dZ·Bᵀ)
	{"loc/score", nt, nt, 16384, 1, 32},    // z·v
	{"loc/dv", tr, nt, 32, 1, 16384},       // zᵀ·dS
	{"loc/dZ", nt, tr, 16384, 32, 1},       // dS·vᵀ
	{"loc/lora", nt, nt, 16384, 8, 32},     // z·A of the score layer's adapter
	{"loc/dA", tr, nt, 32, 8, 16384},       // zᵀ·(dS·Bᵀ)
	{"rft384/fwd", nt, nt, 384, 256, 167},  // an RFT update chunk of 384 rows
	{"infer1/trunk0", nt, nt, 1, 256, 167}, // one observation
	{"infer1/trunk1", nt, nt, 1, 256, 256},
	{"infer64/trunk0", nt, nt, 64, 256, 167}, // a rollout worker's batch
}
