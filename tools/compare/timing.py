"""Step timing and statistics exactly as cnnbench's trainer does them, for the
PyTorch peer (tools/compare/pytorch_baseline.py). Plain Python: nothing here
imports torch, so it is tested on any machine.

The timed loop (bench/trainer.cpp, kernels/cuda/step_events.h):
  - the device is idle when the loop's host clock starts;
  - each step is bracketed by two device events recorded on the stream, and a
    step's events are read one step late (the host blocks on step i-1's end
    event after enqueueing step i), so at most two steps are in flight;
  - on a displayed step (the first and every display_every-th) every pending
    event pair is read and the loss is read (a device wait), as cnnbench does;
  - after the last step the remaining events are read, the device is
    synchronised and the host clock stops: total images/sec = images / wall
    time of the loop.
Statistics follow bench/report/stats.cpp: a step line's images/sec is batch / mean
step time; +/- is the population standard deviation of the per-step speeds
over the square root of their count; jitter is 1.4826 x their median absolute
deviation (tf_cnn_benchmarks' formulas); percentiles interpolate linearly.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol

DASHES = "-" * 64

# cudaEventElapsedTime resolves about 0.5 us: a step read as 0 ms is stored as
# 1 ns so that a rate can always be derived from it (as kernels/cuda/step_events.cpp).
MIN_STEP_MS = 1e-6


class Event(Protocol):
    """What the loop needs of a device event (torch.cuda.Event(enable_timing=True) has it)."""

    def record(self) -> None: ...

    def synchronize(self) -> None: ...

    def elapsed_time(self, end: "Event") -> float: ...


class NonFiniteLossError(RuntimeError):
    """The loss read at a displayed step is NaN or infinite (cnnbench stops the same way)."""


@dataclass
class Throughput:
    """images/sec of a series of steps with its spread; all in images/sec."""

    images_per_sec: float
    uncertainty: float
    jitter: float


@dataclass
class Percentiles:
    """Step time figures in ms."""

    p50: float
    p90: float
    p99: float
    mean: float
    min: float
    max: float


@dataclass
class LoopResult:
    """What the timed loop measured."""

    batch: int
    step_times_ms: list[float]
    wall_time_s: float
    final_loss: float
    # (step, throughput so far, loss) of each displayed step.
    displayed: list[tuple[int, Throughput, float]] = field(default_factory=list)

    @property
    def steps(self) -> int:
        return len(self.step_times_ms)

    @property
    def images(self) -> int:
        return self.steps * self.batch

    @property
    def total_images_per_sec(self) -> float:
        """Images of the timed loop over its wall time: cnnbench's `total images/sec`."""
        return self.images / self.wall_time_s if self.wall_time_s > 0 else 0.0


def _check_step_time(ms: float) -> None:
    if not (ms > 0 and math.isfinite(ms)):
        raise ValueError(f"step time must be a positive finite number of ms, got {ms}")


def throughput(batch: float, step_times_ms: list[float]) -> Throughput:
    """bench/report/stats.cpp's throughput(): batch / mean step time, with +/- and jitter.
    Raises ValueError on an empty series or a step time that is not positive."""
    if not step_times_ms:
        raise ValueError("throughput of an empty series")
    for ms in step_times_ms:
        _check_step_time(ms)
    speeds = [batch / (ms / 1000.0) for ms in step_times_ms]
    n = len(speeds)
    images_per_sec = batch / (statistics.fmean(step_times_ms) / 1000.0)
    uncertainty = statistics.pstdev(speeds) / math.sqrt(n)
    med = statistics.median(speeds)
    jitter = 1.4826 * statistics.median([abs(s - med) for s in speeds])
    return Throughput(images_per_sec, uncertainty, jitter)


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default, bench/report/stats.cpp's)."""
    if not values:
        raise ValueError("percentile of an empty series")
    if not 0 <= p <= 100:
        raise ValueError(f"percentile must be in [0, 100], got {p}")
    s = sorted(values)
    h = (len(s) - 1) * p / 100.0
    lo = math.floor(h)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (h - lo) * (s[hi] - s[lo])


def summarize(step_times_ms: list[float]) -> Percentiles:
    """p50/p90/p99, mean, min and max of the step times (ms)."""
    if not step_times_ms:
        raise ValueError("summary of an empty series")
    return Percentiles(
        p50=percentile(step_times_ms, 50),
        p90=percentile(step_times_ms, 90),
        p99=percentile(step_times_ms, 99),
        mean=statistics.fmean(step_times_ms),
        min=min(step_times_ms),
        max=max(step_times_ms),
    )


def _finite_loss(loss: float, where: str) -> float:
    if not math.isfinite(loss):
        kind = "NaN" if math.isnan(loss) else "infinite"
        raise NonFiniteLossError(f"the loss is {kind} at {where}: training diverged")
    return loss


def timed_loop(step: Callable[[], None], *, batch: int, num_batches: int, display_every: int,
               new_event: Callable[[], Event], read_loss: Callable[[], float],
               synchronize: Callable[[], None], clock: Callable[[], float] = time.perf_counter,
               on_display: Optional[Callable[[int, Throughput, float], None]] = None,
               ring: int = 4) -> LoopResult:
    """Runs num_batches timed steps the way cnnbench's trainer does (module doc).

    step enqueues one training step on the device; read_loss returns the latest
    step's loss as a float (a device wait); synchronize waits for the device.
    on_display(step, throughput so far, loss) is called at displayed steps.
    Raises ValueError on bad counts and NonFiniteLossError when a displayed loss
    is not finite."""
    if batch < 1 or num_batches < 1 or display_every < 1:
        raise ValueError(f"batch ({batch}), num_batches ({num_batches}) and display_every "
                         f"({display_every}) must be >= 1")
    if ring < 2:
        raise ValueError("the event ring must hold 2 steps to read one step late")
    pairs = [(new_event(), new_event()) for _ in range(ring)]
    pending: list[tuple[Event, Event]] = []
    times: list[float] = []
    displayed: list[tuple[int, Throughput, float]] = []

    def take(in_flight: int) -> None:
        while len(pending) > in_flight:
            start, end = pending.pop(0)
            end.synchronize()
            times.append(max(start.elapsed_time(end), MIN_STEP_MS))

    synchronize()
    loop_start = clock()
    final_loss = math.nan
    for i in range(1, num_batches + 1):
        start, end = pairs[i % ring]
        start.record()
        step()
        end.record()
        pending.append((start, end))
        display = i == 1 or i % display_every == 0
        take(0 if display else 1)
        if display:
            loss = _finite_loss(read_loss(), f"timed step {i}")
            tp = throughput(batch, times)
            displayed.append((i, tp, loss))
            final_loss = loss
            if on_display is not None:
                on_display(i, tp, loss)
        else:
            final_loss = math.nan
    take(0)
    synchronize()
    wall = clock() - loop_start
    if math.isnan(final_loss):
        # After the loop, outside the timed wall time, as cnnbench reads it.
        final_loss = _finite_loss(read_loss(), f"timed step {num_batches}")
    return LoopResult(batch=batch, step_times_ms=times, wall_time_s=wall, final_loss=final_loss,
                      displayed=displayed)


def step_line(step: int, tp: Throughput, loss: float) -> str:
    """A step line in cnnbench's (tf_cnn_benchmarks') format."""
    return (f"{step}\timages/sec: {tp.images_per_sec:.1f} +/- {tp.uncertainty:.1f} "
            f"(jitter = {tp.jitter:.1f})\t{loss:.3f}")


def summary_lines(result: LoopResult) -> list[str]:
    """The lines after the step lines, in cnnbench's format (bench/report/text_report.cpp)."""
    lines = [DASHES, f"total images/sec: {result.total_images_per_sec:.2f}", DASHES,
             f"timed steps: {result.steps} ({result.images} images in "
             f"{result.wall_time_s:.3f} s of wall time)"]
    if result.steps:
        p = summarize(result.step_times_ms)
        lines.append(f"step time p50/p90/p99: {p.p50:.2f} / {p.p90:.2f} / {p.p99:.2f} ms")
        lines.append(f"step time mean/min/max: {p.mean:.2f} / {p.min:.2f} / {p.max:.2f} ms")
    return lines


class HostEvent:
    """A host-clock stand-in for a device event, for a device whose work is done
    when the call returns (the CPU): record() reads the clock, synchronize() has
    nothing to wait for. cnnbench times its CPU steps with the host clock too."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self._clock = clock
        self._t: Optional[float] = None

    def record(self) -> None:
        self._t = self._clock()

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: "HostEvent") -> float:
        """ms from this event to end. Raises RuntimeError if either was not recorded."""
        if self._t is None or end._t is None:
            raise RuntimeError("elapsed_time of an event that was not recorded")
        return (end._t - self._t) * 1000.0
