"""Does a small kernel time slower right after the GPU idled? (docs/measurements.md)

    python benchmarks/idle_probe.py [--idle-s 2] [--repeat 5]

Why: on the H200 a shared GPU (``--gpu-share``) measured 1-2 µs kernels 13-17 %
faster than one process per GPU, with both paths agreeing with themselves run to
run. One process per GPU leaves the GPU idle for seconds while it compiles the next
kernel; zlbench's eager warmup is at most 200 calls (0.2-0.4 ms for such a kernel),
so the timing may start before the clocks are back up. This probe times one graph of
1000 small-kernel calls (as zlbench does: 10 replays, median, per call) after:

* ``idle``: ``--idle-s`` seconds of sleep, then the 200-call eager warmup;
* ``busy``: the same, but the GPU kept busy (a matmul loop) until the warmup;
* ``idle+replay-warmup``: idle, then graph replays queued for 25 ms of CPU time
  (each ~1 ms of GPU work, launched in microseconds: far more GPU time than 25 ms,
  not measured) before timing.

Prints one markdown table: per-call µs (median over ``--repeat`` rounds, min, max)
and the SM clock (MHz, torch.cuda.clock_rate, which reads it through pynvml) read just
before each timing, when available. Needs torch with CUDA; not part of the test suite.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--idle-s", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--calls", type=int, default=1000, help="calls in the graph")
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("idle_probe: no CUDA device", file=sys.stderr)
        return 2
    x = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    big = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)

    def small() -> None:
        torch.add(x, 1.0, out=y)

    for _ in range(10):
        small()
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):
            small()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(args.calls):
            small()
    torch.cuda.synchronize()

    def clock() -> str:
        try:
            return str(torch.cuda.clock_rate())
        except Exception:  # noqa: BLE001 - pynvml missing or unsupported
            return "?"

    def time_replays(n: int = 10) -> float:
        times = []
        for _ in range(n):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            graph.replay()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1000 / args.calls)
        return statistics.median(times)

    def eager_warmup() -> None:
        for _ in range(200):
            small()
        torch.cuda.synchronize()

    def busy_until(t_end: float) -> None:
        while time.time() < t_end:
            for _ in range(4):
                big @ big
            torch.cuda.synchronize()

    def case_idle() -> tuple[float, str]:
        time.sleep(args.idle_s)
        eager_warmup()
        c = clock()
        return time_replays(), c

    def case_busy() -> tuple[float, str]:
        busy_until(time.time() + args.idle_s)
        eager_warmup()
        c = clock()
        return time_replays(), c

    def case_idle_replay_warmup() -> tuple[float, str]:
        time.sleep(args.idle_s)
        eager_warmup()
        t_end = time.time() + 0.025
        while time.time() < t_end:
            graph.replay()
        torch.cuda.synchronize()
        c = clock()
        return time_replays(), c

    cases = {"idle": case_idle, "busy": case_busy, "idle+replay-warmup": case_idle_replay_warmup}
    got: dict[str, list[tuple[float, str]]] = {k: [] for k in cases}
    for _ in range(args.repeat):  # interleaved rounds
        for name, fn in cases.items():
            got[name].append(fn())
    print(f"{torch.cuda.get_device_name()}, {args.calls} calls of torch.add(bf16[4096]) per graph, "
          f"idle {args.idle_s:g} s, {args.repeat} rounds")  # fmt: skip
    print()
    print("| case | µs per call (median) | min | max | SM clock MHz (each round) |")
    print("|---|---:|---:|---:|---|")
    for name, res in got.items():
        us = [u for u, _ in res]
        clocks = " ".join(c for _, c in res)
        med = statistics.median(us)
        print(f"| {name} | {med:.3f} | {min(us):.3f} | {max(us):.3f} | {clocks} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
