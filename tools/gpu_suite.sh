#!/usr/bin/env bash
# The GPU suite: builds cnnbench on the lab GPU host (one H200, 16 cores, no
# network access, CUDA toolkit, PyTorch, and cuDNN/NCCL/cuBLAS as Python
# wheels), runs the GPU tests, the benchmark and the PyTorch comparison, and
# prints a short table last. It is meant for one run of at most 10 minutes, so
# every stage runs under a time limit and the whole suite under a budget: a
# stage that would not fit is skipped, a stage that fails or times out is
# reported in the table, and the suite goes on.
#
# Before the call, on the build machine (network needed):
#   tools/fetch_gpu_deps.sh --with-onednn     # .debs into .gpu/debs (git-ignored)
# The GPU run then takes .gpu/debs along and runs, from the repository root:
#   bash tools/gpu_suite.sh                   # build tests bench compare
#   bash tools/gpu_suite.sh build bench compare   # e.g. a second run on the
#                                             # same host: .gpu/build is reused
#
# Stages (arguments; default all four, always in this order):
#   build    unpack .gpu/debs/*.deb with dpkg -x into .gpu/prefix (never /),
#            find cuDNN, NCCL, cuBLAS and NVRTC in the Python wheels, configure
#            for sm_90 with -DCNNBENCH_MPI=OFF (oneDNN on when its .debs were
#            carried) and build cnnbench and the GPU test programs in .gpu/build;
#   tests    ctest -L gpu --output-on-failure;
#   bench    cnnbench: ResNet-50 at batch 256 in fp16, bf16, tf32 and fp32 (fp32
#            with fewer batches), each after --verify against the CPU backend,
#            then the other zoo models at fp16; all share .gpu/plans.json
#            (--plan_cache), so a second call starts from known engines;
#   compare  tools/compare/pytorch_baseline.py on the same runs, eager, and
#            torch.compile for ResNet-50 fp16 (SUITE_COMPILE adds more).
#   With both bench and compare, each run is followed by its PyTorch twin.
#
# Environment (all optional):
#   OUT                where logs go (default .gpu/out)
#   SUITE_BUDGET_S     wall-clock budget of the whole suite (default 570)
#   SUITE_JOBS         build parallelism (default: all cores)
#   SUITE_BATCHES      timed steps of ResNet-50 runs (default 50; fp32 uses 20)
#   SUITE_WARMUP       warm-up steps of ResNet-50 runs (default 10; fp32 uses 5)
#   SUITE_ZOO          "model:batch ..." at fp16 after ResNet-50 (default below)
#   SUITE_ZOO_BATCHES  timed steps of the zoo runs (default 30, warm-up 5)
#   SUITE_COMPILE      "model:precision ..." run with torch.compile
#                      (default "resnet50:fp16"; "none" for none)
#   SUITE_CTEST_JOBS   GPU tests run at once (default 4; they share the GPU)
#   SUITE_MICRO=1      also build the Google Benchmark programs
#
# Files under $OUT (eight at most, so that all of them can be collected): env.log,
# build.log, ctest.log, bench.log (every cnnbench run), torch.log (every
# PyTorch run), results.jsonl (one JSON object per run), summary.txt.
set -u -o pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1
gpu="$root/.gpu"
out="${OUT:-$gpu/out}"
mkdir -p "$out"
build="$gpu/build"
prefix="$gpu/prefix"
shim="$gpu/shim"
results="$out/results.jsonl"
summary="$out/summary.txt"
budget="${SUITE_BUDGET_S:-570}"
jobs="${SUITE_JOBS:-$(nproc)}"
r50_batches="${SUITE_BATCHES:-50}"
r50_warmup="${SUITE_WARMUP:-10}"
zoo_batches="${SUITE_ZOO_BATCHES:-30}"
zoo="${SUITE_ZOO:-vgg16:128 inception3:128 googlenet:256 mobilenet_v2:256 alexnet:512 resnet101:256 resnet152:128 vgg19:128 trivial:256}"
compile_runs="${SUITE_COMPILE:-resnet50:fp16}"
start=$(date +%s)
: >> "$results"
export PYTHONUNBUFFERED=1

stages=" ${*:-build tests bench compare} "
for s in $stages; do
  case "$s" in build|tests|bench|compare) ;; *)
    echo "gpu_suite.sh: unknown stage '$s' (valid: build tests bench compare)" >&2; exit 2 ;;
  esac
done
has_stage() { [[ "$stages" == *" $1 "* ]]; }

elapsed() { echo $(($(date +%s) - start)); }
remaining() { echo $((budget - $(elapsed))); }
say() { echo "[suite $(printf '%3d' "$(elapsed)")s] $*"; }

# run_limited LIMIT MIN LOG cmd...: runs cmd with its output appended to LOG,
# under min(LIMIT, what is left of the budget) seconds. Returns the command's
# status, 124 when the limit stopped it, 125 when fewer than MIN seconds were left.
run_limited() {
  local limit=$1 min=$2 log=$3
  shift 3
  local left=$(($(remaining) - 10))
  if ((left < min)); then
    say "skipped (${left}s left, needs ${min}s): $*"
    echo "=== skipped (${left}s left, needs ${min}s): $*" >> "$log"
    return 125
  fi
  ((limit > left)) && limit=$left
  say "run (limit ${limit}s): $*"
  echo "=== $(date -u +%FT%TZ) limit ${limit}s: $*" >> "$log"
  local t0=$SECONDS
  timeout --kill-after=15 "$limit" "$@" >> "$log" 2>&1
  local rc=$?
  echo "=== exit $rc after $((SECONDS - t0))s" >> "$log"
  ((rc == 124 || rc == 137)) && return 124
  return $rc
}

status_text() {
  case "$1" in
    0) echo ok ;; 124) echo timeout ;; 125) echo "skipped (time)" ;; *) echo "failed (exit $1)" ;;
  esac
}

# record KIND MODEL PRECISION BATCH IMAGES_PER_SEC STATUS [EXTRA_JSON]
record() {
  local ips="${5:-}"
  [[ -z "$ips" ]] && ips=null
  printf '{"kind": "%s", "model": "%s", "precision": "%s", "batch": %s, "images_per_sec": %s, "status": "%s"%s}\n' \
    "$1" "$2" "$3" "$4" "$ips" "$6" "${7:+, $7}" >> "$results"
}

# ---------------------------------------------------------------------------
# Environment: the GPU, the toolchain and the libraries in the Python wheels.
# ---------------------------------------------------------------------------
{
  echo "== nvidia-smi"; nvidia-smi 2>&1
  echo "== nvidia-smi query"
  nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit \
    --format=csv 2>&1
  echo "== toolchain"; nvcc --version 2>&1 | tail -2; cmake --version 2>&1 | head -1
  ninja --version 2>&1; c++ --version 2>&1 | head -1; python3 --version 2>&1; nproc
} > "$out/env.log" 2>&1

# The directory holding the first file matching a glob under the nvidia wheels.
wheel_dir() {
  python3 - "$1" <<'PY'
import glob, os, site, sys
roots = []
try:
    import nvidia
    roots += list(nvidia.__path__)
except Exception:
    pass
for s in site.getsitepackages() + [site.getusersitepackages()]:
    roots.append(os.path.join(s, "nvidia"))
for r in roots:
    hits = sorted(glob.glob(os.path.join(r, "**", sys.argv[1]), recursive=True), key=len)
    if hits:
        print(os.path.dirname(os.path.realpath(hits[0])))
        sys.exit(0)
sys.exit(1)
PY
}
cudnn_lib=$(wheel_dir 'libcudnn.so.[0-9]*') || cudnn_lib=""
nccl_lib=$(wheel_dir 'libnccl.so.[0-9]*') || nccl_lib=""
cublas_lib=$(wheel_dir 'libcublasLt.so.[0-9]*') || cublas_lib=""
cudnn_inc=$(wheel_dir 'cudnn.h') || cudnn_inc=""
nccl_inc=$(wheel_dir 'nccl.h') || nccl_inc=""
cublas_inc=$(wheel_dir 'cublasLt.h') || cublas_inc=""
# nvcc: PATH, the usual toolkit folder, or the nvidia-cuda-nvcc wheel. The
# configure below asks for CUDA with this compiler, so a host without one
# fails at configure with the reason instead of building a CPU-only binary.
nvcc_path=$(command -v nvcc || true)
[[ -z "$nvcc_path" && -x /usr/local/cuda/bin/nvcc ]] && nvcc_path=/usr/local/cuda/bin/nvcc
if [[ -z "$nvcc_path" ]]; then
  nvcc_dir=$(wheel_dir 'nvcc') && [[ -x "$nvcc_dir/nvcc" ]] && nvcc_path="$nvcc_dir/nvcc"
fi
cuda_home=""
[[ -n "$nvcc_path" ]] && cuda_home="$(dirname "$(dirname "$(readlink -f "$nvcc_path")")")"
say "nvcc: ${nvcc_path:-not found} ($([[ -n "$nvcc_path" ]] && "$nvcc_path" --version 2>&1 | tail -1))"

# Every lib folder of the wheels, the unpacked .debs and the toolkit.
wheel_libs=$(python3 - <<'PY'
import os, site
dirs, roots = [], []
try:
    import nvidia
    roots += list(nvidia.__path__)
except Exception:
    pass
for s in site.getsitepackages():
    roots.append(os.path.join(s, "nvidia"))
for r in roots:
    if not os.path.isdir(r):
        continue
    for base, subdirs, files in os.walk(r):
        if os.path.basename(base) == "lib" and any(".so" in f for f in files):
            if base not in dirs:
                dirs.append(base)
print(":".join(dirs))
PY
)
export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu:${wheel_libs}${cuda_home:+:$cuda_home/lib64}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  echo "== wheels"
  echo "cuDNN  lib $cudnn_lib include $cudnn_inc"
  echo "NCCL   lib $nccl_lib include $nccl_inc"
  echo "cuBLAS lib $cublas_lib include $cublas_inc"
  echo "CUDA toolkit $cuda_home"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  echo "== library versions"
  python3 - <<'PY'
import importlib.metadata as md
for name in ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12", "nvidia-nccl-cu13", "nvidia-nccl-cu12",
             "nvidia-cublas", "nvidia-cublas-cu12", "nvidia-cuda-nvrtc", "nvidia-cuda-runtime",
             "torch", "torchvision"):
    try:
        print(f"{name} {md.version(name)}")
    except md.PackageNotFoundError:
        pass
try:
    import torch
    print("torch: CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version(),
          "NCCL", ".".join(map(str, torch.cuda.nccl.version())),
          "device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
except Exception as e:
    print("torch:", repr(e))
PY
} >> "$out/env.log" 2>&1
say "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
say "$(grep -E '^(nvidia-cudnn|nvidia-nccl|nvidia-cublas|torch) ' "$out/env.log" | tr '\n' ' ')"
say "$(grep '^torch: CUDA' "$out/env.log")"
say "wheels: cuDNN ${cudnn_lib:-not found}, NCCL ${nccl_lib:-not found}, cuBLAS ${cublas_lib:-not found}"

# ---------------------------------------------------------------------------
# build
# ---------------------------------------------------------------------------
binary="$build/bench/cnnbench"
if has_stage build; then
  : > "$out/build.log"
  # The .debs, unpacked under the repository (never into /).
  if compgen -G "$gpu/debs/*.deb" > /dev/null; then
    debs=("$gpu"/debs/*.deb)
    stamp="$(printf '%s\n' "${debs[@]##*/}" | sha1sum | cut -c1-12)"
    if [[ ! -f "$prefix/.stamp-$stamp" ]]; then
      rm -rf "$prefix" && mkdir -p "$prefix"
      for deb in "$gpu"/debs/*.deb; do
        if command -v dpkg-deb > /dev/null; then
          dpkg-deb -x "$deb" "$prefix" >> "$out/build.log" 2>&1
        else  # no dpkg: a .deb is an ar archive holding data.tar.*
          python3 - "$deb" "$prefix" <<'PY' >> "$out/build.log" 2>&1
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
pos = 8
while pos < len(data):
    name = data[pos:pos + 16].decode().strip().rstrip("/")
    size = int(data[pos + 48:pos + 58].decode().strip())
    body = data[pos + 60:pos + 60 + size]
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(body)).extractall(sys.argv[2])
    pos += 60 + size + (size & 1)
PY
        fi
      done
      touch "$prefix/.stamp-$stamp"
    fi
    say "unpacked ${#debs[@]} .debs into $prefix"
  else
    say "no .gpu/debs/*.deb: run tools/fetch_gpu_deps.sh on the build machine and carry .gpu/debs"
  fi
  onednn=OFF
  [[ -f "$prefix/usr/lib/x86_64-linux-gnu/cmake/dnnl/dnnl-config.cmake" ]] && onednn=ON

  # The wheels ship versioned libraries only (libcudnn.so.9): give CMake's
  # find_library the unversioned names it looks for, with the headers beside.
  cmake_extra=()
  make_shim() {  # NAME LIBDIR INCDIR LIB...
    local name=$1 libdir=$2 incdir=$3
    shift 3
    rm -rf "${shim:?}/$name" && mkdir -p "$shim/$name/lib"
    ln -s "$incdir" "$shim/$name/include"
    local lib candidate target
    for lib in "$@"; do
      target=""
      for candidate in "$libdir"/lib"$lib".so.[0-9]*; do  # the shortest name: lib.so.9
        [[ -e "$candidate" ]] || continue
        if [[ -z "$target" ]] || ((${#candidate} < ${#target})); then target=$candidate; fi
      done
      if [[ -n "$target" ]]; then ln -s "$target" "$shim/$name/lib/lib$lib.so"; fi
    done
  }
  if [[ -n "$cudnn_lib" && -n "$cudnn_inc" ]]; then
    make_shim cudnn "$cudnn_lib" "$cudnn_inc" cudnn
    cmake_extra+=("-DCUDNN_ROOT=$shim/cudnn")
  fi
  if [[ -n "$nccl_lib" && -n "$nccl_inc" ]]; then
    make_shim nccl "$nccl_lib" "$nccl_inc" nccl
    cmake_extra+=("-DNCCL_ROOT=$shim/nccl")
  fi
  # cuBLAS from the wheel when the toolkit has none of its own.
  if [[ -n "$cuda_home" ]] && ! compgen -G "$cuda_home/lib64/libcublasLt.so*" > /dev/null &&
     ! compgen -G "$cuda_home/targets/*/lib/libcublasLt.so*" > /dev/null && [[ -n "$cublas_lib" ]]; then
    make_shim cublas "$cublas_lib" "$cublas_inc" cublas cublasLt
    cmake_extra+=("-DCUDA_cublas_LIBRARY=$shim/cublas/lib/libcublas.so"
                  "-DCUDA_cublasLt_LIBRARY=$shim/cublas/lib/libcublasLt.so")
    export CPATH="$cublas_inc${CPATH:+:$CPATH}"
    say "cuBLAS from the wheel: $cublas_lib"
  fi
  micro=OFF
  [[ "${SUITE_MICRO:-0}" == 1 ]] && micro=ON

  if [[ -z "$nvcc_path" ]]; then
    say "build: no nvcc on PATH, in /usr/local/cuda/bin or in the nvidia-cuda-nvcc wheel; the configure will say so"
  fi
  run_limited 120 20 "$out/build.log" cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCNNBENCH_MPI=OFF \
    -DCNNBENCH_CUDA=ON -DCMAKE_CUDA_COMPILER="${nvcc_path:-nvcc}" \
    -DCNNBENCH_ONEDNN="$onednn" -DCNNBENCH_BUILD_MICRO="$micro" -DCNNBENCH_BUILD_TESTS=ON \
    -DCMAKE_PREFIX_PATH="$prefix/usr" "${cmake_extra[@]}"
  rc=$?
  if ((rc == 0)); then
    targets=(cnnbench)
    if has_stage tests; then
      # The programs behind the gpu label; names that this tree does not define are left out.
      known=$(ninja -C "$build" -t targets all 2>/dev/null | cut -d: -f1)
      for t in cuda_activation_test cuda_batchnorm_test cuda_elementwise_test cuda_loss_test \
               cuda_optimizer_test cuda_pool_test kernels_cuda_cudnn_graph_test \
               kernels_cuda_conv_test kernels_cuda_fc_test kernels_cuda_executable_test \
               kernels_cuda_backend_vs_cpu_test kernels_cuda_reference_check_test \
               kernels_gpu_info_gpu_test bench_gpu_run_test \
               bench_telemetry_gpu_test mpi_nccl_local_group_test cnnbench_micro; do
        grep -qx -- "$t" <<< "$known" && targets+=("$t")
      done
    fi
    # -k 0: one broken target (someone else's work in progress) leaves the others.
    run_limited 360 60 "$out/build.log" cmake --build "$build" -j "$jobs" --target "${targets[@]}" -- -k 0
    rc=$?
  fi
  say "build: $(status_text $rc) (oneDNN $onednn; log build.log)"
  ((rc != 0)) && grep -E "error|FAILED" "$out/build.log" | head -20
  record build - - 0 "" "$(status_text $rc)"
fi

# ---------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------
if has_stage tests; then
  if [[ -d "$build" ]]; then
    # Leave at least 200 s for the benchmark when it follows.
    test_limit=420
    has_stage bench && test_limit=$(($(remaining) - 200))
    ((test_limit > 420)) && test_limit=420
    ((test_limit < 60)) && test_limit=60
    run_limited "$test_limit" 30 "$out/ctest.log" \
      ctest --test-dir "$build" -L gpu --output-on-failure --timeout 400 -j "${SUITE_CTEST_JOBS:-4}"
    rc=$?
    summary_line=$(grep -E "tests passed|No tests were found" "$out/ctest.log" | tail -1)
    say "ctest -L gpu: $(status_text $rc): ${summary_line:-no summary} (log ctest.log)"
    sed -n '/The following tests/,$p' "$out/ctest.log" | head -40
    record tests - - 0 "" "$(status_text $rc)" "\"summary\": \"${summary_line//\"/}\""
  else
    say "tests: no build folder"
  fi
fi

# ---------------------------------------------------------------------------
# bench and compare
# ---------------------------------------------------------------------------
cnnbench_run() {  # MODEL PRECISION BATCH BATCHES WARMUP LIMIT
  local model=$1 precision=$2 batch=$3 batches=$4 warmup=$5 limit=$6
  if [[ ! -x "$binary" ]]; then
    record cnnbench "$model" "$precision" "$batch" "" "no binary"
    return
  fi
  local tmp="$gpu/run.log" json="$gpu/run.json"
  : > "$tmp"
  rm -f "$json"
  # ResNet-50 runs check their step against the CPU backend first (--verify);
  # every run shares one plan cache, so later calls start from known engines.
  local verify=()
  [[ "$model" == resnet50 ]] && verify=(--verify)
  run_limited "$limit" 25 "$tmp" "$binary" --device=gpu --model="$model" --batch_size="$batch" \
    --precision="$precision" --num_batches="$batches" --num_warmup_batches="$warmup" \
    --display_every=10 --plan_cache="$gpu/plans.json" --result_json="$json" "${verify[@]}"
  local rc=$?
  cat "$tmp" >> "$out/bench.log"
  local ips
  ips=$(grep -E '^total images/sec:' "$tmp" | tail -1 | awk '{ print $3 }')
  local backend
  backend=$(grep -E '^Backend:' "$tmp" | head -1 | cut -d: -f2- | sed 's/^ *//; s/["\\]//g')
  local status
  status=$(status_text $rc)
  [[ $rc == 0 && -z "$ips" ]] && status="no total"
  ((rc != 0 && rc != 125)) && tail -5 "$tmp" | sed 's/^/    /'
  # Start to the first timed step, the executable's memory, and achieved
  # TFLOP/s (training ≈ 3 × the forward FLOPs: forward, dgrad, wgrad).
  local extra=""
  [[ -f "$json" ]] && extra=$(python3 - "$json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
s, r = d["summary"], d["run"]
ips = s.get("total_images_per_sec") or 0
out = {"setup_s": s.get("setup_time_s"), "memory_mib": r.get("device_memory_bytes", 0) / 2**20,
       "tflops": ips * 3 * (r.get("gflops_per_image") or 0) / 1000.0,
       "setup": d.get("setup"), "verify": d.get("verify", {}).get("lines")}
print(json.dumps(out)[1:-1])
PY
)
  record cnnbench "$model" "$precision" "$batch" "$ips" "$status" "\"backend\": \"$backend\"${extra:+, $extra}"
  say "cnnbench $model $precision batch $batch: ${ips:-—} images/sec ($status)"
}

torch_run() {  # MODEL PRECISION BATCH BATCHES WARMUP MODE LIMIT MIN
  local model=$1 precision=$2 batch=$3 batches=$4 warmup=$5 mode=$6 limit=$7 min=$8
  local tmp="$gpu/torch.log"
  : > "$tmp"
  run_limited "$limit" "$min" "$tmp" python3 "$root/tools/compare/pytorch_baseline.py" \
    --model "$model" --precision "$precision" --batch_size "$batch" --num_batches "$batches" \
    --num_warmup_batches "$warmup" --mode "$mode"
  local rc=$?
  cat "$tmp" >> "$out/torch.log"
  local line
  line=$(grep -E '^\{' "$tmp" | tail -1)
  local ips=""
  [[ -n "$line" ]] && ips=$(python3 -c 'import json,sys; v=json.loads(sys.argv[1]).get("images_per_sec"); print("" if v is None else f"{v:.2f}")' "$line" 2>/dev/null)
  local status
  status=$(status_text $rc)
  [[ $rc != 0 && -n "$line" ]] && status="$status: $(python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get("error","")[:80])' "$line" 2>/dev/null)"
  record "torch_$mode" "$model" "$precision" "$batch" "$ips" "${status//\"/}" "${line:+\"detail\": $line}"
  say "pytorch $mode $model $precision batch $batch: ${ips:-—} images/sec ($status)"
}

if has_stage bench || has_stage compare; then
  say "benchmarks ($(remaining)s left)"
  bench_pair() {  # MODEL PRECISION BATCH BATCHES WARMUP CNNBENCH_LIMIT
    has_stage bench && cnnbench_run "$1" "$2" "$3" "$4" "$5" "$6"
    has_stage compare && torch_run "$1" "$2" "$3" "$4" "$5" eager 120 25
  }
  bench_pair resnet50 fp16 256 "$r50_batches" "$r50_warmup" 150
  bench_pair resnet50 bf16 256 "$r50_batches" "$r50_warmup" 150
  bench_pair resnet50 tf32 256 "$r50_batches" "$r50_warmup" 150
  bench_pair resnet50 fp32 256 20 5 150
  if has_stage compare && [[ "$compile_runs" == *resnet50:fp16* ]]; then
    # The strongest peers: default, max-autotune and reduce-overhead (CUDA graphs).
    for mode in compile compile-reduce-overhead compile-max-autotune; do
      torch_run resnet50 fp16 256 "$r50_batches" "$r50_warmup" "$mode" 300 120
    done
  fi
  for entry in $zoo; do
    bench_pair "${entry%%:*}" fp16 "${entry##*:}" "$zoo_batches" 5 90
  done
  if has_stage compare && [[ "$compile_runs" != none ]]; then
    for entry in $compile_runs; do
      [[ "$entry" == resnet50:fp16 ]] && continue
      model=${entry%%:*}
      precision=${entry##*:}
      batch=256
      for z in $zoo; do [[ "${z%%:*}" == "$model" ]] && batch=${z##*:}; done
      torch_run "$model" "$precision" "$batch" "$zoo_batches" 5 compile 300 120
    done
  fi
fi

# ---------------------------------------------------------------------------
# The table, last.
# ---------------------------------------------------------------------------
{
  echo
  echo "GPU: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader 2>&1 | head -1)"
  python3 - "$results" <<'PY'
import json, sys
runs, order, other = {}, [], []
for line in open(sys.argv[1]):
    line = line.strip()
    if not line:
        continue
    try:
        r = json.loads(line)
    except json.JSONDecodeError:
        continue
    if r["kind"] in ("build", "tests"):
        other.append(r)
        continue
    key = (r["model"], r["precision"], r["batch"])
    if key not in runs:
        runs[key] = {}
        order.append(key)
    runs[key][r["kind"]] = r
for r in other:
    print(f'{r["kind"]}: {r["status"]}' + (f' ({r["summary"]})' if r.get("summary") else ""))
def cell(r):
    if r is None:
        return "—"
    if r.get("images_per_sec") is not None:
        return f'{r["images_per_sec"]:.1f}'
    return r["status"].split(":")[0]
peers = (("torch_eager", "eager"), ("torch_compile", "compile"),
         ("torch_compile-reduce-overhead", "reduce-ovh"), ("torch_compile-max-autotune", "max-autotune"))
head = (f'{"model":<14}{"precision":<10}{"batch":>6}{"cnnbench":>11}' +
        "".join(f"{title:>13}" for _, title in peers) + f'{"ratio":>7}{"TFLOP/s":>9}{"setup s":>9}  notes')
print(head)
print("-" * len(head))
for key in order:
    k = runs[key]
    ours = k.get("cnnbench")
    theirs = [k.get(kind) for kind, _ in peers]
    best = max([r["images_per_sec"] for r in theirs if r and r.get("images_per_sec")] or [0])
    ratio = f'{ours["images_per_sec"] / best:.2f}' if ours and ours.get("images_per_sec") and best else "—"
    tflops = f'{ours["tflops"]:.0f}' if ours and ours.get("tflops") else "—"
    setup = f'{ours["setup_s"]:.1f}' if ours and ours.get("setup_s") else "—"
    notes = []
    for name, r in [("cnnbench", ours)] + [(t, r) for (_, t), r in zip(peers, theirs)]:
        if r and r["status"] != "ok":
            notes.append(f'{name}: {r["status"]}')
        if r and (r.get("detail") or {}).get("compile_s"):
            notes.append(f'{name} compile {r["detail"]["compile_s"]:.0f} s')
    if ours and ours.get("verify"):
        notes.append("verify: " + ", ".join(l.split("): ")[-1].split(" (")[0] for l in ours["verify"]))
    print(f'{key[0]:<14}{key[1]:<10}{key[2]:>6}{cell(ours):>11}' + "".join(f"{cell(r):>13}" for r in theirs) +
          f'{ratio:>7}{tflops:>9}{setup:>9}  {"; ".join(notes)}')
print("images/sec, higher is better; ratio = cnnbench / the best PyTorch mode; TFLOP/s = images/sec x 3 x forward GFLOPs;")
print("setup s = cnnbench start to its first timed step; PyTorch: SGD(fused=True), one CUDA event pair per step, wall-clock total")
PY
  echo "suite: $(elapsed)s of a ${budget}s budget; logs in $out"
} | tee "$summary"
