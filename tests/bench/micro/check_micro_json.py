#!/usr/bin/env python3
"""Runs cnnbench_micro and checks its Google Benchmark JSON.

Usage:
    check_micro_json.py [--json-file PATH] [--expect N] [--counter NAME=VALUE ...]
                        [--skip-error PREFIX] -- COMMAND...

Runs COMMAND (cnnbench_micro with --benchmark_format=json, or under mpirun
with --benchmark_out=PATH and --json-file PATH), then checks that:
  - it exited with status 0 and produced Google Benchmark JSON;
  - exactly N benchmarks were reported (--expect);
  - no benchmark reported an error, except errors starting with a
    --skip-error prefix (e.g. "no CUDA device": a GPU benchmark on a machine
    without one), which count as skipped;
  - every benchmark has a time and a rate (TFLOP/s, GB/s or algbw_GB/s), and
    every rate and time it reports is positive and finite;
  - each --counter NAME=VALUE holds on every benchmark (e.g. #wrong=0).
"""

import argparse
import json
import math
import subprocess
import sys

RATES = ("TFLOP/s", "GB/s", "algbw_GB/s", "busbw_GB/s")


def fail(message):
    print("check_micro_json: FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def positive_finite(value):
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json-file", help="read the JSON from this file instead of stdout")
    parser.add_argument("--expect", type=int, help="the exact number of benchmarks")
    parser.add_argument("--counter", action="append", default=[], help="NAME=VALUE on every benchmark")
    parser.add_argument("--skip-error", action="append", default=[],
                        help="an error message starting with this counts as a skip")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        fail("no command given")

    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=600, check=False)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        fail("%s exited with status %d\n%s" % (command[0], proc.returncode, proc.stdout))
    text = open(args.json_file, encoding="utf-8").read() if args.json_file else proc.stdout
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        fail("the output is not JSON (%s):\n%s" % (e, text[:2000]))
    benchmarks = data.get("benchmarks")
    if not isinstance(benchmarks, list) or not benchmarks:
        fail("no benchmarks in the JSON")
    if args.expect is not None and len(benchmarks) != args.expect:
        fail("expected %d benchmarks, got %d: %s"
             % (args.expect, len(benchmarks), [b.get("name") for b in benchmarks]))

    wanted = {}
    for item in args.counter:
        name, _, value = item.partition("=")
        wanted[name] = float(value)

    skipped = 0
    for b in benchmarks:
        name = b.get("name", "?")
        if b.get("error_occurred"):
            message = b.get("error_message", "")
            if any(message.startswith(prefix) for prefix in args.skip_error):
                print("skipped  %s: %s" % (name, message))
                skipped += 1
                continue
            fail("%s reported an error: %s" % (name, message))
        if not positive_finite(b.get("real_time")):
            fail("%s: time %r is not positive and finite" % (name, b.get("real_time")))
        rates = {k: b[k] for k in RATES if k in b}
        if not any(k in rates for k in ("TFLOP/s", "GB/s", "algbw_GB/s")):
            fail("%s reports no rate (one of %s)" % (name, ", ".join(RATES)))
        for key, value in rates.items():
            if not positive_finite(value):
                fail("%s: %s = %r is not positive and finite" % (name, key, value))
        for key, value in wanted.items():
            if b.get(key) != value:
                fail("%s: %s = %r, expected %r" % (name, key, b.get(key), value))
        print("ok  %-70s %s" % (name, ", ".join("%s=%.4g" % kv for kv in rates.items())))
    print("check_micro_json: %d benchmarks, %d skipped, all rates positive and finite"
          % (len(benchmarks), skipped))


if __name__ == "__main__":
    main()
