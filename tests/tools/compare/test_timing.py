"""tools/compare/timing.py: the PyTorch peer's timed loop and statistics match
cnnbench's trainer and bench/report/stats.cpp. Plain Python, with fake events and a fake
clock standing in for the device."""
from __future__ import annotations

import math
import pathlib
import sys
import unittest

REPO = pathlib.Path(__file__).resolve().parents[3]
sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, str(REPO / "tools" / "compare"))
import timing  # noqa: E402


class FakeDevice:
    """A device that runs each enqueued step in `step_ms` of its own time, a
    clock, and a log of what the host did, to check the loop's order of calls."""

    def __init__(self, step_ms: list[float], losses: list[float] | None = None):
        self.step_ms = list(step_ms)
        self.losses = losses
        self.enqueued = 0
        self.device_time = 0.0  # ms of device work enqueued so far
        self.log: list[str] = []
        self.now_s = 100.0

    def clock(self) -> float:
        return self.now_s

    def step(self) -> None:
        self.device_time += self.step_ms[self.enqueued]
        self.enqueued += 1
        self.log.append(f"step {self.enqueued}")

    def new_event(self):
        device = self

        class Event:
            def __init__(self):
                self.t = None

            def record(self):
                self.t = device.device_time

            def synchronize(self):
                device.log.append("wait event")

            def elapsed_time(self, end):
                return end.t - self.t

        return Event()

    def read_loss(self) -> float:
        self.log.append("read loss")
        if self.losses is None:
            return 2.0
        return self.losses[self.enqueued - 1]

    def synchronize(self) -> None:
        self.log.append("synchronize")
        self.now_s = 100.0 + self.device_time / 1000.0


def run(device: FakeDevice, n: int, display_every: int, batch: int = 32, **kw):
    return timing.timed_loop(device.step, batch=batch, num_batches=n, display_every=display_every,
                             new_event=device.new_event, read_loss=device.read_loss,
                             synchronize=device.synchronize, clock=device.clock, **kw)


class TimedLoop(unittest.TestCase):
    def test_step_times_come_from_the_events_and_the_total_from_the_wall_time(self):
        device = FakeDevice([10, 20, 30, 40, 50])
        result = run(device, 5, display_every=10)
        self.assertEqual(result.step_times_ms, [10, 20, 30, 40, 50])
        self.assertEqual(result.steps, 5)
        self.assertEqual(result.images, 160)
        self.assertAlmostEqual(result.wall_time_s, 0.150)
        self.assertAlmostEqual(result.total_images_per_sec, 160 / 0.150)

    def test_events_are_read_one_step_late_and_all_at_displayed_steps(self):
        device = FakeDevice([1] * 4)
        run(device, 4, display_every=2)
        self.assertEqual(device.log, [
            "synchronize",                               # idle device before the clock starts
            "step 1", "wait event", "read loss",         # displayed: everything read
            "step 2", "wait event", "read loss",         # displayed (every 2nd)
            "step 3",                                    # one step in flight: nothing read
            "step 4", "wait event", "wait event", "read loss",
            "synchronize",                               # before the clock stops
        ])

    def test_undisplayed_last_step_reads_its_loss_after_the_clock_stops(self):
        device = FakeDevice([1] * 3, losses=[3.0, 2.5, 2.25])
        result = run(device, 3, display_every=10)
        self.assertEqual(device.log[-2:], ["synchronize", "read loss"])
        self.assertEqual(result.final_loss, 2.25)
        self.assertEqual([(s, loss) for s, _, loss in result.displayed], [(1, 3.0)])

    def test_displayed_steps_report_the_throughput_so_far(self):
        device = FakeDevice([100, 100, 50, 50])
        shown = []
        run(device, 4, display_every=2, batch=10, on_display=lambda *a: shown.append(a))
        self.assertEqual([s for s, _, _ in shown], [1, 2, 4])
        self.assertAlmostEqual(shown[-1][1].images_per_sec, 10 / 0.075)

    def test_a_non_finite_displayed_loss_stops_the_loop(self):
        device = FakeDevice([1] * 5, losses=[2.0, float("nan"), 1.0, 1.0, 1.0])
        with self.assertRaisesRegex(timing.NonFiniteLossError, "NaN at timed step 2"):
            run(device, 5, display_every=2)

    def test_a_zero_event_time_counts_as_one_nanosecond(self):
        device = FakeDevice([0, 0])
        result = run(device, 2, display_every=1)
        self.assertEqual(result.step_times_ms, [timing.MIN_STEP_MS] * 2)

    def test_bad_counts_are_refused(self):
        device = FakeDevice([1])
        for kw in ({"n": 0, "display_every": 1}, {"n": 1, "display_every": 0}):
            with self.assertRaises(ValueError):
                run(device, **kw)
        with self.assertRaises(ValueError):
            run(device, 1, display_every=1, ring=1)

    def test_host_events_time_with_the_clock(self):
        now = [1.0]
        start, end = timing.HostEvent(lambda: now[0]), timing.HostEvent(lambda: now[0])
        start.record()
        now[0] = 1.25
        end.record()
        end.synchronize()
        self.assertAlmostEqual(start.elapsed_time(end), 250.0)
        with self.assertRaises(RuntimeError):
            timing.HostEvent().elapsed_time(end)


class Statistics(unittest.TestCase):
    """The formulas of bench/report/stats.cpp."""

    def test_throughput_is_batch_over_mean_step_time_with_spread(self):
        tp = timing.throughput(64, [100.0, 100.0, 200.0])
        speeds = [640.0, 640.0, 320.0]
        self.assertAlmostEqual(tp.images_per_sec, 64 / (400 / 3 / 1000))
        mean = sum(speeds) / 3
        pstdev = math.sqrt(sum((s - mean) ** 2 for s in speeds) / 3)
        self.assertAlmostEqual(tp.uncertainty, pstdev / math.sqrt(3))
        self.assertAlmostEqual(tp.jitter, 0.0)  # median deviation of (0, 0, 320)

    def test_throughput_refuses_empty_and_non_positive_series(self):
        for bad in ([], [0.0], [-1.0], [float("inf")]):
            with self.assertRaises(ValueError):
                timing.throughput(1, bad)

    def test_percentiles_interpolate_linearly(self):
        values = [4.0, 1.0, 3.0, 2.0]
        self.assertEqual(timing.percentile(values, 50), 2.5)
        self.assertAlmostEqual(timing.percentile(values, 90), 3.7)
        self.assertEqual(timing.percentile(values, 0), 1.0)
        self.assertEqual(timing.percentile(values, 100), 4.0)
        with self.assertRaises(ValueError):
            timing.percentile(values, 101)
        p = timing.summarize(values)
        self.assertEqual((p.min, p.max, p.mean), (1.0, 4.0, 2.5))

    def test_lines_read_like_cnnbench(self):
        tp = timing.Throughput(2875.44, 1.26, 3.04)
        self.assertEqual(timing.step_line(10, tp, 6.98765),
                         "10\timages/sec: 2875.4 +/- 1.3 (jitter = 3.0)\t6.988")
        result = timing.LoopResult(batch=256, step_times_ms=[80.0, 90.0], wall_time_s=0.2,
                                   final_loss=1.0)
        lines = timing.summary_lines(result)
        self.assertEqual(lines[1], "total images/sec: 2560.00")
        self.assertEqual(lines[3], "timed steps: 2 (512 images in 0.200 s of wall time)")
        self.assertTrue(lines[4].startswith("step time p50/p90/p99: 85.00 / 89.00 /"))


if __name__ == "__main__":
    unittest.main()
