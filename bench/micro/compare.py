#!/usr/bin/env python3
"""Put two cnnbench_micro results side by side.

Reads two JSON files written by Google Benchmark (cnnbench_micro
--benchmark_out=FILE --benchmark_out_format=json, or --benchmark_format=json on
stdout) and prints, for every benchmark of the first file:

    name | time before | time after | change % | rate before | rate after | unit

change % = (after - before) / before * 100 on the time: negative is faster.
The rate is the benchmark's own counter: TFLOP/s for convolutions, GB/s for
kernels, busbw (algbw for one rank) in GB/s for all-reduces. Benchmarks run
with repetitions are compared by their median (or mean) aggregate; otherwise
repeated entries are averaged. A benchmark that reported an error shows
"error" instead of a time, and its message is listed below the table. The last line is the geometric mean of the time ratios.

Plain Python 3 standard library.

Examples:
    python3 bench/micro/compare.py slow.json good.json
    python3 bench/micro/compare.py slow.json good.json --sort=change --filter='conv/cuda/.*fp16'
    python3 bench/micro/compare.py before.json after.json --markdown
"""

import argparse
import json
import math
import re
import sys

# Seconds per unit of Google Benchmark's "time_unit".
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}

# The rate counter of each kind of benchmark, first match wins.
_RATE_COUNTERS = ("TFLOP/s", "GB/s", "busbw_GB/s", "algbw_GB/s")


def clean_name(name):
    """The benchmark's name without the suffixes Google Benchmark appends."""
    name = re.sub(r"/iterations:\d+", "", name)
    name = re.sub(r"/(manual_time|real_time)$", "", name)
    return name


def pick_rate(entry):
    """(value, counter name) of the benchmark's rate, or (None, "")."""
    for counter in _RATE_COUNTERS:
        value = entry.get(counter)
        if not isinstance(value, (int, float)):
            continue
        if counter == "busbw_GB/s" and value == 0 and "algbw_GB/s" in entry:
            continue  # one rank: busbw is 0 by definition
        return float(value), counter
    return None, ""


class Result:
    """One benchmark of one file: time in seconds, rate, or an error."""

    def __init__(self, name):
        self.name = name
        self.seconds = None
        self.unit = "us"
        self.rate = None
        self.rate_name = ""
        self.error = None


def load(path):
    """Benchmark name -> Result, in the file's order."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise SystemExit("compare.py: cannot read %s: %s" % (path, e))
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise SystemExit("compare.py: %s is not Google Benchmark JSON (no 'benchmarks' list)" % path)

    iterations = {}  # name -> [entries]
    aggregates = {}  # name -> {aggregate_name: entry}
    order = []
    for entry in data["benchmarks"]:
        name = clean_name(entry.get("run_name") or entry.get("name", ""))
        if name not in iterations and name not in aggregates:
            order.append(name)
        if entry.get("run_type") == "aggregate":
            aggregates.setdefault(name, {})[entry.get("aggregate_name", "")] = entry
        else:
            iterations.setdefault(name, []).append(entry)

    results = {}
    for name in order:
        result = Result(name)
        chosen = aggregates.get(name, {})
        entries = [chosen[k] for k in ("median", "mean") if k in chosen][:1] or iterations.get(name, [])
        errors = [e.get("error_message", "error") for e in entries if e.get("error_occurred")]
        good = [e for e in entries if not e.get("error_occurred")]
        if entries:
            result.unit = entries[0].get("time_unit", "ns")
        if not good:
            result.error = errors[0] if errors else "no result"
        else:
            result.seconds = sum(
                float(e["real_time"]) * _UNIT_SECONDS.get(e.get("time_unit", "ns"), 1e-9)
                for e in good) / len(good)
            rates = [pick_rate(e) for e in good]
            if all(r[0] is not None for r in rates):
                result.rate = sum(r[0] for r in rates) / len(rates)
                result.rate_name = rates[0][1]
        results[name] = result
    return results


def format_time(seconds, unit):
    if seconds is None:
        return "-"
    value = seconds / _UNIT_SECONDS.get(unit, 1e-9)
    return "%.4g %s" % (value, unit)


def format_rate(rate):
    return "-" if rate is None else "%.4g" % rate


def compare(before, after, pattern=None, sort="name"):
    """Rows (name, time before, time after, change %, rate before, rate after,
    unit, ratio) for the benchmarks of `before` (and those only in `after`)."""
    names = list(before) + [n for n in after if n not in before]
    if pattern:
        regex = re.compile(pattern)
        names = [n for n in names if regex.search(n)]
    rows = []
    for name in names:
        b = before.get(name)
        a = after.get(name)
        unit = (b or a).unit
        ratio = None
        if b is None or a is None:
            change = "only in " + ("after" if b is None else "before")
        elif b.error or a.error:
            change = "error"
        else:
            ratio = a.seconds / b.seconds if b.seconds > 0 else None
            change = "%+.1f%%" % ((ratio - 1.0) * 100.0) if ratio is not None else "-"

        def time_of(r):
            if r is None:
                return "-"
            if r.error:
                return "error"
            return format_time(r.seconds, unit)

        rows.append((name, time_of(b), time_of(a), change,
                     format_rate(b.rate if b and not b.error else None),
                     format_rate(a.rate if a and not a.error else None),
                     (b or a).rate_name or (a.rate_name if a else ""), ratio))
    if sort == "change":
        rows.sort(key=lambda r: -abs(r[7] - 1.0) if r[7] is not None else 1.0)
    return rows


def error_notes(before, after, names):
    """One line per distinct error message of each file, with how many
    benchmarks reported it and the first of them."""
    lines = []
    for label, results in (("before", before), ("after", after)):
        seen = {}
        for name in names:
            r = results.get(name)
            if r is not None and r.error:
                seen.setdefault(r.error, []).append(name)
        for message, where in seen.items():
            lines.append("%s: error in %d benchmark(s), e.g. %s: %s"
                         % (label, len(where), where[0], message))
    return lines


def geometric_mean(ratios):
    ratios = [r for r in ratios if r is not None and r > 0]
    if not ratios:
        return None
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios))


HEADER = ("name", "time before", "time after", "change", "rate before", "rate after", "unit")


def render_text(rows):
    table = [HEADER] + [r[:7] for r in rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(HEADER))]
    lines = []
    for k, row in enumerate(table):
        cells = [str(c).ljust(widths[i]) if i in (0, 6) else str(c).rjust(widths[i])
                 for i, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_markdown(rows):
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for r in rows:
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r[:7]) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Compare two cnnbench_micro (Google Benchmark) JSON results.")
    parser.add_argument("before", help="JSON of the first run (e.g. the slow machine)")
    parser.add_argument("after", help="JSON of the second run (e.g. the good machine)")
    parser.add_argument("--filter", help="only benchmarks whose name matches this regular expression")
    parser.add_argument("--sort", choices=("name", "change"), default="name",
                        help="order: as in the first file (name), or largest change first")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)

    before = load(args.before)
    after = load(args.after)
    rows = compare(before, after, args.filter, args.sort)
    if not rows:
        print("compare.py: no benchmark to compare", file=sys.stderr)
        return 1
    print(render_markdown(rows) if args.markdown else render_text(rows))
    notes = error_notes(before, after, [r[0] for r in rows])
    if notes:
        print("\n" + "\n".join(notes))
    mean = geometric_mean([r[7] for r in rows])
    compared = sum(1 for r in rows if r[7] is not None)
    if mean is not None:
        print("\ngeometric mean of time after/before over %d benchmarks: %.3f (%+.1f%%)"
              % (compared, mean, (mean - 1.0) * 100.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
