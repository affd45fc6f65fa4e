#!/usr/bin/env bash
# cnnbench against PyTorch on this CPU: the same model, batch, image size,
# threads, layout (channels_last for NHWC), SGD momentum/weight decay, synthetic
# data made once, warm-up untimed, total images/sec over the timed loop's wall
# time. The two run alternately, round after round in one invocation, so that
# both see the same machine state; a table with each round's figure, the
# medians and their ratio is printed last. Not a test and not part of CI.
#
# Usage: bash tools/compare/cpu_compare.sh [--rounds N] [--model NAME]
#          [--batch_size N] [--num_batches N] [--num_warmup_batches N]
#          [--threads N] [--formats "NHWC NCHW"] [--binary PATH]
# PyTorch (torch, torchvision from PyPI) goes into .venv-torch at the
# repository root, made on first use (a few GB: PyPI's torch brings CUDA
# libraries). cnnbench is build/release/bench/cnnbench unless --binary says.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rounds=2
model=resnet50
batch=16
batches=10
warmup=2
threads=$(nproc)
formats="NHWC NCHW"
binary="$root/build/release/bench/cnnbench"

usage() { sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
need_int() {  # FLAG VALUE
  [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "cpu_compare.sh: $1=$2: expected a whole number of at least 1" >&2; exit 2; }
}
while (($#)); do
  case "$1" in
    --rounds) need_int "$1" "${2:-}"; rounds=$2; shift 2 ;;
    --model) model=${2:?--model needs a value}; shift 2 ;;
    --batch_size) need_int "$1" "${2:-}"; batch=$2; shift 2 ;;
    --num_batches) need_int "$1" "${2:-}"; batches=$2; shift 2 ;;
    --num_warmup_batches) need_int "$1" "${2:-}"; warmup=$2; shift 2 ;;
    --threads) need_int "$1" "${2:-}"; threads=$2; shift 2 ;;
    --formats) formats=${2:?--formats needs a value}; shift 2 ;;
    --binary) binary=${2:?--binary needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "cpu_compare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for f in $formats; do
  [[ "$f" == NHWC || "$f" == NCHW ]] || { echo "cpu_compare.sh: --formats: '$f' is not NHWC or NCHW" >&2; exit 2; }
done
[[ -x "$binary" ]] || { echo "cpu_compare.sh: no cnnbench at $binary: build it (cmake --preset release && cmake --build --preset release) or give --binary" >&2; exit 2; }

venv="$root/.venv-torch"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import torch, torchvision' 2> /dev/null; then
  echo "== installing torch and torchvision into $venv (PyPI)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q torch torchvision
fi
peer="$root/tools/compare/pytorch_baseline.py"
export OMP_NUM_THREADS="$threads"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
torch_version=$("$venv/bin/python" -c 'import torch; print(torch.__version__)')
echo "== $cpu, $threads threads; $model batch $batch, $batches timed steps after $warmup; torch $torch_version"

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for f in $formats; do
    ours=$("$binary" --device=cpu --model="$model" --batch_size="$batch" --num_batches="$batches" \
             --num_warmup_batches="$warmup" --display_every="$batches" --data_format="$f" \
             --num_threads="$threads" | sed -n 's/^total images\/sec: //p')
    echo "round $r $f cnnbench ${ours:-failed}"
    echo "$f cnnbench $r ${ours:-nan}" >> "$results"
    theirs=$("$venv/bin/python" "$peer" --device=cpu --precision=fp32 --sgd=foreach --model="$model" \
               --batch_size="$batch" --num_batches="$batches" --num_warmup_batches="$warmup" \
               --display_every="$batches" --data_format="$f" | sed -n 's/^total images\/sec: //p')
    echo "round $r $f pytorch ${theirs:-failed}"
    echo "$f pytorch $r ${theirs:-nan}" >> "$results"
  done
done

python3 - "$results" <<'PY'
import math, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    fmt, who, _, value = line.split()
    rows.setdefault(fmt, {}).setdefault(who, []).append(float(value))
print(f'\n{"layout":<8}{"cnnbench images/sec (rounds)":<34}{"PyTorch eager (rounds)":<30}{"ratio":>6}')
for fmt, r in rows.items():
    ours, theirs = r.get("cnnbench", []), r.get("pytorch", [])
    def med(v):
        v = [x for x in v if not math.isnan(x)]
        return statistics.median(v) if v else float("nan")
    def show(v):
        return f'{med(v):.2f} (' + ", ".join(f"{x:.2f}" for x in v) + ")"
    ratio = med(ours) / med(theirs) if med(theirs) > 0 else float("nan")
    print(f"{fmt:<8}{show(ours):<34}{show(theirs):<30}{ratio:>6.2f}")
print("images/sec over the timed loop's wall time; ratio = median cnnbench / median PyTorch "
      "(channels_last for NHWC, SGD foreach, the same threads)")
PY
