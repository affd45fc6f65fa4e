#!/usr/bin/env python3
"""The GPU suite's records and its closing table (tools/gpu_suite.sh). Plain
Python 3.9+, no third-party modules.

The suite runs each stage's commands with their output in a log, then calls
  suite_report.py record --results R --stage S --status-code RC --seconds N [...]
which reads that log and appends one JSON object to R (results.jsonl):
  - a cnnbench run (--runner cnnbench): `total images/sec` (the last such line),
    the `Memory:` header line (MiB per device), the `Set-up:` header line and
    the median step time;
  - a PyTorch peer run (--runner pytorch --mode M, tools/compare/pytorch_baseline.py):
    the same `total images/sec` line, and from its closing JSON line the peak
    memory PyTorch reserved, the compile or capture time and any error;
  - the tests stage (--stage tests): every test line of ctest's output (name,
    status, seconds);
  - any run that fails: the last line of its log that names an error.
  suite_report.py table --results R prints the table: one line per stage, then
one line per run grouped by model, precision and batch, with cnnbench/peer =
cnnbench's total images/sec over the peer's; then what was skipped for time.
  suite_report.py done --results R prints the run keys (runner mode model
precision batch) already measured, for a resumed suite to leave out.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from typing import Iterable, Optional

STAGES = ("build", "tests", "bench", "compare")
SKIPPED = "skipped (time)"
DRY_RUN = "dry run"

_TOTAL_RE = re.compile(r"^total images/sec:\s*([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)\s*$",
                       re.MULTILINE)
_MEMORY_RE = re.compile(r"^Memory:\s+([0-9.]+)\s+MiB per device", re.MULTILINE)
_SETUP_RE = re.compile(r"^Set-up:\s+(.*\S)\s*$", re.MULTILINE)
_BACKEND_RE = re.compile(r"^Backend:\s+(.*\S)\s*$", re.MULTILINE)
_P50_RE = re.compile(r"^step time p50/p90/p99:\s+([0-9.]+)\s*/", re.MULTILINE)
_FLOPS_RE = re.compile(r"^FLOPs:\s+([0-9.]+)\s+GFLOPs/image", re.MULTILINE)
_VERIFY_RE = re.compile(r"^Verify:\s+(.*\S)\s*$", re.MULTILINE)
_NOTE_RE = re.compile(r"^Note:\s+(.*\S)\s*$", re.MULTILINE)
_ERROR_RE = re.compile(r"error|failed|fatal|exception|what\(\)|out of memory|cannot|not found|"
                       r"no such file|killed|aborted",
                       re.IGNORECASE)
_CTEST_RE = re.compile(r"^\s*\d+/\d+\s+Test\s+#\d+:\s+(?P<name>\S+)\s+\.*\s*(?:\*\*\*)?"
                       r"(?P<status>\S.*?)\s+(?P<seconds>[0-9.]+)\s+sec\s*$", re.MULTILINE)


def status_text(code: int) -> str:
    """The status of a command from its exit status as gpu_suite.sh passes it:
    0 ok, 124 or 137 (timeout's) timeout, 125 skipped for time, else failed."""
    if code == 0:
        return "ok"
    if code in (124, 137):
        return "timeout"
    if code == 125:
        return SKIPPED
    return f"failed (exit {code})"


def parse_total(text: str) -> Optional[float]:
    """The last `total images/sec: N` line's N (cnnbench and the peer print it alike)."""
    found = _TOTAL_RE.findall(text)
    return float(found[-1]) if found else None


def error_line(text: str, limit: int = 160) -> Optional[str]:
    """The line of a log that best names why it failed: the first CMake error
    (with its message line), `No tests were found`, the first failed build edge
    or compiler error; else the last line that names an error. The suite's own
    === lines and CMake's -- status lines never count."""
    lines = [line.strip() for line in text.splitlines()]
    for i, line in enumerate(lines):
        if line.startswith("CMake Error"):
            following = next((l for l in lines[i + 1:] if l), "")
            return f"{line} {following}".strip()[:limit]
    for pattern in (r"No tests were found", r"^FAILED: ", r"\berror:"):
        for line in lines:
            if re.search(pattern, line, re.IGNORECASE if pattern.startswith("No") else 0):
                return line[:limit]
    for line in reversed(lines):
        if line and not line.startswith(("===", "-- ", "{")) and _ERROR_RE.search(line):
            return line[:limit]
    return None


def last_json_object(text: str) -> Optional[dict]:
    """The last line of text that is a JSON object."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    return None


def _match_float(regex: re.Pattern, text: str) -> Optional[float]:
    found = regex.findall(text)
    return float(found[-1]) if found else None


def _match_text(regex: re.Pattern, text: str) -> Optional[str]:
    found = regex.findall(text)
    return found[0] if found else None


def parse_cnnbench(text: str, result: Optional[dict] = None) -> dict:
    """Figures of one cnnbench run from its text output (bench/report/text_report.cpp)
    and, where given, its --result_json document (bench/schema/result.schema.json),
    which wins where both have a figure: images_per_sec, memory_gib (cnnbench's
    device allocations), gflops_per_image (forward), setup (the Set-up line),
    start_s (program start to the first timed step), step_ms_p50, backend,
    verify (a few words from --verify), notes (the header's Note lines).
    Absent figures are left out."""
    fields = {
        "images_per_sec": parse_total(text),
        "memory_gib": None,
        "gflops_per_image": _match_float(_FLOPS_RE, text),
        "setup": _match_text(_SETUP_RE, text),
        "backend": _match_text(_BACKEND_RE, text),
        "step_ms_p50": _match_float(_P50_RE, text),
    }
    memory_mib = _match_float(_MEMORY_RE, text)
    if memory_mib is not None:
        fields["memory_gib"] = memory_mib / 1024.0
    verify_lines = _VERIFY_RE.findall(text)
    notes = _NOTE_RE.findall(text)
    if isinstance(result, dict):
        run, summary = result.get("run") or {}, result.get("summary") or {}
        for key, value in (("images_per_sec", summary.get("total_images_per_sec")),
                           ("start_s", summary.get("setup_time_s")),
                           ("gflops_per_image", run.get("gflops_per_image"))):
            if _number(value):
                fields[key] = float(value)
        if _number(run.get("device_memory_bytes")):
            fields["memory_gib"] = run["device_memory_bytes"] / 2**30
        step = summary.get("step_time_ms") or {}
        if _number(step.get("p50")):
            fields["step_ms_p50"] = float(step["p50"])
        verify = result.get("verify") or {}
        if isinstance(verify.get("passed"), bool) and verify.get("lines"):
            fields["verify"] = "verify passed" if verify["passed"] else "verify FAILED"
        setup = result.get("setup") or {}
        if isinstance(setup.get("notes"), list) and setup["notes"]:
            notes = [str(n) for n in setup["notes"]]
    if "verify" not in fields and verify_lines:
        fields["verify"] = "; ".join(l.split("): ", 1)[-1] for l in verify_lines)
    if notes:
        fields["notes"] = notes
    return {k: v for k, v in fields.items() if v is not None}


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value) and value > 0


def parse_peer(text: str) -> dict:
    """Figures of one PyTorch peer run (tools/compare/pytorch_baseline.py):
    images_per_sec from its total line (else its JSON), memory_gib (PyTorch's
    peak reserved), compile_s, capture_s, start_s (process start to the first
    timed step), step_ms_p50, sgd and error."""
    detail = last_json_object(text) or {}
    fields = {"images_per_sec": parse_total(text)}
    if fields["images_per_sec"] is None and isinstance(detail.get("images_per_sec"), (int, float)):
        fields["images_per_sec"] = float(detail["images_per_sec"])
    for key, source in (("memory_gib", "peak_reserved_gib"), ("compile_s", "compile_s"),
                        ("capture_s", "capture_s"), ("start_s", "start_to_timed_s")):
        if isinstance(detail.get(source), (int, float)):
            fields[key] = float(detail[source])
    step_ms = detail.get("step_ms")
    if isinstance(step_ms, dict) and isinstance(step_ms.get("p50"), (int, float)):
        fields["step_ms_p50"] = float(step_ms["p50"])
    for key in ("sgd", "error", "torch"):
        if isinstance(detail.get(key), str):
            fields[key] = detail[key]
    return {k: v for k, v in fields.items() if v is not None}


def normalise_ctest_status(status: str) -> str:
    """ctest's per-test status words, lower case: passed, failed, skipped,
    timeout, not run, or crashed (SegFault) for an Exception."""
    s = status.strip()
    if s.startswith("Exception"):
        return "crashed (" + s.split(":", 1)[-1].strip() + ")"
    return s.lower()


def parse_ctest(text: str) -> dict:
    """ctest's test lines: {"tests": [{"name", "status", "seconds"}], "counts": {status: n}}.
    A test run twice (a rerun) counts once, with its last status."""
    tests: dict[str, dict] = {}
    for m in _CTEST_RE.finditer(text):
        tests[m.group("name")] = {"name": m.group("name"),
                                  "status": normalise_ctest_status(m.group("status")),
                                  "seconds": float(m.group("seconds"))}
    counts: dict[str, int] = {}
    for t in tests.values():
        counts[t["status"]] = counts.get(t["status"], 0) + 1
    return {"tests": list(tests.values()), "counts": counts}


def make_record(args: argparse.Namespace, log_text: str) -> dict:
    """One results.jsonl object from the record command's arguments and its log."""
    status = args.status or status_text(args.status_code)
    record = {"stage": args.stage, "status": status, "seconds": args.seconds}
    for key in ("runner", "mode", "model", "precision", "batch", "note"):
        value = getattr(args, key)
        if value is not None:
            record[key] = value
    if args.earlier:
        record["earlier"] = True
    if args.runner == "cnnbench":
        record.update(parse_cnnbench(log_text, read_json(getattr(args, "result_json", None))))
    elif args.runner == "pytorch":
        record.update(parse_peer(log_text))
    elif args.stage == "tests":
        record.update(parse_ctest(log_text))
    if status == "ok" and args.runner and record.get("images_per_sec") is None:
        record["status"] = "no total"  # ran, but printed no `total images/sec`
    # A timeout says enough; a failed test stage lists its tests instead.
    if record["status"] not in ("ok", SKIPPED, DRY_RUN, "timeout") and "error" not in record \
            and not record.get("counts"):
        error = error_line(log_text)
        if error:
            record["error"] = error
    return record


def read_json(path: Optional[str]) -> Optional[dict]:
    """The JSON object in the file at path; None when there is none or it is not one."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def read_records(path: str) -> list[dict]:
    """The JSON objects of a results file; lines that are not one are ignored."""
    records = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    value = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(value, dict) and value.get("stage") in STAGES:
                    records.append(value)
    except FileNotFoundError:
        pass
    return records


def run_key(r: dict) -> str:
    """runner mode model precision batch: one measurement's identity."""
    return " ".join(str(r.get(k) or "-") for k in ("runner", "mode", "model", "precision", "batch"))


def done_keys(records: Iterable[dict]) -> list[str]:
    """Keys of the runs that need not run again: every run not skipped for time
    and not a dry run (a timeout or a failure would repeat)."""
    keys = []
    for r in records:
        if r.get("runner") and r.get("status") not in (SKIPPED, DRY_RUN):
            key = run_key(r)
            if key not in keys:
                keys.append(key)
    return keys


def is_fine(r: dict) -> bool:
    """A record that is no failure: ok, skipped for time, or a dry run."""
    return r.get("status") in ("ok", SKIPPED, DRY_RUN)


def outcome(r: dict) -> str:
    """A few words on one record, for the suite's progress line."""
    text = r.get("status", "?")
    if r.get("images_per_sec") is not None and r.get("status") == "ok":
        text = f"{r['images_per_sec']:.1f} images/sec"
        if r.get("compile_s") is not None:
            text += f" (compile {r['compile_s']:.0f} s)"
    elif r.get("counts"):
        text += ": " + ", ".join(f"{n} {s}" for s, n in r["counts"].items())
    if r.get("error") and r.get("status") != "ok":
        text += f": {r['error']}"
    return text


def runner_label(r: dict) -> str:
    """cnnbench, or pytorch MODE (with the SGD implementation when not fused)."""
    if r.get("runner") == "pytorch":
        label = f"pytorch {r.get('mode') or '?'}"
        if r.get("sgd") and r["sgd"] != "fused":
            label += f" (SGD {r['sgd']})"
        return label
    return str(r.get("runner"))


def _fmt(value: Optional[float], spec: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return format(value, spec)


def _short_status(status: str) -> str:
    return status.split(":")[0]


def stage_summary(stage: str, records: list[dict]) -> Optional[str]:
    """One line for a stage: its status, time and what it did; None when it did not run."""
    own = [r for r in records if r.get("stage") == stage and not r.get("runner")]
    runs = [r for r in records if r.get("stage") == stage and r.get("runner")]
    if not own and not runs:
        return None
    earlier = all(r.get("earlier") for r in own + runs)
    label = stage + (" (earlier call)" if earlier else "")
    if own:
        r = own[-1]
        what = []
        if r.get("counts"):
            counts = r["counts"]
            total = sum(counts.values())
            parts = [f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: kv[0] != "passed")]
            what.append(", ".join(parts) + f" of {total}")
            bad = [t["name"] + f" ({t['status']})" for t in r.get("tests", [])
                   if t["status"] not in ("passed", "skipped")]
            if bad:
                what.append("not passed: " + ", ".join(bad))
        if r.get("note"):
            what.append(r["note"])
        if r.get("error") and r["status"] != "ok":
            what.append(r["error"])
        return f"{label:<22}{_short_status(r['status']):<16}{_fmt(r.get('seconds'), '.0f'):>5} s  " \
               + "; ".join(what)
    measured = [r for r in runs if r["status"] not in (SKIPPED, DRY_RUN)]
    skipped = [r for r in runs if r["status"] == SKIPPED]
    dry = [r for r in runs if r["status"] == DRY_RUN]
    bad = [r for r in measured if r["status"] != "ok"]
    status = "failed" if bad else DRY_RUN if dry and not measured else "ok"
    seconds = sum(r.get("seconds") or 0 for r in runs)
    what = f"{len(measured)} run, {len(bad)} not ok, {len(skipped)} skipped for time"
    if dry:
        what += f", {len(dry)} planned (dry run)"
    return f"{label:<22}{status:<16}{seconds:>5.0f} s  {what}"


def tflops(r: dict, gflops_per_image: Optional[float]) -> Optional[float]:
    """Achieved TFLOP/s of a training run: images/sec x 3 x the forward GFLOPs
    per image (forward, dgrad and wgrad each cost about one forward pass)."""
    if r.get("status") != "ok" or not r.get("images_per_sec") or not gflops_per_image:
        return None
    return r["images_per_sec"] * 3 * gflops_per_image / 1000.0


def render_table(records: list[dict]) -> str:
    """The closing table (module doc). Deterministic for given records."""
    lines = []
    for stage in STAGES:
        line = stage_summary(stage, records)
        if line:
            lines.append(line)
    runs = [r for r in records if r.get("runner")]
    if not runs:
        return "\n".join(lines)
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        groups.setdefault((r.get("model"), r.get("precision"), r.get("batch")), []).append(r)
    head = (f"{'model':<14}{'precision':<10}{'batch':>6}  {'runner':<36}{'images/sec':>11}"
            f"{'cnnbench/peer':>15}{'TFLOP/s':>9}{'memory GiB':>12}{'start s':>9}  notes")
    lines += ["", head, "-" * len(head)]
    headlines, header_notes = [], []
    for (model, precision, batch), group in groups.items():
        # cnnbench first, then the peers in the order they ran.
        group = sorted(group, key=lambda r: r.get("runner") != "cnnbench")
        ours = next((r for r in group if r.get("runner") == "cnnbench"
                     and r.get("status") == "ok" and r.get("images_per_sec")), None)
        gflops = next((r["gflops_per_image"] for r in group if r.get("gflops_per_image")), None)
        first = True
        for r in group:
            ips = r.get("images_per_sec") if r.get("status") == "ok" else None
            ratio = None
            if ours and r.get("runner") == "pytorch" and ips:
                ratio = ours["images_per_sec"] / ips
            notes = []
            if r.get("status") != "ok":
                notes.append(r["status"] + (f": {r['error']}" if r.get("error") else ""))
            if r.get("verify"):
                notes.append(r["verify"])
            if r.get("compile_s") is not None:
                notes.append(f"compile {r['compile_s']:.0f} s")
            if r.get("capture_s") is not None:
                notes.append(f"capture {r['capture_s']:.1f} s")
            if r.get("runner") == "cnnbench" and r.get("setup"):
                notes.append(f"set-up: {r['setup']}")
            if r.get("earlier"):
                notes.append("earlier call")
            for note in r.get("notes") or []:
                if note not in header_notes:
                    header_notes.append(note)
            key = (f"{model or '-':<14}{precision or '-':<10}{batch or '-':>6}" if first
                   else " " * 30)
            first = False
            lines.append(f"{key}  {runner_label(r):<36}{_fmt(ips, '.1f'):>11}"
                         f"{_fmt(ratio, '.2f'):>15}{_fmt(tflops(r, gflops), '.0f'):>9}"
                         f"{_fmt(r.get('memory_gib'), '.1f'):>12}{_fmt(r.get('start_s'), '.0f'):>9}  "
                         + "; ".join(notes))
        peers = [r for r in group if r.get("runner") == "pytorch" and r.get("status") == "ok"
                 and r.get("images_per_sec")]
        if ours and peers:
            best = max(peers, key=lambda r: r["images_per_sec"])
            headlines.append(
                f"{model} {precision} batch {batch}: cnnbench {ours['images_per_sec']:.1f} "
                f"images/sec = {ours['images_per_sec'] / best['images_per_sec']:.2f} x the best "
                f"peer ({runner_label(best)}, {best['images_per_sec']:.1f})")
    lines.append("")
    lines.append("cnnbench/peer: cnnbench's total images/sec over the peer's (above 1: cnnbench "
                 "is faster); TFLOP/s: images/sec x 3 x forward GFLOPs/image; memory: cnnbench's "
                 "device allocations, PyTorch's peak reserved; start s: process start to the "
                 "first timed step (set-up, compilation, warm-up)")
    lines += headlines
    lines += [f"cnnbench note: {n}" for n in header_notes]
    skipped = [r for r in runs if r.get("status") == SKIPPED]
    if skipped:
        lines.append("skipped for time: " + "; ".join(
            f"{runner_label(r)} {r.get('model')} {r.get('precision')} {r.get('batch')}"
            for r in skipped))
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="suite_report.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="append one record, parsed from a log")
    rec.add_argument("--results", required=True)
    rec.add_argument("--stage", required=True, choices=STAGES)
    rec.add_argument("--status-code", type=int, default=0, help="exit status (see status_text)")
    rec.add_argument("--status", help="a status text instead of one from --status-code")
    rec.add_argument("--seconds", type=float, default=0.0)
    rec.add_argument("--runner", choices=("cnnbench", "pytorch"))
    rec.add_argument("--mode")
    rec.add_argument("--model")
    rec.add_argument("--precision")
    rec.add_argument("--batch", type=int)
    rec.add_argument("--note")
    rec.add_argument("--log", help="the run's output")
    rec.add_argument("--result-json", dest="result_json", help="cnnbench's --result_json file")
    rec.add_argument("--earlier", action="store_true", help=argparse.SUPPRESS)
    tab = sub.add_parser("table", help="print the closing table")
    tab.add_argument("--results", required=True)
    done = sub.add_parser("done", help="print the keys of the runs already measured")
    done.add_argument("--results", required=True)
    imp = sub.add_parser("import", help="append an earlier call's records, marked as earlier")
    imp.add_argument("--results", required=True)
    imp.add_argument("--from", dest="source", required=True)
    verdict = sub.add_parser("verdict", help="exit 1 when a record of this call is not ok")
    verdict.add_argument("--results", required=True)
    args = p.parse_args(argv)

    if args.command == "record":
        text = ""
        if args.log:
            try:
                with open(args.log, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except FileNotFoundError:
                text = ""
        record = make_record(args, text)
        with open(args.results, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        print(outcome(record))
        return 0
    if args.command == "import":
        earlier = [dict(r, earlier=True) for r in read_records(args.source)
                   if r.get("status") not in (SKIPPED, DRY_RUN)]
        with open(args.results, "a", encoding="utf-8") as f:
            for r in earlier:
                f.write(json.dumps(r) + "\n")
        print(f"{len(earlier)} records of an earlier call")
        return 0
    records = read_records(args.results)
    if args.command == "table":
        print(render_table(records))
    elif args.command == "verdict":
        bad = [r for r in records if not r.get("earlier") and not is_fine(r)]
        return 1 if bad else 0
    else:
        for key in done_keys(records):
            print(key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
