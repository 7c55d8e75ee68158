#!/usr/bin/env bash
# Times pixelis's SFT and GRPO update steps against the same steps in PyTorch
# (bench/torch_steps.py), alternating the two ROUNDS times so both see the
# same load on a shared machine, and prints per step kind the median CPU-ms
# per step of each side, GFLOP per CPU-second, and the ratio PyTorch/pixelis
# of each round (median and range; above 1 means pixelis is faster).
#
#   pixelis  train/sft BenchmarkTrainerStep   the SFT step of pixelis run: the
#                                             default network, rank-8 adapters
#                                             present and frozen at B = 0 (left
#                                             out of the graph: they add
#                                             nothing), batch 256
#            train/grpo BenchmarkUpdateStep   one GRPO update of a default
#                                             minibatch, 384 rows (two chunks of
#                                             grpo.ChunkRows), adapters only
#   PyTorch  bench/torch_steps.py --no-adapters
#                                             the same two computations: the
#                                             SFT step without the frozen zero
#                                             adapters, the GRPO step as is (one
#                                             batch of 384 rows)
#
# The first two lines compare the same computation (the FLOP counts of both
# sides are printed and must be equal). A third line, "sft+adapters", times
# PyTorch's SFT step computing the frozen zero adapters as well (as a
# PyTorch user would write them, unmerged) against the same pixelis step:
# more work on PyTorch's side, shown apart. Two more, "sft kept" and "grpo
# kept", run PyTorch's same two computations with glibc's malloc told to keep
# the memory it frees (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_,
# MALLOC_TOP_PAD_): by default it returns a step's large tensors to the
# kernel and takes them back as fresh pages on the next step, whose page
# faults are system time of PyTorch's process (and grow dearer on a loaded
# machine); pixelis keeps its buffers from step to step.
#
# Single-threaded on both sides: the Go benchmarks run with -test.cpu 1
# (GOMAXPROCS 1, one worker; internal/blas starts no goroutines), PyTorch
# with one thread and OPENBLAS_NUM_THREADS=1. Figures are CPU time of the
# process, the only ones that hold on a loaded machine. After the rounds,
# the pixelis steps on two cores (-test.cpu 2: two workers), CPU-ms and
# wall-ms, and internal/blas's own rate on the largest product of the step
# (trunk.1's forward, 256×256×256), the peak the steps' GFLOP/cpu-s compare
# with.
#
#   bash bench/side_by_side.sh [ROUNDS]        (default 8)
#
# Needs Debian's PyTorch: apt-get install python3-torch (python3-threadpoolctl
# to name the BLAS it runs on). OPENBLAS_L2_SIZE, if set, is unset for the
# PyTorch runs, and OPENBLAS_CORETYPE is set to the best kernel the CPU runs
# (SkylakeX with AVX-512, Haswell with AVX2 and FMA; TORCH_CORETYPE=NAME
# chooses another, TORCH_CORETYPE= leaves it to OpenBLAS): Debian's OpenBLAS
# 0.3.21 does not know every CPU it meets, and on a virtual Xeon it fell back
# to its SSE3 kernel (Prescott, 28 GFLOP per CPU-second on a 256³ product
# against SkylakeX's 80), which would compare pixelis with a PyTorch slowed
# by its BLAS rather than with PyTorch. The script prints the kernel used.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-8}
py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
best=
if [[ $flags == *avx512f* && $flags == *avx512bw* && $flags == *avx512vl* && $flags == *avx512dq* ]]; then
	best=SkylakeX
elif [[ $flags == *avx2* && $flags == *fma* ]]; then
	best=Haswell
fi
coretype=${TORCH_CORETYPE-$best}
if [ -n "$coretype" ]; then
	torch_env=(env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE="$coretype")
else
	torch_env=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE)
fi
kept_env=(MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296 MALLOC_TOP_PAD_=268435456)

"${torch_env[@]}" "$py" -c 'import torch' 2>/dev/null ||
	{ echo "PyTorch is not installed for $py (apt-get install python3-torch)" >&2; exit 1; }
go test -c -o "$tmp/sft.test" ./train/sft
go test -c -o "$tmp/grpo.test" ./train/grpo
go test -c -o "$tmp/blas.test" ./internal/blas

go_step() { # go_step PKG BENCH CPUS OUT
	(cd "train/$1" && "$tmp/$1.test" -test.run '^$' -test.bench "^$2\$" -test.benchtime 20x -test.cpu "$3") >>"$4"
}
for _ in $(seq "$rounds"); do
	"${torch_env[@]}" "$py" bench/torch_steps.py --json --steps 20 --rounds 1 --no-adapters \
		2>>"$tmp/torch.err" >>"$tmp/torch.jsonl"
	go_step sft BenchmarkTrainerStep 1 "$tmp/go.txt"
	go_step grpo BenchmarkUpdateStep 1 "$tmp/go.txt"
	"${torch_env[@]}" "$py" bench/torch_steps.py --json --steps 20 --rounds 1 --only sft \
		2>/dev/null | sed 's/"step": "sft"/"step": "sft+adapters"/' >>"$tmp/torch.jsonl"
	"${torch_env[@]}" "${kept_env[@]}" "$py" bench/torch_steps.py --json --steps 20 --rounds 1 --no-adapters \
		2>/dev/null | sed 's/"step": "\([a-z]*\)"/"step": "\1 kept"/' >>"$tmp/torch.jsonl"
done
for _ in $(seq 3); do
	go_step sft BenchmarkTrainerStep 2 "$tmp/go2.txt"
	go_step grpo BenchmarkUpdateStep 2 "$tmp/go2.txt"
done
(cd internal/blas && "$tmp/blas.test" -test.run '^$' -test.bench '^BenchmarkSgemm$/trunk1/fwd/impl=pixelis$' \
	-test.benchtime 0.5s -test.count 3 -test.cpu 1) >"$tmp/blas.txt"
head -1 "$tmp/torch.err"
"$py" - "$tmp/torch.jsonl" "$tmp/go.txt" "$tmp/go2.txt" "$tmp/blas.txt" <<'EOF'
import json, re, statistics, sys
torch = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    torch.setdefault(r["step"], []).append(r)
names = {"BenchmarkTrainerStep": "sft", "BenchmarkUpdateStep": "grpo"}
def bench(path):
    out = {}
    for line in open(path):
        name = re.sub(r"-\d+$", "", line.split()[0]) if line.strip() else ""
        if name in names:
            out.setdefault(names[name], []).append({u: float(v) for v, u in re.findall(r"([\d.]+) (\S+)", line)})
        elif name.startswith("BenchmarkSgemm"):
            out.setdefault("blas", []).append({u: float(v) for v, u in re.findall(r"([\d.]+) (\S+)", line)})
    return out
go, go2, blas = bench(sys.argv[2]), bench(sys.argv[3]), bench(sys.argv[4])
print(f"{'step':<13} {'rounds':>6} {'MFLOP':>15} | {'PyTorch cpu-ms':>14} {'GFLOP/cpu-s':>11} | "
      f"{'pixelis cpu-ms':>14} {'GFLOP/cpu-s':>11} | PyTorch/pixelis")
for k, g_k in (("sft", "sft"), ("grpo", "grpo"), ("sft+adapters", "sft"), ("sft kept", "sft"), ("grpo kept", "grpo")):
    t = [r["cpu_ms"] for r in torch[k]]
    g = [m["cpu-ms/op"] for m in go[g_k]]
    ratios = sorted(a / b for a, b in zip(t, g))
    tm, gm = statistics.median(t), statistics.median(g)
    tf, gf = torch[k][0]["mflop"], go[g_k][0]["MFLOP/op"]
    flop = f"{tf:.1f}" + ("=" if abs(tf - gf) <= 1e-3 * gf else "≠") + f"{gf:.1f}"
    print(f"{k:<13} {len(g):>6} {flop:>15} | {tm:>14.2f} {tf / tm:>11.1f} | {gm:>14.2f} {gf / gm:>11.1f} | "
          f"{statistics.median(ratios):.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f})")
print("(MFLOP: PyTorch's count = or ≠ pixelis's; sft+adapters: PyTorch also computes the frozen zero adapters;")
print(" kept: PyTorch's glibc malloc keeps the memory it frees instead of faulting it back in every step)")
print("\npixelis on two cores (-test.cpu 2, two workers), medians of 3:")
for k in ("sft", "grpo"):
    c = statistics.median(m["cpu-ms/op"] for m in go2[k])
    w = statistics.median(m["ns/op"] / 1e6 for m in go2[k])
    one = statistics.median(m["cpu-ms/op"] for m in go[k])
    print(f"{k:<5} {c:7.2f} cpu-ms {w:7.2f} ms wall  (one core: {one:.2f} cpu-ms)")
peak = statistics.median(m["GFLOP/cpu-s"] for m in blas["blas"])
print(f"\ninternal/blas, trunk.1 forward 256×256×256 alone: {peak:.1f} GFLOP/cpu-s (median of 3)")
EOF
