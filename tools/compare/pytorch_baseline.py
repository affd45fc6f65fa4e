#!/usr/bin/env python3
"""PyTorch peer for cnnbench: the same model, batch, precision and layout, trained
the way a careful PyTorch user trains for speed, timed exactly as cnnbench times
itself.

What runs, per invocation (one model, one precision, one peer mode):
  - torchvision's definition of the model (cnnbench's zoo follows torchvision:
    same names, parameter counts match exactly), or for "trivial" a flatten and
    one linear layer, as in cnnbench;
  - channels_last for NHWC (cnnbench's GPU layout, the default), or NCHW;
  - synthetic data generated once on the device and never copied again:
    images ~ N(0, 1) stored in the compute type (fp16/bf16 runs keep them in
    fp16/bf16, as cnnbench stores its synthetic batch), labels uniform;
  - torch.nn.CrossEntropyLoss and torch.optim.SGD (lr 0.01, momentum 0.9,
    weight decay 1e-4: cnnbench's defaults) with fused=True, the fastest of
    PyTorch's three implementations (torch.optim's docs rank fused > foreach >
    for-loop; foreach is only the default because fused covers fewer cases;
    --sgd picks another);
  - precision: fp16 = autocast(float16) with torch.amp.GradScaler (dynamic loss
    scaling with its defaults: initial scale 2^16, growth every 2000 steps, as
    cnnbench); bf16 = autocast(bfloat16); tf32 = fp32 tensors with TF32
    matrix products and convolutions; fp32 = TF32 off;
  - torch.backends.cudnn.benchmark = True (PyTorch's autotuning, as cnnbench
    autotunes its cuDNN plans).

Peer modes (--mode):
  eager                    the step as Python runs it;
  cuda-graph               the whole step (zero_grad, forward, loss, backward,
                           loss scaling, optimizer step) captured once with
                           torch.cuda.graph and replayed, as cnnbench replays a
                           whole-step CUDA graph (fp16 needs --sgd fused: the
                           other optimizers synchronise in GradScaler.step);
  compile                  torch.compile of forward + loss, default mode;
  compile-reduce-overhead  the same with mode="reduce-overhead" (CUDA graphs);
  compile-max-autotune     the same with mode="max-autotune" (Triton and
                           cuBLAS/cuDNN template autotuning, CUDA graphs).
The step holds no host synchronisation (no .item(), static input tensors, grads
set to None), so each mode can graph it.

Timing (tools/compare/timing.py, the same loop as cnnbench's trainer): the
first step is timed on its own (for the compile modes it compiles: reported as
compile_s, never counted); the other warm-up steps each wait for the device;
the timed steps are bracketed by CUDA events read one step late; displayed
steps read the loss; total images/sec = images / wall time of the timed loop,
taken after a final synchronise. Peak device memory (allocated and reserved by
PyTorch's caching allocator) covers the whole run; start_to_timed_s is the time
from the process's start to the first timed step (imports, set-up, compilation,
warm-up), as cnnbench's set-up time in its result JSON.

Output: cnnbench's text format (header, step lines, `total images/sec: N`,
step time percentiles), then one JSON object on the last line, e.g.
  {"model": "resnet50", "precision": "fp16", "batch": 256, "mode": "eager",
   "images_per_sec": 2875.4, "step_ms": {"p50": 89.1, ...}, ...}
On failure (out of memory, no GPU, a failed capture) the JSON has "error" and
the exit status is 1; a bad argument exits with status 2. Needs Python 3.9+,
torch and torchvision; nothing else. --device=cpu runs the same step on the CPU
(the peer of cnnbench --device=cpu; host-clock step times, as cnnbench's CPU
path; no cuda-graph mode, no tf32).

Usage:
  python3 tools/compare/pytorch_baseline.py --model=resnet50 --precision=fp16 \\
      --batch_size=256 --num_batches=50 --num_warmup_batches=10 --mode=compile
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from typing import Optional

# The process's start, as near as Python gets: start_to_timed_s counts from here
# (imports, set-up, compilation and warm-up), as cnnbench's set-up time counts
# from its start to the first timed step.
PROCESS_START = time.perf_counter()

sys.dont_write_bytecode = True  # no __pycache__ beside the sources on the GPU host
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timing  # noqa: E402  (tools/compare/timing.py, beside this file)

DEFAULT_IMAGE_SIZE = {"inception3": 299}
MODELS = ("resnet50", "resnet101", "resnet152", "vgg16", "vgg19", "alexnet", "googlenet",
          "inception3", "mobilenet_v2", "trivial")
PRECISIONS = ("fp16", "bf16", "tf32", "fp32")
SGD_IMPLS = ("fused", "foreach", "for-loop")


@dataclass(frozen=True)
class PeerMode:
    """How one peer mode runs the training step."""

    name: str
    compile_mode: Optional[str]  # torch.compile's mode; None: no torch.compile
    cuda_graph: bool  # whole-step capture with torch.cuda.graph
    description: str


MODES = {
    m.name: m for m in (
        PeerMode("eager", None, False, "eager"),
        PeerMode("cuda-graph", None, True, "eager ops, whole step captured by torch.cuda.graph"),
        PeerMode("compile", "default", False, 'torch.compile(mode="default")'),
        PeerMode("compile-reduce-overhead", "reduce-overhead", False,
                 'torch.compile(mode="reduce-overhead"): CUDA graphs'),
        PeerMode("compile-max-autotune", "max-autotune", False,
                 'torch.compile(mode="max-autotune"): template autotuning and CUDA graphs'),
    )
}


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not >= 1")
    return value


def non_negative_float(text: str) -> float:
    """argparse type: a finite float >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{value} is not a finite number >= 0")
    return value


def parse_args(argv=None) -> argparse.Namespace:
    """The command line, with cnnbench's flag names where they mean the same.
    Exits with status 2 and a message naming the flag on a bad value."""
    p = argparse.ArgumentParser(
        prog="pytorch_baseline.py",
        description="PyTorch peer for cnnbench: one model, precision and peer mode per run.")
    p.add_argument("--model", choices=MODELS, default="resnet50")
    p.add_argument("--precision", choices=PRECISIONS, default="fp16")
    p.add_argument("--mode", choices=tuple(MODES), default="eager", help="peer mode (module doc)")
    p.add_argument("--sgd", choices=SGD_IMPLS, default="fused",
                   help="torch.optim.SGD implementation; default fused")
    p.add_argument("--batch_size", type=positive_int, default=256)
    p.add_argument("--num_batches", type=positive_int, default=50, help="timed steps")
    p.add_argument("--num_warmup_batches", type=positive_int, default=10,
                   help="untimed steps before timing, the first included")
    p.add_argument("--display_every", type=positive_int, default=10)
    p.add_argument("--image_size", type=positive_int, default=None,
                   help="default: the model's own (224; 299 for inception3)")
    p.add_argument("--num_classes", type=positive_int, default=1000)
    p.add_argument("--data_format", "--format", dest="data_format", choices=("NHWC", "NCHW"),
                   default="NHWC")
    p.add_argument("--learning_rate", type=non_negative_float, default=0.01)
    p.add_argument("--momentum", type=non_negative_float, default=0.9)
    p.add_argument("--weight_decay", type=non_negative_float, default=1e-4)
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cuda (default), or cpu: the peer of cnnbench --device=cpu")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--json", metavar="PATH", help="also write the JSON result to PATH")
    args = p.parse_args(argv)
    if args.momentum >= 1:
        p.error(f"argument --momentum: {args.momentum} is not in [0, 1)")
    mode = MODES[args.mode]
    if args.device == "cpu" and mode.cuda_graph:
        p.error("argument --mode: --mode=cuda-graph needs --device=cuda")
    if args.device == "cpu" and args.precision == "tf32":
        p.error("argument --precision: --precision=tf32 needs --device=cuda (TF32 is a GPU format)")
    if mode.cuda_graph and args.precision == "fp16" and args.sgd != "fused":
        p.error(f"argument --sgd: --mode=cuda-graph with --precision=fp16 needs --sgd=fused "
                f"(GradScaler.step synchronises the host with the {args.sgd} implementation, "
                "which a CUDA graph capture cannot hold)")
    if args.image_size is None:
        args.image_size = DEFAULT_IMAGE_SIZE.get(args.model, 224)
    return args


def describe_precision(precision: str) -> str:
    """The Precision header line's value."""
    return {
        "fp16": "fp16 (autocast float16, GradScaler dynamic loss scaling)",
        "bf16": "bf16 (autocast bfloat16)",
        "tf32": "tf32 (fp32 tensors, TF32 matrix products and convolutions)",
        "fp32": "fp32 (TF32 off)",
    }[precision]


def sgd_kwargs(impl: str) -> dict:
    """torch.optim.SGD's keyword for the implementation named by --sgd."""
    return {"fused": {"fused": True}, "foreach": {"foreach": True},
            "for-loop": {"foreach": False}}[impl]


def header_lines(args: argparse.Namespace, device_name: str, peer_versions: str,
                 param_count: int) -> list[str]:
    """cnnbench's header (bench/report/text_report.cpp), for the fields that apply."""
    mode = MODES[args.mode]
    rows = [
        ("Model", args.model),
        ("Dataset", "imagenet (synthetic)"),
        ("Mode", f"training; PyTorch peer {mode.name}: {mode.description}"),
        ("Batch size", f"{args.batch_size} global"),
        ("", f"{args.batch_size} per device"),
        ("Num batches", str(args.num_batches)),
        ("Num warm-up", f"{args.num_warmup_batches} (untimed)"),
        ("Devices", device_name),
        ("Data format", args.data_format + (" (channels_last)" if args.data_format == "NHWC" else "")),
        ("Precision", describe_precision(args.precision)),
        ("Optimizer", f"SGD {args.sgd} (momentum {args.momentum:g}, learning rate "
                      f"{args.learning_rate:g}, weight decay {args.weight_decay:g})"),
        ("Image size", f"{args.image_size} x {args.image_size} pixels"),
        ("Parameters", f"{param_count} ({param_count / 1e6:.2f} million)"),
        ("Backend", peer_versions),
    ]
    lines = []
    for label, value in rows:
        text = f"{label}:" if label else ""
        lines.append(text.ljust(max(len(text) + 1, 13)) + value)
    return lines


def build_model(name: str, num_classes: int, image_size: int):
    """torchvision's model for a cnnbench zoo name. Raises ValueError for others."""
    import torch
    import torchvision.models as tvm

    if name == "trivial":
        return torch.nn.Sequential(
            torch.nn.Flatten(), torch.nn.Linear(3 * image_size * image_size, num_classes))
    if name in ("resnet50", "resnet101", "resnet152", "vgg16", "vgg19", "alexnet", "mobilenet_v2"):
        return getattr(tvm, name)(weights=None, num_classes=num_classes)
    if name == "googlenet":
        # init_weights only changes the initial values, which do not matter here.
        return tvm.googlenet(weights=None, num_classes=num_classes, aux_logits=False,
                             init_weights=False)
    if name == "inception3":
        return tvm.inception_v3(weights=None, num_classes=num_classes, aux_logits=False,
                                init_weights=False)
    raise ValueError(f"unknown model {name!r}; valid: {', '.join(MODELS)}")


def set_math(precision: str) -> None:
    """TF32 on for tf32 only; cuDNN autotuning on. Uses the fp32_precision
    settings where this PyTorch has them (2.9+; allow_tf32 is deprecated there)."""
    import torch

    tf32 = precision == "tf32"
    if hasattr(torch.backends.cuda.matmul, "fp32_precision"):
        torch.backends.cuda.matmul.fp32_precision = "tf32" if tf32 else "ieee"
        torch.backends.cudnn.conv.fp32_precision = "tf32" if tf32 else "ieee"
    else:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True


def versions(device_kind: str) -> dict:
    """Versions of the peer's software and the name of the device it runs on."""
    info: dict = {}
    try:
        import torch

        info.update(torch=torch.__version__, cuda=torch.version.cuda,
                    cudnn=torch.backends.cudnn.version())
        if device_kind == "cpu" or torch.cuda.is_available():
            info["device"] = device_name(torch, torch.device(device_kind))
        import torchvision

        info["torchvision"] = torchvision.__version__
        try:
            import triton

            info["triton"] = triton.__version__
        except ImportError:
            pass
    except Exception as e:  # noqa: BLE001 - report whatever went wrong
        info["versions_error"] = f"{type(e).__name__}: {e}"
    return info


def device_name(torch, device) -> str:
    """The GPU's name, or the CPU's model name from /proc/cpuinfo."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() + " (CPU)"
    except OSError:
        pass
    return "CPU"


def run(args: argparse.Namespace, out) -> dict:
    """Builds, warms up and times one peer run; prints cnnbench-style text to out.
    Returns the figures for the JSON line; raises on any failure."""
    import torch

    mode = MODES[args.mode]
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    if on_gpu and not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device (torch.cuda.is_available() is False)")
    synchronize = torch.cuda.synchronize if on_gpu else (lambda: None)
    setup_start = time.perf_counter()
    if on_gpu:
        torch.cuda.reset_peak_memory_stats(device)
    set_math(args.precision)
    layout = torch.channels_last if args.data_format == "NHWC" else torch.contiguous_format
    model = build_model(args.model, args.num_classes, args.image_size)
    model = model.to(device=device, memory_format=layout)
    model.train()
    param_count = sum(p.numel() for p in model.parameters())

    autocast_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision)
    gen = torch.Generator(device=device)
    gen.manual_seed(args.seed)
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device,
                         generator=gen)
    images = images.to(dtype=autocast_dtype or torch.float32).contiguous(memory_format=layout)
    labels = torch.randint(0, args.num_classes, (args.batch_size,), device=device, generator=gen)

    loss_fn = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate, momentum=args.momentum,
                                weight_decay=args.weight_decay, **sgd_kwargs(args.sgd))
    scaler = torch.amp.GradScaler(device.type) if args.precision == "fp16" else None

    def autocast():
        if autocast_dtype is None:
            return contextlib.nullcontext()
        # A captured graph must not depend on autocast's cast cache (CUDA graphs notes).
        return torch.autocast(device.type, dtype=autocast_dtype,
                              cache_enabled=not mode.cuda_graph)

    def forward_loss(x, y):
        with autocast():
            return loss_fn(model(x), y)

    if mode.compile_mode is not None:
        compile_kwargs = {} if mode.compile_mode == "default" else {"mode": mode.compile_mode}
        forward_loss = torch.compile(forward_loss, **compile_kwargs)
    # CUDA-graph trees (reduce-overhead, max-autotune) must be told where a
    # step begins, or the previous step's outputs count as still alive.
    mark_step = mode.compile_mode is not None and hasattr(torch.compiler,
                                                          "cudagraph_mark_step_begin")
    state = {}

    def train_step():
        if mark_step:
            torch.compiler.cudagraph_mark_step_begin()
        optimizer.zero_grad(set_to_none=True)
        loss = forward_loss(images, labels)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        state["loss"] = loss

    cuda_text = f"CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}" if on_gpu \
        else "CPU"
    peer_versions = f"PyTorch {torch.__version__} ({cuda_text}), SGD {args.sgd}"
    for line in header_lines(args, device_name(torch, device), peer_versions, param_count):
        print(line, file=out)
    print("==========", file=out)
    print("Running warm up", file=out, flush=True)
    setup_s = time.perf_counter() - setup_start

    # Warm-up, untimed; each step waited for, as cnnbench's warm-up. The capture
    # mode warms up on a side stream, as the CUDA graphs notes ask, so that no
    # lazy initialisation lands in the capture.
    side = torch.cuda.Stream(device) if mode.cuda_graph else None
    if side is not None:
        side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side) if side is not None else contextlib.nullcontext():
        t0 = time.perf_counter()
        train_step()
        synchronize()
        first_step_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(args.num_warmup_batches - 1):
            train_step()
            synchronize()
        rest_warmup_s = time.perf_counter() - t0
    if side is not None:
        torch.cuda.current_stream(device).wait_stream(side)

    capture_s = None
    step = train_step
    if mode.cuda_graph:
        synchronize()
        graph = torch.cuda.CUDAGraph()
        t0 = time.perf_counter()
        with torch.cuda.graph(graph):
            train_step()
        graph.replay()  # one untimed replay: the graph runs
        synchronize()
        capture_s = time.perf_counter() - t0
        step = graph.replay
    print("Done warm up", file=out)
    print("Step\tImg/sec\ttotal_loss", file=out, flush=True)

    def show(i, tp, loss):
        print(timing.step_line(i, tp, loss), file=out, flush=True)

    new_event = (lambda: torch.cuda.Event(enable_timing=True)) if on_gpu else timing.HostEvent
    start_to_timed_s = time.perf_counter() - PROCESS_START
    result = timing.timed_loop(
        step, batch=args.batch_size, num_batches=args.num_batches,
        display_every=args.display_every, new_event=new_event,
        read_loss=lambda: float(state["loss"].detach().float().item()),
        synchronize=synchronize, on_display=show)

    peak_allocated = torch.cuda.max_memory_allocated(device) / 2**30 if on_gpu else None
    peak_reserved = torch.cuda.max_memory_reserved(device) / 2**30 if on_gpu else None
    for line in timing.summary_lines(result):
        print(line, file=out)
    compiled = mode.compile_mode is not None
    print(f"warm-up: {args.num_warmup_batches} steps in {first_step_s + rest_warmup_s:.3f} s "
          f"(untimed; the first step {first_step_s:.3f} s"
          f"{', compiling' if compiled else ''})", file=out)
    if capture_s is not None:
        print(f"capture: {capture_s:.3f} s (untimed; one whole-step CUDA graph)", file=out)
    if on_gpu:
        print(f"peak memory: {peak_allocated:.2f} GiB allocated, {peak_reserved:.2f} GiB reserved "
              "(PyTorch's caching allocator)", file=out)
    print(f"final loss: {result.final_loss:.3f} (mean cross-entropy of the last step)", file=out,
          flush=True)
    p = timing.summarize(result.step_times_ms)
    return {
        "device_kind": device.type,
        "images_per_sec": result.total_images_per_sec,
        "timed_steps": result.steps,
        "wall_time_s": result.wall_time_s,
        "step_ms": {"p50": p.p50, "p90": p.p90, "p99": p.p99, "mean": p.mean, "min": p.min,
                    "max": p.max},
        "setup_s": setup_s,
        "first_step_s": first_step_s,
        "compile_s": first_step_s if compiled else None,
        "warmup_s": first_step_s + rest_warmup_s,
        "capture_s": capture_s,
        "start_to_timed_s": start_to_timed_s,
        "loss": result.final_loss,
        "image_size": args.image_size,
        "param_count": param_count,
        "peak_allocated_gib": peak_allocated,
        "peak_reserved_gib": peak_reserved,
    }


def json_safe(value):
    """value with every non-finite float as a string ("nan", "inf") and every
    other non-JSON type as its str(): the JSON line is always valid JSON."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def main(argv=None) -> int:
    args = parse_args(argv)
    record = {
        "model": args.model,
        "precision": args.precision,
        "batch": args.batch_size,
        "mode": args.mode,
        "sgd": args.sgd,
        "data_format": args.data_format,
        "num_batches": args.num_batches,
        "num_warmup_batches": args.num_warmup_batches,
        "display_every": args.display_every,
        "device_kind": args.device,
    }
    try:
        record.update(run(args, sys.stdout))
        status = 0
    except Exception as e:  # noqa: BLE001 - one JSON line whatever failed
        record["error"] = f"{type(e).__name__}: {e}"
        print(f"error: {record['error']}", file=sys.stderr, flush=True)
        status = 1
    record.update(versions(args.device))
    text = json.dumps(json_safe(record), allow_nan=False)
    print(text, flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
