#!/usr/bin/env bash
# Times pixelis's SFT and GRPO update steps against the same steps in PyTorch
# (bench/torch_steps.py), alternating the two ROUNDS times so both see the
# same load on a shared machine, and prints per step kind the median CPU-ms
# per step of each side, GFLOP per CPU-second, and the ratio PyTorch/pixelis
# of each round (median and range; above 1 means pixelis is faster).
#
#   pixelis  train/sft BenchmarkTrainerStep   the SFT step of pixelis run: the
#                                             default network, rank-8 adapters
#                                             present and frozen, batch 256
#            train/grpo BenchmarkUpdateStep   one GRPO update chunk, 384 rows,
#                                             adapters only
#   PyTorch  bench/torch_steps.py             the same two steps
#
# Single-threaded on both sides: the Go benchmarks run with -test.cpu 1
# (GOMAXPROCS 1; internal/blas starts no goroutines), PyTorch with one
# thread and OPENBLAS_NUM_THREADS=1. Figures are CPU time of the process,
# the only ones that hold on a loaded machine.
#
#   bash bench/side_by_side.sh [ROUNDS]        (default 8)
#
# Needs Debian's PyTorch: apt-get install python3-torch (python3-threadpoolctl
# to name the BLAS it runs on). OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, if
# set, are unset for the PyTorch runs so that OpenBLAS picks its own kernel
# (the script prints which).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-8}
py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
torch_env=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE)

"${torch_env[@]}" "$py" -c 'import torch' 2>/dev/null ||
	{ echo "PyTorch is not installed for $py (apt-get install python3-torch)" >&2; exit 1; }
go test -c -o "$tmp/sft.test" ./train/sft
go test -c -o "$tmp/grpo.test" ./train/grpo

for _ in $(seq "$rounds"); do
	"${torch_env[@]}" "$py" bench/torch_steps.py --json --steps 20 --rounds 1 \
		2>>"$tmp/torch.err" >>"$tmp/torch.jsonl"
	(cd train/sft && "$tmp/sft.test" -test.run '^$' -test.bench '^BenchmarkTrainerStep$' \
		-test.benchtime 20x -test.cpu 1) >>"$tmp/go.txt"
	(cd train/grpo && "$tmp/grpo.test" -test.run '^$' -test.bench '^BenchmarkUpdateStep$' \
		-test.benchtime 20x -test.cpu 1) >>"$tmp/go.txt"
done
head -1 "$tmp/torch.err"
"$py" - "$tmp/torch.jsonl" "$tmp/go.txt" <<'EOF'
import json, re, statistics, sys
torch = {"sft": [], "grpo": []}
for line in open(sys.argv[1]):
    r = json.loads(line)
    torch[r["step"]].append(r)
go = {"sft": [], "grpo": []}
names = {"BenchmarkTrainerStep": "sft", "BenchmarkUpdateStep": "grpo"}
for line in open(sys.argv[2]):
    name = line.split()[0] if line.strip() else ""
    if name in names:
        m = {u: float(v) for v, u in re.findall(r"([\d.]+) (\S+)", line)}
        go[names[name]].append(m)
print(f"{'step':<5} {'rounds':>6} {'MFLOP':>7} | {'PyTorch cpu-ms':>14} {'GFLOP/cpu-s':>11} | "
      f"{'pixelis cpu-ms':>14} {'GFLOP/cpu-s':>11} | PyTorch/pixelis")
for k in ("sft", "grpo"):
    t = [r["cpu_ms"] for r in torch[k]]
    g = [m["cpu-ms/op"] for m in go[k]]
    ratios = sorted(a / b for a, b in zip(t, g))
    tm, gm = statistics.median(t), statistics.median(g)
    tf, gf = torch[k][0]["mflop"], go[k][0]["MFLOP/op"]
    print(f"{k:<5} {len(g):>6} {gf:>7.0f} | {tm:>14.2f} {tf / tm:>11.1f} | {gm:>14.2f} {gf / gm:>11.1f} | "
          f"{statistics.median(ratios):.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f})")
    if abs(tf - gf) > 1e-3 * gf:
        print(f"  note: the two sides count {tf:.1f} and {gf:.1f} MFLOP per step")
EOF
