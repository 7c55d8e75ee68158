#!/bin/sh
# The measured CPU run of docs/trl-vlm.md: the tiny Qwen2.5-VL, SFT on the CoTA conversations, then
# GRPO with the pixel operations as tools, each under `pixelis launch --no-tui`; then both models
# on the held-out test tasks with `pixelis eval --serve` and GRPO − SFT paired task by task. One
# seed, every size fixed here. Each phase runs under /usr/bin/time -v at nice $NICE (OUT/*.time,
# its CPU seconds and the load average at its start and end printed at the end) and is skipped
# when its output is there, so a run cut short goes on where it stopped.
#   examples/trl_vlm/cpu_run.sh OUT     from the repository's root; PIXELIS: the pixelis binary
#                                       (default ./pixelis), PYTHON: the trl stack's interpreter,
#                                       NICE: the phases' niceness (default 5; below 0 needs root)
set -eu
out=$1
seed=1
pixelis=${PIXELIS:-./pixelis}
python=${PYTHON:-python3}
niceness=${NICE:-5}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export PYTHONPATH="$here/../../clients/python" OMP_NUM_THREADS=2 TOKENIZERS_PARALLELISM=false \
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRL_EXPERIMENTAL_SILENCE=1

# timed NAME CMD…: CMD at nice $NICE under /usr/bin/time -v into OUT/NAME.time, its output in
# OUT/NAME.log, the load average before and after it in OUT/NAME.load.
timed() {
	name=$1
	shift
	cut -d' ' -f1-3 /proc/loadavg >"$out/$name.load"
	nice -n "$niceness" /usr/bin/time -v -o "$out/$name.time" "$@" >"$out/$name.log" 2>&1
	cut -d' ' -f1-3 /proc/loadavg >>"$out/$name.load"
}

[ -f "$out/train/tasks.jsonl" ] ||
	timed data "$pixelis" data gen --config smoke --n 200 --out "$out/cota.jsonl" --chat "$out/train"

PIXELIS_SERVE_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export PIXELIS_SERVE_TOKEN
port=$((20000 + $$ % 10000))
nice -n "$niceness" "$pixelis" serve --config smoke --addr 127.0.0.1:$port >"$out/serve.out" 2>&1 &
serve=$!
trap 'kill $serve 2>/dev/null' EXIT
until grep -q 'listening on' "$out/serve.out" 2>/dev/null; do sleep 0.2; done

[ -f "$out/sft/model/config.json" ] ||
	timed sft "$pixelis" launch --run-dir "$out/run-sft" --no-tui --no-curriculum -- \
		"$python" -u "$here/sft.py" "$out/sft" --data "$out/train" --tiny --lora-rank 0 \
		--learning-rate 3e-3 --steps 300 --batch 2 --seed $seed
[ -f "$out/grpo/model/config.json" ] ||
	timed grpo "$pixelis" launch --run-dir "$out/run-grpo" --no-tui -- \
		"$python" -u "$here/grpo_tools.py" "$out/grpo" --data "$out/train" --serve http://127.0.0.1:$port \
		--model "$out/sft/model" --steps 40 --batch 4 --generations 2 --seed $seed
for m in sft grpo; do
	[ -s "$out/eval-$m.json" ] ||
		timed "eval-$m" sh -c "'$pixelis' eval --serve --config smoke --samples 8 -- \
			'$python' '$here/eval.py' --checkpoint '$out/$m/model' >'$out/eval-$m.json'"
done
"$pixelis" eval --paired "$out/eval-sft.json" "$out/eval-grpo.json" | tee "$out/paired.json"

for f in data sft grpo eval-sft eval-grpo; do
	[ -f "$out/$f.time" ] || continue
	printf '%s: ' $f
	awk -F': ' '/User time/{u=$2} /System time/{s=$2} /Elapsed/{e=$2} /Maximum resident/{r=$2}
		END{printf "CPU %.1f s (user %s, system %s), wall %s, max RSS %d MiB", u+s, u, s, e, r/1024}' "$out/$f.time"
	[ -f "$out/$f.load" ] && printf ', load average %s' "$(paste -sd'>' "$out/$f.load" | sed 's/>/ → /')"
	echo
done
