#!/bin/sh
# The GPU check of docs/trl-vlm.md: five GRPO steps of a random-weight Qwen2.5-VL-3B (bf16, LoRA
# rank 16) under `pixelis launch --no-tui` on a GPU box that cannot reach the network, with the
# box's own torch and the pinned trl stack's other libraries carried there as wheels. Two steps:
#   examples/trl_vlm/gpu_check.sh prepare DIR    where the network is: the wheels of
#       clients/python/locks/trl.txt but torch, triton, nvidia-* and cuda-* (the box's torch and
#       its CUDA are used) into DIR, their total size printed. PYTHON_VERSION (default 3.11) and
#       PLATFORMS (default manylinux_2_28_x86_64 and older: glibc 2.28 or newer) are the box's.
#   examples/trl_vlm/gpu_check.sh run DIR OUT    on the box, from the repository's root: a venv
#       in OUT/venv over the box's python and torch (--system-site-packages), the wheels of DIR
#       installed with --no-index, the versions printed, then gpu_check.py (the data, the model,
#       the launch, a checkpoint and a stop through control.sock, the figures; OUT/figures.json).
#       DIR `-` installs nothing and runs $PYTHON as it is (the cached trl stack on a CPU box).
# PIXELIS: the pixelis binary (default ./pixelis); PYTHON: the box's interpreter with torch
# (default python3); SIZE: 3b (default) or tiny, the CPU test's (cmd/pixelis TestGPUCheckScript).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${PYTHON:-python3}

# The lock's pinned requirements, with their hashes, less the torch build and the CUDA libraries.
without_torch() {
	awk '/^[^ #]/ { keep = ($1 !~ /^(torch|triton|nvidia-|cuda-|pip==|setuptools==)/) } keep' \
		"$root/clients/python/locks/trl.txt"
}

prepare() {
	dir=$1
	mkdir -p "$dir"
	without_torch >"$dir/requirements.txt"
	platforms=
	for p in ${PLATFORMS:-manylinux_2_28_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64}; do
		platforms="$platforms --platform $p"
	done
	# shellcheck disable=SC2086 # one --platform a word
	"$python" -m pip download --no-deps --require-hashes --only-binary=:all: \
		--python-version "${PYTHON_VERSION:-3.11}" $platforms -r "$dir/requirements.txt" -d "$dir"
	printf 'wheels: %s files, %s in %s\n' "$(ls "$dir"/*.whl | wc -l)" "$(du -sh "$dir" | cut -f1)" "$dir"
}

run() {
	dir=$1 out=$2
	mkdir -p "$out"
	if [ "$dir" != - ]; then
		"$python" -m venv --system-site-packages "$out/venv"
		"$out/venv/bin/python" -m pip install --quiet --no-index --find-links "$dir" --no-deps \
			--require-hashes -r "$dir/requirements.txt"
		python=$out/venv/bin/python
	fi
	PYTHONPATH="$root/clients/python" "$python" -u "$here/gpu_check.py" "$out" --size "${SIZE:-3b}" \
		--pixelis "${PIXELIS:-./pixelis}"
}

case ${1:-} in
prepare) [ $# -eq 2 ] || { echo "usage: $0 prepare DIR" >&2; exit 2; }; prepare "$2" ;;
run) [ $# -eq 3 ] || { echo "usage: $0 run DIR OUT" >&2; exit 2; }; run "$2" "$3" ;;
*) echo "usage: $0 prepare DIR | run DIR OUT" >&2; exit 2 ;;
esac
