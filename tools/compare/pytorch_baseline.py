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
    weight_decay 1e-4), cnnbench's defaults;
  - precision: fp16 = torch.autocast(float16) with torch.amp.GradScaler;
    bf16 = torch.autocast(bfloat16); tf32 = fp32 tensors with
    torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32;
    fp32 = both TF32 switches off;
  - torch.backends.cudnn.benchmark = True (PyTorch's own autotuning, as
    cnnbench autotunes its cuDNN plans);
  - mode eager, or compile = torch.compile(model) (default mode): the
    compilation happens in the first step, which is timed on its own and
    reported as compile_s, never counted in images/sec.

Timing: warm-up steps untimed; then each timed step between two CUDA events;
images_per_sec = batch * timed steps / (time from the first step's start
event to the last step's end event), as cnnbench's "total images/sec"; the
median step time is reported too.

Output: one JSON object per line on stdout (flushed), e.g.
  {"model": "resnet50", "precision": "fp16", "batch": 256, "mode": "eager",
   "images_per_sec": 2875.4, "step_ms_median": 89.1, ...}
On failure (out of memory, an unknown model), a line with "error" and exit
status 1. Needs only Python 3, torch and torchvision.

Usage:
  python3 bench/compare/pytorch_baseline.py --model resnet50 --precision fp16 \
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
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    autocast_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision)
    scaler = torch.amp.GradScaler("cuda") if args.precision == "fp16" else None
    forward = torch.compile(model) if args.mode == "compile" else model

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
    for i in range(args.num_batches):
        starts[i].record()
        loss = step()
        ends[i].record()
    torch.cuda.synchronize()
    step_ms = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    total_ms = starts[0].elapsed_time(ends[-1])
    final_loss = float(loss.detach().float().item())
    return {
        "images_per_sec": args.batch_size * args.num_batches / (total_ms / 1000.0),
        "step_ms_median": step_ms[len(step_ms) // 2],
        "step_ms_min": step_ms[0],
        "first_step_s": first_step_s,
        "compile_s": first_step_s if args.mode == "compile" else None,
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
    p.add_argument("--mode", choices=("eager", "compile"), default="eager")
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
