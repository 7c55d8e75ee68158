// Command asmgen writes kernel_amd64.s, the micro-kernels of the package's
// single-precision matrix multiply (go generate in internal/blas runs it).
//
// Every kernel computes, for `panels` consecutive panels of mr rows of A
// against one panel of B (nv vectors wide),
//
//	C[i, j] = alpha·Σ_p A[i, p]·B[p, j]        (args.acc == 0)
//	C[i, j] += alpha·Σ_p A[i, p]·B[p, j]       (args.acc != 0)
//
// for the columns j whose bit is set in the panel's mask. A is read in place,
// strided or by rows (see below), B as B[p, j] = *(b + p·bs + j·4), a packed
// panel or B in place: the AVX-512 kernels load B under the column mask, so
// a partial panel may end at the end of the caller's slice. Each C element
// is one chain of fused multiply-adds over p in order, so its value depends
// only on its row of A and column of B, never on the tile it falls in or on
// the kernel variant.
//
// It also writes the sparse kernels of SgemmSparseA (sparse512), and
// kernel_table_amd64.go, the Go declarations and tables of all of them. The
// layout of the argument blocks is kernelArgs in kernel.go and sparseArgs in
// sparse.go.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"strings"
)

// Offsets of kernelArgs fields.
const (
	offA      = 0
	offB      = 8
	offC      = 16
	offKC     = 24
	offAS     = 32
	offAP     = 40
	offBS     = 48
	offLDC    = 56
	offPanels = 64
	offMask   = 72
	offAcc    = 76
	offAlpha  = 80
	offAI     = 88
	offMask8  = 96 // [16]int32: AVX2 column masks
	offCurA   = 160
	offCurC   = 168
)

// Limits shared with the Go side (kernel_amd64.go): mr512 and mr256.
const (
	mr512 = 12
	mr256 = 6
)

type gen struct{ b bytes.Buffer }

func (g *gen) f(format string, a ...any) { fmt.Fprintf(&g.b, format+"\n", a...) }
func (g *gen) i(format string, a ...any) { fmt.Fprintf(&g.b, "\t"+format+"\n", a...) }

// acc is the accumulator register of row r, vector v. Register 15 is left
// alone (the Go ABI keeps zero in X15).
func acc(prefix string, nv, r, v int) string {
	n := r*nv + v
	if n >= 15 {
		n++
	}
	return fmt.Sprintf("%s%d", prefix, n)
}

// A kernel reads A in one of two ways:
//
//	strided: A[i, p] = *(a + p·as + 4i), a transposed A in place
//	         (as = 4·lda);
//	rows:    A[i, p] = *(a + i·ai + 4p), an untransposed A in place.
const (
	strided = iota
	rows
)

func kernelName(isa string, nv, lanes, mr, mode int) string {
	n := fmt.Sprintf("sgemmK%sx%dm%d", isa, nv*lanes, mr)
	if mode == rows {
		n += "rows"
	}
	return n
}

// Register use: DI args, SI panels left, CX the p counter, BX the B cursor,
// R9 bs, R12 B's start, R10 ldc in bytes, AX the A cursor, R8 as (strided)
// or ai (rows). In rows mode DX holds 3·ai and R11, R13 the A cursors of rows
// 5 and 10. The panels' A and C start in args.curA and args.curC (plain
// integers: after the last panel they point past the matrices, which the
// garbage collector must not see in a pointer).
func (g *gen) prologue(name string) {
	g.f("")
	g.f("// func %s(p *kernelArgs)", name)
	g.f("TEXT ·%s(SB), NOSPLIT, $0-8", name)
	g.i("MOVQ p+0(FP), DI")
	g.i("MOVQ %d(DI), R12", offB)
	g.i("MOVQ %d(DI), R9", offBS)
	g.i("MOVQ %d(DI), R10", offLDC)
	g.i("MOVQ %d(DI), SI", offPanels)
	g.i("MOVQ %d(DI), AX", offA)
	g.i("MOVQ AX, %d(DI)", offCurA)
	g.i("MOVQ %d(DI), AX", offC)
	g.i("MOVQ AX, %d(DI)", offCurC)
}

// panelStart points the cursors at the current panel.
func (g *gen) panelStart(mode, mr int) {
	g.f("panel:")
	g.i("MOVQ %d(DI), AX", offCurA)
	g.i("MOVQ R12, BX")
	g.i("MOVQ %d(DI), CX", offKC)
	if mode == strided {
		g.i("MOVQ %d(DI), R8", offAS)
		return
	}
	g.i("MOVQ %d(DI), R8", offAI)
	if mr > 3 {
		g.i("LEAQ (R8)(R8*2), DX")
	}
	if mr > 5 {
		g.i("LEAQ (AX)(R8*4), R11")
		g.i("ADDQ R8, R11")
	}
	if mr > 10 {
		g.i("LEAQ (R11)(R8*4), R13")
		g.i("ADDQ R8, R13")
	}
}

// aAddr is the address of A[r, p] at the cursors.
func aAddr(mode, r int) string {
	if mode == strided {
		return fmt.Sprintf("%d(AX)", 4*r)
	}
	return [...]string{"(AX)", "(AX)(R8*1)", "(AX)(R8*2)", "(AX)(DX*1)", "(AX)(R8*4)", "(R11)",
		"(AX)(DX*2)", "(R11)(R8*2)", "(AX)(R8*8)", "(R11)(R8*4)", "(R13)", "(R11)(DX*2)"}[r]
}

// advance moves the A cursors to the next p.
func (g *gen) advance(mode, mr int) {
	if mode == strided {
		g.i("ADDQ R8, AX")
		return
	}
	g.i("ADDQ $4, AX")
	if mr > 5 {
		g.i("ADDQ $4, R11")
	}
	if mr > 10 {
		g.i("ADDQ $4, R13")
	}
}

// panelEnd moves args.curA and args.curC (DX, past the panel's last row of
// C) on and loops over the panels.
func (g *gen) panelEnd() {
	g.f("next:")
	g.i("MOVQ DX, %d(DI)", offCurC)
	g.i("MOVQ %d(DI), AX", offCurA)
	g.i("ADDQ %d(DI), AX", offAP)
	g.i("MOVQ AX, %d(DI)", offCurA)
	g.i("DECQ SI")
	g.i("JNZ panel")
	g.i("VZEROUPPER")
	g.i("RET")
}

// kernel512 writes the AVX-512 kernel for mr rows of nv vectors of lanes
// floats: 16 (zmm registers) or, for panels of at most 8 columns, 8 (ymm
// registers under the same masks, AVX-512VL), which runs twice as many
// multiply-adds a cycle as a half-masked zmm.
func (g *gen) kernel512(nv, mr, mode, lanes int) {
	g.prologue(kernelName("512", nv, lanes, mr, mode))
	r := "Z"
	if lanes == 8 {
		r = "Y"
	}
	g.i("MOVL %d(DI), AX", offMask)
	g.i("KMOVW AX, K1")
	g.i("SHRL $16, AX")
	g.i("KMOVW AX, K2")
	g.i("VBROADCASTSS %d(DI), %s31", offAlpha, r)
	bReg := func(v int) string { return fmt.Sprintf("%s%d", r, 28+v) }
	mask := func(v int) string { return fmt.Sprintf("K%d", 1+v) }
	vb := 4 * lanes // bytes per vector
	g.panelStart(mode, mr)
	for row := 0; row < mr; row++ {
		for v := 0; v < nv; v++ {
			a := acc(r, nv, row, v)
			g.i("VXORPS %s, %s, %s", a, a, a)
		}
	}
	g.f("loop:")
	for v := 0; v < nv; v++ {
		g.i("VMOVUPS.Z %d(BX), %s, %s", vb*v, mask(v), bReg(v))
	}
	for row := 0; row < mr; row++ {
		for v := 0; v < nv; v++ {
			g.i("VFMADD231PS.BCST %s, %s, %s", aAddr(mode, row), bReg(v), acc(r, nv, row, v))
		}
	}
	g.advance(mode, mr)
	g.i("ADDQ R9, BX")
	g.i("DECQ CX")
	g.i("JNZ loop")
	for row := 0; row < mr; row++ {
		for v := 0; v < nv; v++ {
			a := acc(r, nv, row, v)
			g.i("VMULPS %s31, %s, %s", r, a, a)
		}
	}
	g.i("MOVQ %d(DI), DX", offCurC)
	g.i("CMPL %d(DI), $0", offAcc)
	g.i("JNE accumulate")
	for row := 0; row < mr; row++ {
		for v := 0; v < nv; v++ {
			g.i("VMOVUPS %s, %s, %d(DX)", acc(r, nv, row, v), mask(v), vb*v)
		}
		g.i("ADDQ R10, DX")
	}
	g.i("JMP next")
	g.f("accumulate:")
	for row := 0; row < mr; row++ {
		for v := 0; v < nv; v++ {
			a := acc(r, nv, row, v)
			g.i("VMOVUPS.Z %d(DX), %s, %s", vb*v, mask(v), bReg(v))
			g.i("VADDPS %s, %s, %s", bReg(v), a, a)
			g.i("VMOVUPS %s, %s, %d(DX)", a, mask(v), vb*v)
		}
		g.i("ADDQ R10, DX")
	}
	g.panelEnd()
}

// kernel256 writes the AVX2 kernel for mr rows of nv 8-float vectors. It
// reads B unmasked (packed panels only) and stores partial panels with
// VMASKMOVPS under the masks in args.mask8.
func (g *gen) kernel256(nv, mr, mode int) {
	g.prologue(kernelName("256", nv, 8, mr, mode))
	bReg := func(v int) string { return fmt.Sprintf("Y%d", 12+v) }
	full := uint32(1)<<(8*nv) - 1
	g.panelStart(mode, mr)
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			a := acc("Y", nv, r, v)
			g.i("VXORPS %s, %s, %s", a, a, a)
		}
	}
	g.f("loop:")
	for v := 0; v < nv; v++ {
		g.i("VMOVUPS %d(BX), %s", 32*v, bReg(v))
	}
	for r := 0; r < mr; r++ {
		g.i("VBROADCASTSS %s, Y14", aAddr(mode, r))
		for v := 0; v < nv; v++ {
			g.i("VFMADD231PS %s, Y14, %s", bReg(v), acc("Y", nv, r, v))
		}
	}
	g.advance(mode, mr)
	g.i("ADDQ R9, BX")
	g.i("DECQ CX")
	g.i("JNZ loop")
	g.i("VBROADCASTSS %d(DI), Y14", offAlpha)
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			a := acc("Y", nv, r, v)
			g.i("VMULPS Y14, %s, %s", a, a)
		}
	}
	g.i("MOVQ %d(DI), DX", offCurC)
	g.i("MOVL %d(DI), BX", offMask)
	g.i("CMPL BX, $0x%x", full)
	g.i("JNE partial")
	g.i("CMPL %d(DI), $0", offAcc)
	g.i("JNE accumulate")
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			g.i("VMOVUPS %s, %d(DX)", acc("Y", nv, r, v), 32*v)
		}
		g.i("ADDQ R10, DX")
	}
	g.i("JMP next")
	g.f("accumulate:")
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			a := acc("Y", nv, r, v)
			g.i("VADDPS %d(DX), %s, %s", 32*v, a, a)
			g.i("VMOVUPS %s, %d(DX)", a, 32*v)
		}
		g.i("ADDQ R10, DX")
	}
	g.i("JMP next")
	g.f("partial:")
	for v := 0; v < nv; v++ {
		g.i("VMOVDQU %d(DI), %s", offMask8+32*v, bReg(v))
	}
	g.i("CMPL %d(DI), $0", offAcc)
	g.i("JNE paccumulate")
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			g.i("VMASKMOVPS %s, %s, %d(DX)", acc("Y", nv, r, v), bReg(v), 32*v)
		}
		g.i("ADDQ R10, DX")
	}
	g.i("JMP next")
	g.f("paccumulate:")
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			a := acc("Y", nv, r, v)
			g.i("VMASKMOVPS %d(DX), %s, Y14", 32*v, bReg(v))
			g.i("VADDPS Y14, %s, %s", a, a)
			g.i("VMASKMOVPS %s, %s, %d(DX)", a, bReg(v), 32*v)
		}
		g.i("ADDQ R10, DX")
	}
	g.panelEnd()
}

// Offsets of sparseArgs fields.
const (
	offSX    = 0
	offSB    = 8
	offSC    = 16
	offSK    = 24
	offSBS   = 32
	offSMask = 40
	offSM    = 48
	offSXS   = 56
	offSCS   = 64
)

// sparse512 writes the AVX-512 kernel that adds x·B to args.m rows of C,
// nv 16-float vectors wide (the last under args.mask), for mostly zero rows
// x of A: per row it compares x with zero 16 floats at a time and, for each
// non-zero x[p] in order of p, adds x[p]·B[p, :] to the accumulators, each
// product rounded before its sum (no fused multiply-add: the same bits as the
// loop of gonum's Saxpy that runs without AVX-512). A NaN in x counts as
// non-zero.
//
// Register use: DI args, SI the x cursor, BX B's row at the cursor, CX
// floats of x left, R8 B's row stride in bytes, R12 16 rows of B, R11 C's
// row, R9 rows left, R10 x's row, AX the non-zero bits, DX the row of B
// being added; Z27 a product, Z28 zero, Z29 x[p], Z30 16 floats of x.
func (g *gen) sparse512(nv int) {
	name := fmt.Sprintf("sparseK512n%d", nv)
	g.f("")
	g.f("// func %s(p *sparseArgs)", name)
	g.f("TEXT ·%s(SB), NOSPLIT, $0-8", name)
	g.i("MOVQ p+0(FP), DI")
	g.i("MOVQ %d(DI), R10", offSX)
	g.i("MOVQ %d(DI), R11", offSC)
	g.i("MOVQ %d(DI), R9", offSM)
	g.i("MOVQ %d(DI), R8", offSBS)
	g.i("MOVL %d(DI), AX", offSMask)
	g.i("KMOVW AX, K1")
	g.i("MOVQ R8, R12")
	g.i("SHLQ $4, R12")
	g.i("VXORPS Z28, Z28, Z28")
	g.f("row:")
	g.i("MOVQ R10, SI")
	g.i("MOVQ %d(DI), BX", offSB)
	g.i("MOVQ %d(DI), CX", offSK)
	mask := func(v int) string {
		if v == nv-1 {
			return "K1, "
		}
		return ""
	}
	for v := 0; v < nv; v++ {
		if v == nv-1 {
			g.i("VMOVUPS.Z %d(R11), K1, %s", 64*v, acc("Z", 1, 0, v))
		} else {
			g.i("VMOVUPS %d(R11), %s", 64*v, acc("Z", 1, 0, v))
		}
	}
	g.f("block:")
	g.i("CMPQ CX, $16")
	g.i("JGE full")
	g.i("TESTQ CX, CX")
	g.i("JZ done")
	g.i("MOVL $1, AX")
	g.i("SHLL CX, AX")
	g.i("DECL AX")
	g.i("KMOVW AX, K4")
	g.i("VMOVUPS.Z (SI), K4, Z30")
	g.i("MOVQ $16, CX")
	g.i("JMP scan")
	g.f("full:")
	g.i("VMOVUPS (SI), Z30")
	g.f("scan:")
	g.i("VCMPPS $4, Z28, Z30, K3")
	g.i("KMOVW K3, AX")
	g.i("TESTL AX, AX")
	g.i("JZ nextblock")
	g.f("bits:")
	g.i("TZCNTL AX, DX")
	g.i("BLSRL AX, AX")
	g.i("VBROADCASTSS (SI)(DX*4), Z29")
	g.i("IMULQ R8, DX")
	g.i("ADDQ BX, DX")
	for v := 0; v < nv; v++ { // the product rounded, then the sum: gonum's Saxpy, to the bit
		if v == nv-1 {
			g.i("VMULPS.Z %d(DX), Z29, K1, Z27", 64*v)
		} else {
			g.i("VMULPS %d(DX), Z29, Z27", 64*v)
		}
		g.i("VADDPS Z27, %s, %s%s", acc("Z", 1, 0, v), mask(v), acc("Z", 1, 0, v))
	}
	g.i("TESTL AX, AX")
	g.i("JNZ bits")
	g.f("nextblock:")
	g.i("ADDQ $64, SI")
	g.i("ADDQ R12, BX")
	g.i("SUBQ $16, CX")
	g.i("JMP block")
	g.f("done:")
	for v := 0; v < nv; v++ {
		if v == nv-1 {
			g.i("VMOVUPS %s, K1, %d(R11)", acc("Z", 1, 0, v), 64*v)
		} else {
			g.i("VMOVUPS %s, %d(R11)", acc("Z", 1, 0, v), 64*v)
		}
	}
	g.i("ADDQ %d(DI), R10", offSXS)
	g.i("ADDQ %d(DI), R11", offSCS)
	g.i("DECQ R9")
	g.i("JNZ row")
	g.i("VZEROUPPER")
	g.i("RET")
}

// maxSparseNV is the widest chunk of C one sparse kernel call covers, in
// 16-float vectors (all accumulators in registers).
const maxSparseNV = 16

func main() {
	out := flag.String("o", "kernel_amd64.s", "output assembly file")
	goOut := flag.String("go", "kernel_table_amd64.go", "output Go table file")
	flag.Parse()

	var g gen
	g.f("// Code generated by asmgen; DO NOT EDIT.")
	g.f("")
	g.f("//go:build !purego")
	g.f("")
	g.f("#include \"textflag.h\"")
	var decl strings.Builder
	tables := map[string]*strings.Builder{"512": {}, "256": {}}
	for mode := strided; mode <= rows; mode++ {
		for _, isa := range []string{"512", "256"} {
			fmt.Fprintf(tables[isa], "\t%d: {\n", mode)
		}
		for nv := 1; nv <= 2; nv++ {
			for _, isa := range []string{"512", "256"} {
				fmt.Fprintf(tables[isa], "\t\t%d: {", nv)
			}
			for mr := 1; mr <= mr512; mr++ {
				g.kernel512(nv, mr, mode, 16)
				n := kernelName("512", nv, 16, mr, mode)
				fmt.Fprintf(&decl, "//go:noescape\nfunc %s(p *kernelArgs)\n\n", n)
				fmt.Fprintf(tables["512"], "%d: %s, ", mr, n)
			}
			for mr := 1; mr <= mr256; mr++ {
				g.kernel256(nv, mr, mode)
				n := kernelName("256", nv, 8, mr, mode)
				fmt.Fprintf(&decl, "//go:noescape\nfunc %s(p *kernelArgs)\n\n", n)
				fmt.Fprintf(tables["256"], "%d: %s, ", mr, n)
			}
			for _, isa := range []string{"512", "256"} {
				tables[isa].WriteString("},\n")
			}
		}
		for _, isa := range []string{"512", "256"} {
			tables[isa].WriteString("\t},\n")
		}
	}
	var narrow strings.Builder
	for mode := strided; mode <= rows; mode++ {
		fmt.Fprintf(&narrow, "\t%d: {", mode)
		for mr := 1; mr <= mr512; mr++ {
			g.kernel512(1, mr, mode, 8)
			n := kernelName("512", 1, 8, mr, mode)
			fmt.Fprintf(&decl, "//go:noescape\nfunc %s(p *kernelArgs)\n\n", n)
			fmt.Fprintf(&narrow, "%d: %s, ", mr, n)
		}
		narrow.WriteString("},\n")
	}
	var sw strings.Builder
	for nv := 1; nv <= maxSparseNV; nv++ {
		g.sparse512(nv)
		fmt.Fprintf(&decl, "//go:noescape\nfunc sparseK512n%d(p *sparseArgs)\n\n", nv)
		fmt.Fprintf(&sw, "\tcase %d:\n\t\tsparseK512n%d(p)\n", nv, nv)
	}
	var tbl strings.Builder
	tbl.WriteString("// Code generated by asmgen; DO NOT EDIT.\n\n//go:build !purego\n\npackage blas\n\n")
	tbl.WriteString(decl.String())
	fmt.Fprintf(&tbl, "// maxSparseNV is the widest chunk of C one sparse kernel call covers, in 16-float vectors.\nconst maxSparseNV = %d\n\n", maxSparseNV)
	fmt.Fprintf(&tbl, "// sparseK512 runs the sparse kernel for a chunk nv vectors wide (direct\n// calls, so p need not escape).\nfunc sparseK512(nv int, p *sparseArgs) {\n\tswitch nv {\n%s\tdefault:\n\t\tpanic(\"blas: sparse kernel width\")\n\t}\n}\n\n", sw.String())
	fmt.Fprintf(&tbl, "// kernels512[mode][nv][mr] computes mr rows of nv 16-float vectors.\nvar kernels512 = [][][]kernelFunc{\n%s}\n\n", tables["512"])
	fmt.Fprintf(&tbl, "// kernels512x8[mode][mr] computes mr rows of one 8-float vector (AVX-512VL).\nvar kernels512x8 = [][]kernelFunc{\n%s}\n\n", narrow.String())
	fmt.Fprintf(&tbl, "// kernels256[mode][nv][mr] computes mr rows of nv 8-float vectors.\nvar kernels256 = [][][]kernelFunc{\n%s}\n", tables["256"])
	src, err := format.Source([]byte(tbl.String()))
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, g.b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*goOut, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
