package blas

import (
	"sync"
	"unsafe"
)

// Blocking of the product (in floats): the sum over p is split into blocks
// of blockK, C's columns into blocks of blockN and its rows into blocks of
// blockM, so that the rows of A one block of C reads (blockM×blockK, 192 KiB)
// stay in L2 while the panels of B pass through. Every C element is summed
// over p in blocks of blockK whatever the shape, so results do not depend on
// m or n. Block sizes from 128 to 512 measured the same within noise.
var (
	blockK = 256
	blockM = 192
	blockN = 1024
)

// workspace is the packing buffer and argument block of one call.
type workspace struct {
	bpack []float32
	args  kernelArgs
}

var workspaces = sync.Pool{New: func() any { return new(workspace) }}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// kernel is the micro-kernel family in use, chosen at start-up (see
// kernel_amd64.go), or nil on CPUs without one and in purego builds: Sgemm
// then calls gonum's. Tests switch it.
var kernel = defaultKernel()

// gemm computes C = alpha·op(A)·op(B) (+ C when accumulate) for m, n, k > 0
// and alpha ≠ 0, arguments checked.
//
// The kernels read A where it is: an untransposed A by rows, a transposed
// one (stored k×m, a panel's rows of one p contiguous) strided. So they read
// an untransposed B, whose panel's columns of one p are contiguous. Only a
// transposed B is packed into panels. Packing A and B as well (the usual
// way) measured slower or equal at every shape of the policy: 1.1–4× for A,
// whose panels span as many cache lines in place as packed, 1.1–1.7× for B.
func gemm(aTrans, bTrans bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, accumulate bool, c []float32, ldc int) {
	kern := kernel
	mr, nr := kern.mr, kern.nr()
	ws := workspaces.Get().(*workspace)
	defer workspaces.Put(ws)
	args := &ws.args
	args.alpha = alpha
	args.ldc = 4 * ldc
	mode := modeRows
	if aTrans {
		mode = modeStrided
	}

	for pc := 0; pc < k; pc += blockK {
		kc := min(blockK, k-pc)
		if accumulate || pc > 0 {
			args.acc = 1
		} else {
			args.acc = 0
		}
		args.kc = kc
		for jc := 0; jc < n; jc += blockN {
			nc := min(blockN, n-jc)
			// The packed panels: all of them for a transposed B, else a last
			// partial one the kernels cannot load under a mask.
			packed, last := 0, nc
			if bTrans {
				ws.bpack = grow(ws.bpack, kc*((nc+nr-1)/nr*nr))
				packB(ws.bpack, kern, true, b, ldb, pc, kc, jc, nc)
				last = 0
			} else if w := nc % nr; w != 0 && !kern.maskedB {
				last = nc - w
				packed = last
				ws.bpack = grow(ws.bpack, kc*nr)
				packB(ws.bpack, kern, false, b, ldb, pc, kc, jc+last, w)
			}
			for ic := 0; ic < m; ic += blockM {
				mc := min(blockM, m-ic)
				var ap unsafe.Pointer
				if aTrans {
					ap = unsafe.Pointer(&a[pc*lda+ic])
					args.as, args.ai, args.ap = 4*lda, 4, 4*mr
				} else {
					ap = unsafe.Pointer(&a[ic*lda+pc])
					args.as, args.ai, args.ap = 4, 4*lda, 4*mr*lda
				}
				for jr := 0; jr < nc; jr += nr {
					w := min(nr, nc-jr)
					nv := (w + kern.lanes - 1) / kern.lanes
					if jr < last {
						args.b = unsafe.Pointer(&b[pc*ldb+jc+jr])
						args.bs = 4 * ldb
					} else {
						// Packed panels are nr wide but for the last, nv vectors.
						args.b = unsafe.Pointer(&ws.bpack[(jr-packed)*kc])
						args.bs = 4 * nv * kern.lanes
					}
					setMask(args, w)
					fns := kern.fns[mode][nv]
					if w <= 8 && kern.narrow != nil {
						fns = kern.narrow[mode]
					}
					cp := unsafe.Pointer(&c[ic*ldc+jc+jr])
					if full := mc / mr; full > 0 {
						args.a, args.c, args.panels = ap, cp, full
						fns[mr](args)
					}
					if rest := mc % mr; rest > 0 {
						full := mc / mr
						args.a = unsafe.Add(ap, full*args.ap)
						args.c = unsafe.Add(cp, full*mr*args.ldc)
						args.panels = 1
						fns[rest](args)
					}
				}
			}
		}
	}
	args.a, args.b, args.c = nil, nil, nil
}

// setMask marks the first w columns of a panel.
func setMask(args *kernelArgs, w int) {
	args.mask = uint32(uint64(1)<<w - 1)
	for l := range args.mask8 {
		if l < w {
			args.mask8[l] = -1
		} else {
			args.mask8[l] = 0
		}
	}
}

// packB copies rows [p0, p0+kc) and columns [j0, j0+nc) of op(B) into dst as
// panels of nr = kern.nr() columns, the last one nv vectors wide and padded
// with zeros: dst[jr·kc + p·w + j] = op(B)[p0 + p, j0 + jr + j] for the panel
// starting at column jr, of packed width w.
func packB(dst []float32, kern *gemmKernel, bTrans bool, b []float32, ldb, p0, kc, j0, nc int) {
	nr := kern.nr()
	for jr := 0; jr < nc; jr += nr {
		cols := min(nr, nc-jr)
		w := (cols + kern.lanes - 1) / kern.lanes * kern.lanes
		d := dst[jr*kc : jr*kc+kc*w]
		if bTrans {
			// op(B)[p, j] = b[j·ldb + p]: one contiguous run per column.
			for j := range cols {
				src := b[(j0+jr+j)*ldb+p0:]
				src = src[:kc]
				for p, v := range src {
					d[p*w+j] = v
				}
			}
			if cols < w {
				for p := range kc {
					clear(d[p*w+cols : (p+1)*w])
				}
			}
			continue
		}
		for p := range kc {
			row := d[p*w : (p+1)*w]
			copy(row[:cols], b[(p0+p)*ldb+j0+jr:])
			clear(row[cols:])
		}
	}
}

// defaultKernel is the fastest kernel family of the CPU, nil for none.
func defaultKernel() *gemmKernel {
	if ks := kernels(); len(ks) > 0 {
		return ks[0]
	}
	return nil
}
