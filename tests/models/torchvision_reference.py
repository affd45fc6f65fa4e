#!/usr/bin/env python3
"""Regenerates the torchvision reference data that tests/models checks the zoo against.

Needs torch and torchvision (CPU wheels are enough); CI does not run this, it only
reads the file it writes. Usage:
    python3 tests/models/torchvision_reference.py > tests/models/data/torchvision_parameters.txt
    python3 tests/models/torchvision_reference.py --facts   # counts, shapes, sizes for the tests

The parameter file lists every trainable tensor of each model as
"<model> <parameter name> <dim> ...", in torchvision's parameters() order.
"""
import sys

import torch
import torchvision.models as tvm

# (our name, torchvision builder, keyword arguments, default image side)
MODELS = [
    ("resnet50", tvm.resnet50, {}, 224),
    ("resnet101", tvm.resnet101, {}, 224),
    ("resnet152", tvm.resnet152, {}, 224),
    ("vgg16", tvm.vgg16, {}, 224),
    ("vgg19", tvm.vgg19, {}, 224),
    ("alexnet", tvm.alexnet, {}, 224),
    ("googlenet", tvm.googlenet, {"aux_logits": False, "init_weights": False}, 224),
    ("inception3", tvm.inception_v3, {"aux_logits": False, "init_weights": False}, 299),
    ("mobilenet_v2", tvm.mobilenet_v2, {}, 224),
]


def build(fn, kwargs):
    model = fn(weights=None, **kwargs)
    model.eval()
    return model


def forward_flops(model, side):
    """Multiply-adds x 2 of the Conv2d and Linear modules for one image."""
    total = [0]

    def hook(module, inputs, output):
        if isinstance(module, torch.nn.Conv2d):
            k, c_per_group, r, s = module.weight.shape
            total[0] += 2 * k * c_per_group * r * s * output.shape[2] * output.shape[3]
        elif isinstance(module, torch.nn.Linear):
            total[0] += 2 * module.in_features * module.out_features

    handles = [m.register_forward_hook(hook) for m in model.modules()
               if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    with torch.no_grad():
        model(torch.zeros(1, 3, side, side))
    for h in handles:
        h.remove()
    return total[0]


def valid_sizes(model, upto):
    ok = []
    for side in range(1, upto + 1):
        try:
            with torch.no_grad():
                model(torch.zeros(1, 3, side, side))
            ok.append(side)
        except RuntimeError:
            pass
    return ok


def main():
    print(f"# torch {torch.__version__}, torchvision {sys.modules['torchvision'].__version__}")
    if "--facts" not in sys.argv:
        for name, fn, kwargs, _ in MODELS:
            for pname, p in build(fn, kwargs).named_parameters():
                print(name, pname, *p.shape)
        return
    for name, fn, kwargs, side in MODELS:
        model = build(fn, kwargs)
        count = sum(p.numel() for p in model.parameters())
        with torch.no_grad():
            logits = model(torch.zeros(2, 3, side, side))
        sizes = valid_sizes(model, 96)
        print(f"{name}: params={count} tensors={len(list(model.parameters()))} "
              f"logits={tuple(logits.shape)} flops@{side}={forward_flops(model, side)} "
              f"flops@160={forward_flops(model, 160)} "
              f"smallest={sizes[0]} all_valid_from_smallest={sizes == list(range(sizes[0], 97))}")


if __name__ == "__main__":
    main()
