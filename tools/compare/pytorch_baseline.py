#!/usr/bin/env python3
"""PyTorch baseline for cnnbench: the same model, batch, precision and layout,
trained the way a PyTorch user would, timed the way cnnbench times itself.

What is run, per invocation (one model, one precision, one mode):
  - torchvision's definition of the model (cnnbench's zoo follows torchvision:
    same names, parameter counts match exactly), or for "trivial" a flatten and
    one linear layer, as in cnnbench;
  - channels_last (NHWC) by default, the layout cnnbench uses on the GPU;
  - synthetic data created once on the device: images ~ N(0, 1), labels
    uniform over the classes;
  - torch.nn.CrossEntropyLoss and torch.optim.SGD(lr 0.01, momentum 0.9,
    weight_decay 1e-4), cnnbench's defaults, with fused=True (one kernel for
    the whole update, and with it GradScaler needs no host sync per step;
    PyTorch recommends fused where it exists), else foreach=True on versions
    without a fused SGD;
  - precision: fp16 = torch.autocast(float16) with torch.amp.GradScaler;
    bf16 = torch.autocast(bfloat16); tf32 = fp32 tensors with
    torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32;
    fp32 = both TF32 switches off;
  - torch.backends.cudnn.benchmark = True (PyTorch's own autotuning, as
    cnnbench autotunes its cuDNN plans);
  - mode eager; compile = torch.compile(model) (the default mode);
    compile-max-autotune (Triton autotuning of every kernel); or
    compile-reduce-overhead (CUDA graphs of forward and backward, PyTorch's
    answer to cnnbench replaying its whole step as one CUDA graph). The
    compilation happens in the first steps, which are timed on their own and
    reported as compile_s, never counted in images/sec.

Timing, as cnnbench times itself: warm-up steps untimed; a synchronise, then
the timed loop with a CUDA event pair around each step and no synchronise
inside it; a synchronise after it. images_per_sec = batch * timed steps /
host wall time of that loop, as cnnbench's "total images/sec"; the per-step
figures (median, min) come from the events, read after the loop.

Output: one JSON object per line on stdout (flushed), e.g.
  {"model": "resnet50", "precision": "fp16", "batch": 256, "mode": "eager",
   "images_per_sec": 2875.4, "step_ms_median": 89.1, ...}
On failure (out of memory, an unknown model), a line with "error" and exit
status 1. Needs only Python 3, torch and torchvision.

Usage:
  python3 tools/compare/pytorch_baseline.py --model resnet50 --precision fp16 \
      --batch_size 256 --num_batches 50 --num_warmup_batches 10 --mode eager
"""

import argparse
import contextlib
import json
import math
import sys
import time

DEFAULT_IMAGE_SIZE = {"inception3": 299}
PRECISIONS = ("fp32", "tf32", "fp16", "bf16")


def build_model(name, num_classes, image_size):
    """torchvision's model for a cnnbench zoo name."""
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
    raise ValueError(f"unknown model {name!r}; valid: resnet50, resnet101, resnet152, vgg16, "
                     "vgg19, alexnet, googlenet, inception3, mobilenet_v2, trivial")


# --mode → torch.compile's mode (None: eager, no compile).
COMPILE_MODES = {
    "eager": None,
    "compile": "default",
    "compile-max-autotune": "max-autotune",
    "compile-reduce-overhead": "reduce-overhead",
}


def make_optimizer(params):
    """SGD as cnnbench's optimizer; fused where this PyTorch has it, else foreach."""
    import torch

    params = list(params)
    kwargs = dict(lr=0.01, momentum=0.9, weight_decay=1e-4)
    try:
        return torch.optim.SGD(params, fused=True, **kwargs), "SGD(fused=True)"
    except (TypeError, RuntimeError, ValueError):
        return torch.optim.SGD(params, foreach=True, **kwargs), "SGD(foreach=True)"


def set_math(precision):
    import torch

    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True


def run(args):
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
    device = torch.device("cuda")
    set_math(args.precision)
    image = args.image_size or DEFAULT_IMAGE_SIZE.get(args.model, 224)
    model = build_model(args.model, args.num_classes, image).to(device)
    layout = torch.channels_last if args.format == "NHWC" else torch.contiguous_format
    model = model.to(memory_format=layout)
    model.train()

    gen = torch.Generator(device=device)
    gen.manual_seed(args.seed)
    images = torch.randn(args.batch_size, 3, image, image, device=device, generator=gen)
    images = images.contiguous(memory_format=layout)
    labels = torch.randint(0, args.num_classes, (args.batch_size,), device=device, generator=gen)

    loss_fn = torch.nn.CrossEntropyLoss()
    optimizer, optimizer_kind = make_optimizer(model.parameters())
    autocast_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision)
    scaler = torch.amp.GradScaler("cuda") if args.precision == "fp16" else None
    compile_mode = COMPILE_MODES[args.mode]
    if args.mode == "eager":
        forward = model
    else:
        forward = torch.compile(model, mode=compile_mode)

    def autocast():
        if autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast("cuda", dtype=autocast_dtype)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            loss = loss_fn(forward(images), labels)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        return loss

    # The first step compiles (torch.compile) and autotunes (cudnn.benchmark):
    # timed on its own, never counted.
    t0 = time.perf_counter()
    loss = step()
    torch.cuda.synchronize()
    first_step_s = time.perf_counter() - t0
    for _ in range(max(0, args.num_warmup_batches - 1)):
        loss = step()
    torch.cuda.synchronize()

    starts = [torch.cuda.Event(enable_timing=True) for _ in range(args.num_batches)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(args.num_batches)]
    loop_start = time.perf_counter()
    for i in range(args.num_batches):
        starts[i].record()
        loss = step()
        ends[i].record()
    torch.cuda.synchronize()
    wall_s = time.perf_counter() - loop_start
    step_ms = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    final_loss = float(loss.detach().float().item())
    return {
        "images_per_sec": args.batch_size * args.num_batches / wall_s,
        "wall_s": wall_s,
        "optimizer": optimizer_kind,
        "compile_mode": compile_mode,
        "step_ms_median": step_ms[len(step_ms) // 2],
        "step_ms_min": step_ms[0],
        "first_step_s": first_step_s,
        "compile_s": first_step_s if args.mode != "eager" else None,
        "loss": final_loss if math.isfinite(final_loss) else str(final_loss),
        "image_size": image,
        "max_memory_gib": torch.cuda.max_memory_allocated() / 2**30,
    }


def versions():
    try:
        import torch
        import torchvision

        return {
            "torch": torch.__version__,
            "torchvision": torchvision.__version__,
            "cudnn": torch.backends.cudnn.version(),
            "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        }
    except Exception as e:  # noqa: BLE001 - report whatever went wrong
        return {"versions_error": repr(e)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet50")
    p.add_argument("--precision", choices=PRECISIONS, default="fp16")
    p.add_argument("--batch_size", type=int, default=256)
    p.add_argument("--num_batches", type=int, default=50)
    p.add_argument("--num_warmup_batches", type=int, default=10)
    p.add_argument("--image_size", type=int, default=0, help="default: the model's own (224, 299)")
    p.add_argument("--num_classes", type=int, default=1000)
    p.add_argument("--format", choices=("NHWC", "NCHW"), default="NHWC")
    p.add_argument("--mode", choices=tuple(COMPILE_MODES), default="eager")
    p.add_argument("--seed", type=int, default=1234)
    args = p.parse_args(argv)
    if args.batch_size < 1 or args.num_batches < 1 or args.num_warmup_batches < 1:
        p.error("--batch_size, --num_batches and --num_warmup_batches must be >= 1")

    record = {
        "model": args.model,
        "precision": args.precision,
        "batch": args.batch_size,
        "mode": args.mode,
        "format": args.format,
        "num_batches": args.num_batches,
        "num_warmup_batches": args.num_warmup_batches,
    }
    try:
        record.update(run(args))
        status = 0
    except Exception as e:  # noqa: BLE001 - one JSON line whatever failed
        record["error"] = f"{type(e).__name__}: {e}"
        status = 1
    record.update(versions())
    print(json.dumps(record), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
