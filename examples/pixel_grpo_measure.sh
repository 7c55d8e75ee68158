#!/bin/sh
# Measure examples/pixel_grpo.py end to end: a fresh `pixelis serve` (the embedded default world) and
# the trainer, both under /usr/bin/time -v, at nice 10. Writes OUT/{train.log,results.json,*.time}.
#   examples/pixel_grpo_measure.sh OUT [trainer flags…]      (PIXELIS: the pixelis binary, default: pixelis)
set -eu
out=$1
shift
mkdir -p "$out"
port=$((20000 + $$ % 10000))
here=$(cd "$(dirname "$0")/.." && pwd)
nice -n 10 /usr/bin/time -v "${PIXELIS:-pixelis}" serve --addr 127.0.0.1:$port >"$out/serve.out" 2>"$out/serve.time" &
wrapper=$!
until grep -q 'listening on' "$out/serve.out" 2>/dev/null; do sleep 0.2; done
PYTHONPATH="$here/clients/python" nice -n 10 /usr/bin/time -v /usr/bin/python3 "$here/examples/pixel_grpo.py" \
	--serve http://127.0.0.1:$port --run-dir "$out" "$@" >"$out/train.log" 2>"$out/train.time" || status=$?
kill -TERM "$(pgrep -P $wrapper)"
wait $wrapper || true
for f in train serve; do
	printf '%s: ' $f
	awk -F': ' '/User time/{u=$2} /System time/{s=$2} /Elapsed/{e=$2} /Maximum resident/{r=$2}
		END{printf "user %s s, system %s s, CPU %.1f s, wall %s, max RSS %d MiB\n", u, s, u+s, e, r/1024}' "$out/$f.time"
done
exit ${status:-0}
