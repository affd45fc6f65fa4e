#!/usr/bin/env bash
# The GPU suite: builds cnnbench with CUDA on a GPU host that has a CUDA
# toolkit (or the nvidia-cuda-nvcc wheel), PyTorch, and cuDNN, cuBLAS and NCCL
# as Python wheels or system libraries, but no network and no Debian packages
# of ours; runs the GPU tests, the benchmarks and the PyTorch peer; and always
# ends with a short table. It is made for calls of at most 10 minutes: every
# stage has a time budget, every command a time limit, a command that would not
# fit is skipped and listed as skipped for time, and a stage that fails or times
# out is reported while the others go on.
#
# Usage: bash tools/gpu_suite.sh [OPTIONS] [STAGE ...]
#   STAGE      build, tests, bench, compare; default all four, always run in
#              this order:
#     build    unpack .gpu/debs/*.deb (from tools/fetch_gpu_deps.sh) under
#              .gpu/prefix (never /), configure with -DCNNBENCH_CUDA=ON and the
#              nvcc found (below), sm_90, no MPI; build cnnbench, and with the
#              tests stage every test program labelled gpu, in .gpu/build;
#     tests    ctest -L gpu (a handful of test programs; 77 = skipped);
#     bench    cnnbench runs: ResNet-50 at batch 256 in fp16, then bf16, tf32,
#              fp32, then the zoo at fp16; ResNet-50 runs start with --verify;
#              every run shares .gpu/plans.json (--plan_cache);
#     compare  the PyTorch peer (tools/compare/pytorch_baseline.py) on the same
#              runs, in several modes for ResNet-50 fp16 (SUITE_PEERS). With
#              bench, each cnnbench run is followed by its peers.
#   -n, --dry-run    find nvcc and the libraries, print every command with its
#                    time limit, run none of them
#   --resume FILE    the results.jsonl of an earlier call: its runs are not
#                    repeated (unless skipped for time) and join the table
#   --only REGEX     only the runs whose "runner mode model precision batch"
#                    matches (e.g. 'resnet50 fp16', 'max-autotune')
#   -h, --help       this text
#
# Two calls of 10 minutes fit the work (files under $OUT come back after each):
#   bash tools/gpu_suite.sh build tests              # first: build, gpu tests
#   bash tools/gpu_suite.sh build bench compare      # second: benchmarks (the
#       build stage then builds cnnbench alone, or finds it built: seconds)
#   bash tools/gpu_suite.sh --resume .gpu/r2.jsonl bench compare   # a third
#       continues where the second stopped (its results.jsonl, copied into
#       .gpu/ here and carried), and its table holds the runs of both
#
# nvcc: $CUDACXX if set, else the first of: nvcc on PATH, $CUDA_HOME/bin,
# SUITE_CUDA_ROOTS' bin/ folders (default /usr/local/cuda, then
# /usr/local/cuda-* newest first), the nvidia-cuda-nvcc wheel. Without one the
# build stage fails at once, saying where it looked: the suite never builds a
# CPU-only cnnbench.
#
# Environment (all optional; whole numbers are seconds unless named otherwise;
# an empty list runs none):
#   OUT                logs and results (default .gpu/out)
#   SUITE_BUDGET_S     the whole suite (default 570)
#   SUITE_BUILD_S      the build stage (default 330)
#   SUITE_TESTS_S, SUITE_BENCH_S, SUITE_COMPARE_S   the other stages (default
#                      0: no cap of their own, what is left of the suite)
#   SUITE_TEST_TIMEOUT one test program (default 300)
#   SUITE_JOBS         build jobs (default: every core)
#   SUITE_CTEST_JOBS   test programs at once (default 1; gpu tests lock the GPU)
#   SUITE_BATCHES, SUITE_WARMUP   timed and warm-up steps of ResNet-50 runs
#                      (default 50 and 10; fp32 runs 20 and 5)
#   SUITE_ZOO          "model:batch ..." at fp16 after ResNet-50 (default
#                      vgg16:128 inception3:128 googlenet:256 mobilenet_v2:256
#                      alexnet:512 resnet101:256 resnet152:128 vgg19:128
#                      trivial:256)
#   SUITE_ZOO_BATCHES  timed steps of the zoo runs (default 30; warm-up 5)
#   SUITE_PRECISIONS   ResNet-50 precisions after fp16 (default "bf16 tf32 fp32")
#   SUITE_PEERS        peer modes for ResNet-50 fp16 (default: all five: eager
#                      cuda-graph compile compile-reduce-overhead
#                      compile-max-autotune; the last two run after the other
#                      precisions: they compile for minutes)
#   SUITE_OTHER_PEERS  peer modes for the other precisions (default "eager")
#   SUITE_ZOO_PEERS    peer modes for the zoo (default "eager")
#   SUITE_MICRO=1      also build the Google Benchmark programs
#   SUITE_VERIFY=0     no --verify before the ResNet-50 runs (it runs where
#                      cnnbench has the flag and was built with oneDNN)
#   SUITE_PYTHON       Python for the suite's own scripts (default python3)
#   SUITE_TORCH_PYTHON Python with torch and torchvision (default SUITE_PYTHON)
#   SUITE_WORK_DIR     build folders and caches (default .gpu in the repository)
#   SUITE_CUDA_ROOTS   CUDA toolkit folders to look for nvcc in (above)
#
# Files under $OUT (at most eight, all small): suite.log (progress and the
# environment), build.log, ctest.log, bench.log (every cnnbench run),
# compare.log (every PyTorch run), results.jsonl (one JSON object per stage
# and run), summary.txt (the table). Exit status: 0 when nothing failed (runs
# skipped for time included), 1 when a stage or run failed or timed out, 2 for
# a bad argument or variable, 130/143 when interrupted (the table is printed).
set -Eeuo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
compare="$here/compare"  # the PyTorch peer and the table, beside this script
suite_name=gpu_suite.sh
ALL_STAGES=(build tests bench compare)
PEER_MODES=(eager cuda-graph compile compile-reduce-overhead compile-max-autotune)
MODELS=(resnet50 resnet101 resnet152 vgg16 vgg19 alexnet googlenet inception3 mobilenet_v2 trivial)
PRECISIONS=(fp16 bf16 tf32 fp32)

usage() {
  sed -n '2,/^set -Eeuo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
}

usage_error() {
  echo "$suite_name: $*" >&2
  echo "$suite_name: 'bash tools/gpu_suite.sh --help' prints the usage" >&2
  exit 2
}

# ---------------------------------------------------------------------------
# Arguments and variables: every bad value ends here with status 2.
# ---------------------------------------------------------------------------
dry_run=0
resume=""
only=""
want=()
while (($#)); do
  case "$1" in
    -n|--dry-run) dry_run=1 ;;
    --resume|--only)
      if (($# < 2)) || [[ -z "$2" ]]; then usage_error "$1 needs a value"; fi
      if [[ "$1" == --resume ]]; then resume=$2; else only=$2; fi
      shift ;;
    --resume=*) resume=${1#*=} ;;
    --only=*) only=${1#*=} ;;
    -h|--help) usage; exit 0 ;;
    build|tests|bench|compare) want+=("$1") ;;
    *) usage_error "unknown argument '$1' (stages: ${ALL_STAGES[*]}; options: --dry-run, --resume FILE, --only REGEX, --help)" ;;
  esac
  shift
done
((${#want[@]})) || want=("${ALL_STAGES[@]}")
stages=" ${want[*]} "
has_stage() { [[ "$stages" == *" $1 "* ]]; }
if [[ -n "$resume" && ! -r "$resume" ]]; then
  usage_error "--resume '$resume': no such readable file (give the results.jsonl of an earlier call)"
fi
if [[ -n "$only" ]]; then
  regex_rc=0
  [[ "" =~ $only ]] || regex_rc=$?
  ((regex_rc != 2)) || usage_error "--only '$only' is not a valid extended regular expression"
fi

# whole VARIABLE DEFAULT MIN: prints $VARIABLE (or DEFAULT), a whole number >= MIN,
# or exits with status 2 naming the variable.
whole() {
  local value=${!1:-$2}
  if ! [[ "$value" =~ ^[0-9]+$ ]] || ((10#$value < $3)); then
    usage_error "$1='$value' is not a whole number >= $3"
  fi
  echo "$((10#$value))"
}
budget=$(whole SUITE_BUDGET_S 570 30)
cap_build=$(whole SUITE_BUILD_S 330 0)
cap_tests=$(whole SUITE_TESTS_S 0 0)
cap_bench=$(whole SUITE_BENCH_S 0 0)
cap_compare=$(whole SUITE_COMPARE_S 0 0)
test_timeout=$(whole SUITE_TEST_TIMEOUT 300 10)
jobs=$(whole SUITE_JOBS "$(nproc 2>/dev/null || echo 4)" 1)
ctest_jobs=$(whole SUITE_CTEST_JOBS 1 1)
r50_batches=$(whole SUITE_BATCHES 50 1)
r50_warmup=$(whole SUITE_WARMUP 10 1)
zoo_batches=$(whole SUITE_ZOO_BATCHES 30 1)

# one_of VARIABLE WORD ALLOWED...: WORD must be one of ALLOWED.
one_of() {
  local variable=$1 word=$2
  shift 2
  [[ " $* " == *" $word "* ]] || usage_error "$variable: '$word' is not one of: $*"
}
zoo="${SUITE_ZOO-vgg16:128 inception3:128 googlenet:256 mobilenet_v2:256 alexnet:512 resnet101:256 resnet152:128 vgg19:128 trivial:256}"
for entry in $zoo; do
  [[ "$entry" =~ ^[a-z0-9_]+:[0-9]+$ ]] || usage_error "SUITE_ZOO: '$entry' is not model:batch"
  one_of SUITE_ZOO "${entry%%:*}" "${MODELS[@]}"
done
precisions="${SUITE_PRECISIONS-bf16 tf32 fp32}"
for p in $precisions; do one_of SUITE_PRECISIONS "$p" "${PRECISIONS[@]}"; done
peers="${SUITE_PEERS-${PEER_MODES[*]}}"
other_peers="${SUITE_OTHER_PEERS-eager}"
zoo_peers="${SUITE_ZOO_PEERS-eager}"
for m in $peers; do one_of SUITE_PEERS "$m" "${PEER_MODES[@]}"; done
for m in $other_peers; do one_of SUITE_OTHER_PEERS "$m" "${PEER_MODES[@]}"; done
for m in $zoo_peers; do one_of SUITE_ZOO_PEERS "$m" "${PEER_MODES[@]}"; done
micro=OFF
case "${SUITE_MICRO:-0}" in
  0) ;;
  1) micro=ON ;;
  *) usage_error "SUITE_MICRO='${SUITE_MICRO}' is not 0 or 1" ;;
esac
case "${SUITE_VERIFY:-1}" in
  0|1) ;;
  *) usage_error "SUITE_VERIFY='${SUITE_VERIFY}' is not 0 or 1" ;;
esac
py="${SUITE_PYTHON:-python3}"
torch_py="${SUITE_TORCH_PYTHON:-$py}"
command -v "$py" > /dev/null || usage_error "SUITE_PYTHON='$py' is not a program on PATH"

work="${SUITE_WORK_DIR:-$root/.gpu}"
out="${OUT:-$work/out}"
build="$work/build"
prefix="$work/prefix"
shim="$work/shim"
binary="$build/bench/cnnbench"
results="$out/results.jsonl"
suite_log="$out/suite.log"
mkdir -p "$out" "$work"
: > "$suite_log"
: > "$results"
export PYTHONUNBUFFERED=1
SECONDS=0
orig_ld_path="${LD_LIBRARY_PATH-}"
orig_ld_set="${LD_LIBRARY_PATH+set}"

say() {
  local line
  line="[suite $(printf '%3d' "$SECONDS")s] $*"
  echo "$line"
  echo "$line" >> "$suite_log"
}

report() { "$py" "$compare/suite_report.py" "$@"; }

# record ARGS...: appends a record (suite_report.py record) and prints its outcome.
record() {
  report record --results "$results" "$@" 2>> "$suite_log" || echo "(not recorded: see suite.log)"
}

# ---------------------------------------------------------------------------
# Time: a budget for the suite, one per stage, a limit per command.
# ---------------------------------------------------------------------------
declare -A cap=([build]=$cap_build [tests]=$cap_tests [bench]=$cap_bench [compare]=$cap_compare)
declare -A used=([build]=0 [tests]=0 [bench]=0 [compare]=0)
RESERVE_S=10  # for the table at the end

# stage_left STAGE: sets `left` to the seconds STAGE may still spend.
stage_left() {
  left=$((budget - SECONDS - RESERVE_S))
  local own=${cap[$1]}
  if ((own > 0)) && ((own - used[$1] < left)); then left=$((own - used[$1])); fi
  ((left > 0)) || left=0
}

# run_step STAGE LIMIT MIN LOG ENV CMD...: runs CMD with its output appended to
# LOG under min(LIMIT, what STAGE has left) seconds, or skips it when fewer than
# MIN are left. ENV is native (the libraries of the wheels and the .debs on
# LD_LIBRARY_PATH: cnnbench, cmake, ctest) or peer (the caller's environment,
# PyTorch loads its own libraries; torch.compile's caches in the work folder).
# Sets run_rc (the command's status; 124 timeout, 125 skipped for time, 0 in a
# dry run) and run_s (seconds it took).
run_step() {
  local stage=$1 limit=$2 min=$3 log=$4 kind=$5
  shift 5
  stage_left "$stage"
  ((limit <= left)) || limit=$left
  run_s=0
  if ((limit < min)); then
    say "skipped for time ($stage has ${left} s left, this needs ${min} s): $*"
    echo "=== skipped for time (${left} s left, needs ${min} s): $*" >> "$log"
    run_rc=125
    return 0
  fi
  if ((dry_run)); then
    say "dry run, would run (limit ${limit} s): $*"
    run_rc=0
    return 0
  fi
  local env_cmd=(env "LD_LIBRARY_PATH=$ld_path")
  if [[ "$kind" == peer ]]; then
    env_cmd=(env -u LD_LIBRARY_PATH)
    if [[ -n "$orig_ld_set" ]]; then env_cmd+=("LD_LIBRARY_PATH=$orig_ld_path"); fi
    env_cmd+=("TORCHINDUCTOR_CACHE_DIR=$work/inductor" "TRITON_CACHE_DIR=$work/triton")
  fi
  echo "=== $(date -u +%FT%TZ) limit ${limit} s: $*" >> "$log"
  local t0=$SECONDS
  run_rc=0
  # In the background and waited for, so that SIGTERM or SIGINT reach the
  # suite at once (bash runs a trap only when the command it waits on returns).
  timeout --kill-after=10 "$limit" "${env_cmd[@]}" "$@" >> "$log" 2>&1 < /dev/null &
  child=$!
  wait "$child" || run_rc=$?
  child=""
  run_s=$((SECONDS - t0))
  used[$stage]=$((used[$stage] + run_s))
  echo "=== exit ${run_rc} after ${run_s} s" >> "$log"
  if ((run_rc == 137)); then run_rc=124; fi
  return 0
}

# status_args: the record options for run_rc.
status_args() {
  if ((dry_run && run_rc == 0)); then
    printf '%s\n' --status "dry run"
  else
    printf '%s\n' --status-code "$run_rc"
  fi
}

# ---------------------------------------------------------------------------
# The table, always: at the end, after a failure, on SIGINT or SIGTERM.
# ---------------------------------------------------------------------------
stop_reason=""
err_line=""
err_cmd=""
on_error() {
  err_line=$1
  err_cmd=$2
}
finish() {
  local rc=$?
  trap - EXIT ERR INT TERM
  set +e
  if ((rc != 0)) && [[ -z "$stop_reason" ]]; then
    stop_reason="the suite stopped at line ${err_line:-?} (${err_cmd:-?}, exit $rc)"
  fi
  local verdict=0
  report verdict --results "$results" > /dev/null 2>&1 || verdict=1
  {
    echo
    echo "== summary ($suite_name ${want[*]})"
    if command -v nvidia-smi > /dev/null; then
      echo "GPU: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw \
        --format=csv,noheader 2>&1 | head -1)"
    fi
    report table --results "$results" 2>&1
    [[ -z "$stop_reason" ]] || echo "suite stopped early: $stop_reason"
    echo "suite: ${SECONDS} s of a ${budget} s budget; logs in $out"
  } | tee "$out/summary.txt"
  if ((rc == 130 || rc == 143)); then exit "$rc"; fi
  if ((rc != 0 || verdict != 0)); then exit 1; fi
  exit 0
}
trap 'on_error "$LINENO" "$BASH_COMMAND"' ERR
trap finish EXIT
child=""
# on_signal NAME STATUS: ends the command in flight (timeout passes the signal
# on to it), then exits through finish, which prints the table.
on_signal() {
  stop_reason="$1"
  if [[ -n "$child" ]]; then kill -TERM "$child" 2> /dev/null || true; fi
  exit "$2"
}
trap 'on_signal "interrupted (SIGINT)" 130' INT
trap 'on_signal "stopped (SIGTERM)" 143' TERM

if [[ -n "$resume" ]]; then
  say "resumed: $(report import --results "$results" --from "$resume")"
fi

# ---------------------------------------------------------------------------
# The first lines: nvcc, cuDNN, cuBLAS, NCCL, the GPU.
# ---------------------------------------------------------------------------
cuda_roots=()
if [[ -n "${SUITE_CUDA_ROOTS+set}" ]]; then
  for pattern in $SUITE_CUDA_ROOTS; do cuda_roots+=("$pattern"); done
else
  cuda_roots=(/usr/local/cuda)
  while IFS= read -r dir; do cuda_roots+=("$dir"); done < <(compgen -G '/usr/local/cuda-*' | sort -V -r)
fi
nvcc=""
nvcc_source=""
nvcc_error=""
if [[ -n "${CUDACXX:-}" ]]; then
  if [[ -x "$CUDACXX" && ! -d "$CUDACXX" ]]; then
    nvcc=$CUDACXX nvcc_source="CUDACXX"
  else
    nvcc_error="CUDACXX='$CUDACXX' is not an executable file"
  fi
elif found=$(command -v nvcc); then
  nvcc=$found nvcc_source="PATH"
elif [[ -n "${CUDA_HOME:-}" && -x "$CUDA_HOME/bin/nvcc" ]]; then
  nvcc="$CUDA_HOME/bin/nvcc" nvcc_source="CUDA_HOME"
else
  for dir in "${cuda_roots[@]}"; do
    if [[ -x "$dir/bin/nvcc" ]]; then nvcc="$dir/bin/nvcc" nvcc_source="$dir"; break; fi
  done
fi
cuda_home=""
if [[ -n "$nvcc" ]]; then cuda_home="$(dirname "$(dirname "$(readlink -f "$nvcc")")")"; fi

# Where the nvidia wheels (and, failing them, the system) keep nvcc, cuDNN,
# cuBLAS and NCCL: KEY=VALUE lines.
probe_libs() {
  "$py" - "$cuda_home" <<'PY'
import glob, importlib.metadata as md, os, re, site, sys

cuda_home = sys.argv[1]
roots = []
try:
    import nvidia
    roots += list(nvidia.__path__)
except Exception:
    pass
dirs = list(sys.path)
try:
    dirs += site.getsitepackages() + [site.getusersitepackages()]
except Exception:
    pass
for d in dirs:
    r = os.path.join(d, "nvidia")
    if os.path.isdir(r) and os.path.realpath(r) not in map(os.path.realpath, roots):
        roots.append(r)

def under_wheels(pattern):
    hits = []
    for r in roots:
        hits += glob.glob(os.path.join(r, "**", pattern), recursive=True)
    return sorted(set(os.path.realpath(h) for h in hits), key=lambda h: (len(h), h))

system_lib_dirs = [os.path.join(cuda_home, "lib64"),
                   os.path.join(cuda_home, "targets", "x86_64-linux", "lib"),
                   "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/lib"] if cuda_home else \
                  ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/lib"]
system_inc_dirs = ([os.path.join(cuda_home, "include"),
                    os.path.join(cuda_home, "targets", "x86_64-linux", "include")]
                   if cuda_home else []) + ["/usr/include", "/usr/include/x86_64-linux-gnu",
                                            "/usr/local/include"]

def header_version(path, names):
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return ""
    parts = []
    for n in names:
        m = re.search(r"#\s*define\s+" + n + r"\s+(\d+)", text)
        if not m:
            return ""
        parts.append(m.group(1))
    return ".".join(parts)

def wheels(prefix):
    found = []
    for dist in md.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name.startswith(prefix):
            found.append(f"{name} {dist.version}")
    return ", ".join(sorted(set(found)))

LIBS = {
    # key: (library glob, header, version header, version macros, wheel prefix)
    "cudnn": ("libcudnn.so.[0-9]*", "cudnn.h", ["cudnn_version.h", "cudnn.h"],
              ["CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"], "nvidia-cudnn"),
    "cublas": ("libcublasLt.so.[0-9]*", "cublasLt.h", ["cublas_api.h"],
               ["CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR", "CUBLAS_VER_PATCH"], "nvidia-cublas"),
    "nccl": ("libnccl.so.[0-9]*", "nccl.h", ["nccl.h"],
             ["NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"], "nvidia-nccl"),
}
out = {}
for key, (lib_glob, header, version_headers, macros, prefix) in LIBS.items():
    libs = under_wheels(lib_glob)
    source = "wheel"
    lib_dir = inc_dir = ""
    if libs:
        lib_dir = os.path.dirname(libs[0])
        near = os.path.join(os.path.dirname(lib_dir), "include", header)
        incs = [near] if os.path.exists(near) else under_wheels(header)
        inc_dir = os.path.dirname(incs[0]) if incs else ""
    else:
        source = "system"
        for d in system_lib_dirs:
            if glob.glob(os.path.join(d, lib_glob)):
                lib_dir = d
                break
        for d in system_inc_dirs:
            if os.path.exists(os.path.join(d, header)):
                inc_dir = d
                break
    version = ""
    for h in version_headers:
        if inc_dir and not version:
            version = header_version(os.path.join(inc_dir, h), macros)
    out[key + "_lib"] = lib_dir
    out[key + "_inc"] = inc_dir
    out[key + "_version"] = version
    out[key + "_source"] = source if lib_dir else ""
    out[key + "_wheel"] = wheels(prefix)
nvccs = [p for p in under_wheels("nvcc") if os.path.basename(os.path.dirname(p)) == "bin"
         and os.access(p, os.X_OK)]
out["nvcc_wheel"] = nvccs[0] if nvccs else ""
out["nvcc_wheel_dist"] = wheels("nvidia-cuda-nvcc")
lib_dirs = []
for r in roots:
    for base, _, files in os.walk(r):
        if os.path.basename(base) == "lib" and any(".so" in f for f in files) and base not in lib_dirs:
            lib_dirs.append(base)
out["wheel_libs"] = ":".join(lib_dirs)
for k, v in out.items():
    print(f"{k}={v}")
PY
}
declare -A lib=()
probe_text=$(probe_libs 2>> "$suite_log") || probe_text=""
while IFS='=' read -r key value; do
  [[ -n "$key" ]] && lib[$key]=$value
done <<< "$probe_text"
if [[ -z "$nvcc" && -z "$nvcc_error" && -n "${lib[nvcc_wheel]:-}" ]]; then
  nvcc=${lib[nvcc_wheel]} nvcc_source="the wheel ${lib[nvcc_wheel_dist]:-nvidia-cuda-nvcc}"
  cuda_home="$(dirname "$(dirname "$(readlink -f "$nvcc")")")"
fi
nvcc_version=""
if [[ -n "$nvcc" ]]; then
  if version_text=$("$nvcc" --version 2>&1); then
    nvcc_version=$(grep -i 'release' <<< "$version_text" | tail -1 || true)
    [[ -n "$nvcc_version" ]] || nvcc_version=$(tail -1 <<< "$version_text")
  else
    nvcc_error="'$nvcc --version' failed: $(tail -1 <<< "$version_text")"
    nvcc=""
  fi
fi
if [[ -z "$nvcc" && -z "$nvcc_error" ]]; then
  looked="\$CUDACXX, PATH, \$CUDA_HOME/bin"
  for dir in "${cuda_roots[@]}"; do looked+=", $dir/bin"; done
  nvcc_error="no nvcc (looked at $looked and the nvidia-cuda-nvcc wheel)"
fi

lib_line() {  # NAME KEY
  local version=${lib[${2}_version]:-} wheel=${lib[${2}_wheel]:-} dir=${lib[${2}_lib]:-}
  local inc=${lib[${2}_inc]:-} source=${lib[${2}_source]:-}
  if [[ -z "$dir" ]]; then
    echo "$1: not found (no wheel ${wheel:+($wheel) }library and no system library)"
  else
    echo "$1: ${version:-version unknown} (${source}${wheel:+ $wheel}; lib $dir${inc:+; include $inc})"
  fi
}
stage_caps=""
for s in "${want[@]}"; do
  if ((cap[$s] > 0)); then stage_caps+="${stage_caps:+, }$s ${cap[$s]} s"; fi
done
dry_text=""
if ((dry_run)); then dry_text="; dry run: nothing is built or run"; fi
say "$suite_name: stages ${want[*]}; budget ${budget} s${stage_caps:+ ($stage_caps)}; logs in $out$dry_text"
if [[ -n "$nvcc" ]]; then
  say "nvcc: $nvcc (${nvcc_version:-version unknown}; found via $nvcc_source)"
else
  say "nvcc: NOT FOUND: $nvcc_error"
fi
say "$(lib_line cuDNN cudnn)"
say "$(lib_line cuBLAS cublas)"
say "$(lib_line NCCL nccl)"
if command -v nvidia-smi > /dev/null; then
  say "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
else
  say "GPU: nvidia-smi not found"
fi
if has_stage compare; then
  torch_line=$("$torch_py" -c 'import torch, torchvision; print(f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}), torchvision {torchvision.__version__}, GPU visible: {torch.cuda.is_available()}")' 2>&1 | tail -1) || true
  say "peer: $torch_line"
fi

# Every lib folder of the unpacked .debs, the wheels and the toolkit, for cnnbench and ctest.
ld_path="$prefix/usr/lib/x86_64-linux-gnu${lib[wheel_libs]:+:${lib[wheel_libs]}}${cuda_home:+:$cuda_home/lib64}${orig_ld_path:+:$orig_ld_path}"
{
  echo "== environment"
  nvidia-smi 2>&1 || true
  echo "== toolchain"
  cmake --version 2>&1 | head -1 || true
  echo "ninja $(ninja --version 2>&1 || true)"
  c++ --version 2>&1 | head -1 || true
  "$py" --version 2>&1 || true
  echo "cores: $(nproc 2>/dev/null || echo '?')"
  echo "== probe"
  printf '%s\n' "$probe_text"
  echo "LD_LIBRARY_PATH for cnnbench and ctest: $ld_path"
} >> "$suite_log" 2>&1

# ---------------------------------------------------------------------------
# build
# ---------------------------------------------------------------------------
# unpack_debs LOG: the .debs, under $prefix (never into /). Returns 1, having
# said which, when one cannot be unpacked.
unpack_debs() {
  local log=$1 debs=("$work"/debs/*.deb) stamp deb rc
  stamp="$(printf '%s\n' "${debs[@]##*/}" | sha1sum | cut -c1-12)"
  if [[ -f "$prefix/.stamp-$stamp" ]]; then
    say "the ${#debs[@]} .debs are unpacked in $prefix already"
    return 0
  fi
  rm -rf "$prefix" && mkdir -p "$prefix"
  for deb in "${debs[@]}"; do
    rc=0
    if command -v dpkg-deb > /dev/null; then
      dpkg-deb -x "$deb" "$prefix" >> "$log" 2>&1 || rc=$?
    else  # no dpkg: a .deb is an ar archive holding data.tar.*
      "$py" - "$deb" "$prefix" >> "$log" 2>&1 <<'PY' || rc=$?
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
if data[:8] != b"!<arch>\n":
    sys.exit(f"{sys.argv[1]}: not a .deb (no ar header)")
pos = 8
while pos + 60 <= len(data):
    name = data[pos:pos + 16].decode().strip().rstrip("/")
    size = int(data[pos + 48:pos + 58].decode().strip())
    body = data[pos + 60:pos + 60 + size]
    if name.startswith("data.tar"):
        with tarfile.open(fileobj=io.BytesIO(body)) as tar:
            tar.extractall(sys.argv[2], filter="tar") if hasattr(tarfile, "tar_filter") \
                else tar.extractall(sys.argv[2])
    pos += 60 + size + (size & 1)
PY
    fi
    if ((rc != 0)); then
      say "could not unpack $deb (see build.log)"
      return 1
    fi
  done
  touch "$prefix/.stamp-$stamp"
  say "unpacked ${#debs[@]} .debs into $prefix"
}

# make_shim NAME LIBDIR INCDIR LIB...: the wheels ship versioned libraries only
# (libcudnn.so.9): a folder with the unversioned names CMake's find_library
# looks for, and the headers beside them.
make_shim() {
  local name=$1 libdir=$2 incdir=$3 l candidate target
  shift 3
  rm -rf "${shim:?}/$name" && mkdir -p "$shim/$name/lib"
  ln -s "$incdir" "$shim/$name/include"
  for l in "$@"; do
    target=""
    for candidate in "$libdir"/lib"$l".so.[0-9]*; do  # the shortest name: lib.so.9
      [[ -e "$candidate" ]] || continue
      if [[ -z "$target" ]] || ((${#candidate} < ${#target})); then target=$candidate; fi
    done
    if [[ -n "$target" ]]; then ln -s "$target" "$shim/$name/lib/lib$l.so"; fi
  done
}

# The programs behind the gpu label, as ctest lists them after configure.
gpu_test_programs() {
  ctest --test-dir "$build" -L gpu --show-only=json-v1 2>> "$out/build.log" | "$py" -c '
import json, os, sys
tests = json.load(sys.stdin).get("tests", [])
names = []
for t in tests:
    labels = [v for p in t.get("properties", []) if p.get("name") == "LABELS" for v in p.get("value", [])]
    if "gpu" not in labels or not t.get("command"):
        continue
    name = os.path.basename(t["command"][0])
    name = name[:-len("_NOT_BUILT")] if name.endswith("_NOT_BUILT") else name
    if name not in names:
        names.append(name)
print("\n".join(names))
'
}

build_stage() {
  local log="$out/build.log" t0=$SECONDS
  : > "$log"
  if [[ -z "$nvcc" ]]; then
    say "build: failed: $nvcc_error"
    record --stage build --status "failed: no nvcc" --note "$nvcc_error" > /dev/null
    return 0
  fi
  if compgen -G "$work/debs/*.deb" > /dev/null; then
    if ((dry_run)); then
      say "dry run, would unpack $work/debs/*.deb into $prefix"
    elif ! unpack_debs "$log"; then
      say "build: $(record --stage build --status "failed: .debs" --seconds "$((SECONDS - t0))" \
        --note "a .deb in $work/debs could not be unpacked" --log "$log")"
      return 0
    fi
  else
    say "no $work/debs/*.deb: the build needs CLI11, nlohmann/json (and GoogleTest for tests) from the system; tools/fetch_gpu_deps.sh fetches them"
  fi
  local onednn=OFF with_tests=OFF
  if [[ -f "$prefix/usr/lib/x86_64-linux-gnu/cmake/dnnl/dnnl-config.cmake" ]]; then onednn=ON; fi
  if has_stage tests; then with_tests=ON; fi
  local extra=()
  if [[ "${lib[cudnn_source]:-}" == wheel && -n "${lib[cudnn_inc]:-}" ]]; then
    ((dry_run)) || make_shim cudnn "${lib[cudnn_lib]}" "${lib[cudnn_inc]}" cudnn
    extra+=("-DCUDNN_ROOT=$shim/cudnn")
  fi
  if [[ "${lib[nccl_source]:-}" == wheel && -n "${lib[nccl_inc]:-}" ]]; then
    ((dry_run)) || make_shim nccl "${lib[nccl_lib]}" "${lib[nccl_inc]}" nccl
    extra+=("-DNCCL_ROOT=$shim/nccl")
  fi
  # cuBLAS from the wheel when the toolkit has none of its own.
  if ! compgen -G "$cuda_home/lib64/libcublasLt.so*" > /dev/null &&
     ! compgen -G "$cuda_home/targets/*/lib/libcublasLt.so*" > /dev/null &&
     [[ "${lib[cublas_source]:-}" == wheel && -n "${lib[cublas_inc]:-}" ]]; then
    ((dry_run)) || make_shim cublas "${lib[cublas_lib]}" "${lib[cublas_inc]}" cublas cublasLt
    extra+=("-DCUDA_cublas_LIBRARY=$shim/cublas/lib/libcublas.so"
            "-DCUDA_cublasLt_LIBRARY=$shim/cublas/lib/libcublasLt.so")
    export CPATH="${lib[cublas_inc]}${CPATH:+:$CPATH}"
    say "cuBLAS from the wheel: ${lib[cublas_lib]}"
  fi
  run_step build 150 20 "$log" native cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DCNNBENCH_CUDA=ON "-DCMAKE_CUDA_COMPILER=$nvcc" \
    "-DCUDAToolkit_ROOT=$cuda_home" -DCMAKE_CUDA_ARCHITECTURES=90 -DCNNBENCH_MPI=OFF \
    "-DCNNBENCH_ONEDNN=$onednn" "-DCNNBENCH_BUILD_TESTS=$with_tests" \
    "-DCNNBENCH_BUILD_MICRO=$micro" "-DCMAKE_PREFIX_PATH=$prefix/usr" "${extra[@]}"
  local rc=$run_rc note="oneDNN $onednn, tests $with_tests"
  if ((rc == 0 && !dry_run)) && ! grep -q '^CNNBENCH_CUDA:BOOL=ON' "$build/CMakeCache.txt"; then
    say "build: configure left CNNBENCH_CUDA off (see build.log): no CPU-only build is made"
    record --stage build --status "failed: CUDA off" --seconds "$((SECONDS - t0))" \
      --note "configure did not keep CNNBENCH_CUDA=ON" --log "$log" > /dev/null
    return 0
  fi
  local targets=(cnnbench)
  if ((rc == 0)) && has_stage tests; then
    if ((dry_run)); then
      say "dry run: the gpu test programs are listed by ctest after configure"
    else
      local known listed t
      known=$(ninja -C "$build" -t targets all 2>/dev/null | cut -d: -f1 || true)
      listed=$(gpu_test_programs || true)
      for t in $listed; do
        if grep -qx -- "$t" <<< "$known"; then targets+=("$t"); fi
      done
      if [[ -z "$listed" ]]; then
        say "ctest lists no gpu test program before the build: building everything"
        targets=(all)
      fi
    fi
  fi
  if [[ "$micro" == ON ]]; then targets+=(cnnbench_micro); fi
  if ((rc == 0)); then
    # -k 0: one broken target leaves the others to build.
    run_step build 600 60 "$log" native cmake --build "$build" -j "$jobs" \
      --target "${targets[@]}" -- -k 0
    rc=$run_rc
    note="${targets[*]}; $note"
  fi
  if ((rc != 0 && rc != 125)) && ((!dry_run)); then
    grep -E '^FAILED:|error:' "$log" | head -10 | sed 's/^/    /' || true
    if [[ -x "$binary" ]]; then note="cnnbench built, other targets failed; $note"; fi
  fi
  # A cnnbench left from an earlier build must not stand in for one that failed now.
  if ((!dry_run)) && [[ -x "$binary" ]] &&
     ! ninja -C "$build" -n cnnbench 2> /dev/null | grep -q 'no work to do'; then
    binary_stale=1
    note="cnnbench did not build: the one in $build is older than the sources; $note"
  fi
  local status
  mapfile -t status < <(status_args)
  say "build: $(record --stage build "${status[@]}" --seconds "$((SECONDS - t0))" \
    --note "$note" --log "$log") (log build.log)"
}
binary_stale=0

# ---------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------
tests_stage() {
  local log="$out/ctest.log"
  : > "$log"
  if ((!dry_run)) && [[ ! -f "$build/CTestTestfile.cmake" ]]; then
    say "tests: no configured build in $build (the build stage makes it)"
    record --stage tests --status "not run: no build" \
      --note "no configured build in $build (the build stage makes it)" > /dev/null
    return 0
  fi
  local limit=${cap[tests]}
  ((limit > 0)) || limit=$budget
  run_step tests "$limit" 30 "$log" native ctest --test-dir "$build" -L gpu \
    --output-on-failure --no-tests=error --timeout "$test_timeout" -j "$ctest_jobs"
  local status
  mapfile -t status < <(status_args)
  say "tests: $(record --stage tests "${status[@]}" --seconds "$run_s" --log "$log") (log ctest.log)"
  if ((run_rc != 0 && run_rc != 125)); then
    sed -n '/The following tests FAILED/,$p' "$log" | head -20 | sed 's/^/    /' || true
  fi
}

# ---------------------------------------------------------------------------
# bench and compare: a plan in order of importance; each entry is
# "runner mode model precision batch batches warmup limit min".
# ---------------------------------------------------------------------------
plan=()
peer_limits() {  # MODE: sets plimit and pmin
  case "$1" in
    eager) plimit=150 pmin=40 ;;
    cuda-graph) plimit=150 pmin=45 ;;
    compile|compile-reduce-overhead) plimit=300 pmin=120 ;;
    compile-max-autotune) plimit=540 pmin=240 ;;
  esac
}
add_runs() {  # MODEL PRECISION BATCH BATCHES WARMUP CNNBENCH_LIMIT CNNBENCH_MIN PEER_MODES...
  local model=$1 precision=$2 batch=$3 batches=$4 warmup=$5 limit=$6 min=$7 m
  shift 7
  plan+=("cnnbench - $model $precision $batch $batches $warmup $limit $min")
  for m in "$@"; do
    peer_limits "$m"
    plan+=("pytorch $m $model $precision $batch $batches $warmup $plimit $pmin")
  done
}
# The CUDA-graph compile modes compile for minutes: they run after the other
# precisions, so that a short call still measures cnnbench in all four.
first_peers=()
late_peers=()
for m in $peers; do
  case "$m" in
    compile-reduce-overhead|compile-max-autotune) late_peers+=("$m") ;;
    *) first_peers+=("$m") ;;
  esac
done
read -ra other_peer_list <<< "$other_peers"
read -ra zoo_peer_list <<< "$zoo_peers"
add_runs resnet50 fp16 256 "$r50_batches" "$r50_warmup" 180 45 "${first_peers[@]}"
for p in $precisions; do
  if [[ "$p" == fp32 ]]; then
    add_runs resnet50 fp32 256 20 5 180 45 "${other_peer_list[@]}"
  else
    add_runs resnet50 "$p" 256 "$r50_batches" "$r50_warmup" 180 45 "${other_peer_list[@]}"
  fi
done
for m in "${late_peers[@]}"; do
  peer_limits "$m"
  plan+=("pytorch $m resnet50 fp16 256 $r50_batches $r50_warmup $plimit $pmin")
done
for entry in $zoo; do
  add_runs "${entry%%:*}" fp16 "${entry##*:}" "$zoo_batches" 5 120 30 "${zoo_peer_list[@]}"
done

cnnbench_flags=()
bench_compare_stage() {
  local done_text="" bench_log="$out/bench.log" compare_log="$out/compare.log" tmp="$work/run.log"
  : > "$bench_log"
  : > "$compare_log"
  done_text=$(report "done" --results "$results" 2>> "$suite_log" || true)
  # Flags this cnnbench has: one plan cache for every run (a later run, or a
  # later call on a warm machine, starts from known engines), the result JSON
  # (set-up time, memory, FLOPs), and --verify on the ResNet-50 runs (one step
  # against the CPU backend, which needs a build with oneDNN).
  local help_text="" verify=0
  if has_stage bench && ((!dry_run)) && [[ -x "$binary" ]]; then
    help_text=$(env LD_LIBRARY_PATH="$ld_path" "$binary" --help 2>&1 || true)
  fi
  if grep -q -- '--plan_cache' <<< "$help_text"; then cnnbench_flags+=("--plan_cache=$work/plans.json"); fi
  if grep -q -- '--verify' <<< "$help_text" && [[ "${SUITE_VERIFY:-1}" == 1 ]] &&
     grep -q '^CNNBENCH_ONEDNN:BOOL=ON' "$build/CMakeCache.txt" 2> /dev/null; then
    verify=1
  fi
  local json_flag=()
  if grep -q -- '--result_json' <<< "$help_text"; then json_flag=("--result_json=$work/run.json"); fi
  local only_text=""
  if [[ -n "$only" ]]; then only_text=", those matching '$only' run"; fi
  say "benchmarks: ${#plan[@]} runs planned in order of importance$only_text"
  local entry runner mode model precision batch batches warmup limit min key stage log status
  for entry in "${plan[@]}"; do
    read -r runner mode model precision batch batches warmup limit min <<< "$entry"
    key="$runner $mode $model $precision $batch"
    if [[ "$runner" == cnnbench ]]; then stage=bench log=$bench_log; else stage=compare log=$compare_log; fi
    has_stage "$stage" || continue
    if [[ -n "$only" ]] && ! [[ "$key" =~ $only ]]; then continue; fi
    if grep -qxF -- "$key" <<< "$done_text"; then
      say "$key: measured in the earlier call"
      continue
    fi
    : > "$tmp"
    if [[ "$runner" == cnnbench ]]; then
      if { [[ ! -x "$binary" ]] || ((binary_stale)); } && ((!dry_run)); then
        local why="no cnnbench binary at $binary (the build stage makes it)"
        if ((binary_stale)); then why="cnnbench did not build in this call (see build.log)"; fi
        say "$key: not run: $why"
        record --stage bench --status "not run: no binary" --note "$why" --runner cnnbench \
          --mode - --model "$model" --precision "$precision" --batch "$batch" > /dev/null
        continue
      fi
      local run_flags=("${cnnbench_flags[@]}" "${json_flag[@]}")
      if ((verify)) && [[ "$model" == resnet50 ]]; then run_flags+=(--verify); fi
      rm -f "$work/run.json"
      run_step bench "$limit" "$min" "$tmp" native "$binary" --device=gpu --model="$model" \
        --batch_size="$batch" --precision="$precision" --num_batches="$batches" \
        --num_warmup_batches="$warmup" --display_every=10 "${run_flags[@]}"
    else
      rm -f "$work/run.json"
      run_step compare "$limit" "$min" "$tmp" peer "$torch_py" \
        "$compare/pytorch_baseline.py" --model="$model" --precision="$precision" \
        --batch_size="$batch" --num_batches="$batches" --num_warmup_batches="$warmup" \
        --display_every=10 --mode="$mode"
    fi
    cat "$tmp" >> "$log"
    mapfile -t status < <(status_args)
    say "$key: $(record --stage "$stage" "${status[@]}" --seconds "$run_s" --runner "$runner" \
      --mode "$mode" --model "$model" --precision "$precision" --batch "$batch" --log "$tmp" \
      --result-json "$work/run.json")"
    if ((run_rc != 0 && run_rc != 125)); then tail -5 "$tmp" | sed 's/^/    /'; fi
  done
}

if has_stage build; then build_stage; fi
if has_stage tests; then tests_stage; fi
if has_stage bench || has_stage compare; then bench_compare_stage; fi
