"""Fluid's profiler on this product's timeline: the ops, collectives and
feeds every executor runs between start and stop are recorded, a table of
time per event is printed, and the whole record is written to
`profile_path` as a Chrome trace-event JSON file (open it in Perfetto or
chrome://tracing; tools/timeline_report.py summarises it too).

    with fluid.profiler.profiler("CPU", sorted_key="total",
                                 profile_path="/tmp/profile.json"):
        for batch in reader():
            exe.run(main, feed=batch, fetch_list=[loss])

Under mpirun every rank records; start and stop are collective (every rank
calls them), and rank 0 writes the file, with every rank's events, and
prints its own table. It is the timeline of `trainer --timeline` and
`MPIExecutor(timeline=...)`: only one recording runs at a time.
"""
import collections
import contextlib
import json
import os

from . import _core

__all__ = ["profiler", "reset_profiler", "start_profiler", "stop_profiler"]

_STATES = ("CPU", "GPU", "All")
_SORT_KEYS = (None, "calls", "total", "max", "min", "ave")
_TRACERS = ("Default", "OpDetail", "AllOpDetail")
_state = {"path": None}


def _check(state, tracer_option):
    if state not in _STATES:
        raise ValueError(f"profiler state {state!r}: one of "
                         f"{', '.join(map(repr, _STATES))}")
    if tracer_option not in _TRACERS:
        raise ValueError(f"profiler tracer_option {tracer_option!r}: one of "
                         f"{', '.join(map(repr, _TRACERS))}")


def start_profiler(state, tracer_option="Default"):
    """Starts recording every op, collective and feed the executors run.
    state: "CPU", "GPU" or "All" (what runs on a device is recorded with
    the op that launched it either way). Collective under mpirun."""
    _check(state, tracer_option)
    if _state["path"] is not None:
        raise RuntimeError("start_profiler: the profiler is running already "
                           "(stop_profiler first)")
    # Recorded to a scratch file until stop_profiler names the real one.
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                        f"fluid-profile-{os.getpid()}.json")
    _core.start_timeline(path)
    _state["path"] = path


def _finish():
    """Ends the recording; the scratch file's path on rank 0, else None."""
    _state["path"] = None
    return _core.finish_timeline() or None


def reset_profiler():
    """Drops what was recorded so far and goes on recording (collective
    under mpirun). Nothing when the profiler is not running."""
    if _state["path"] is None:
        return
    done = _finish()
    if done:
        os.remove(done)
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                        f"fluid-profile-{os.getpid()}.json")
    _core.start_timeline(path)
    _state["path"] = path


def stop_profiler(sorted_key=None, profile_path="/tmp/profile"):
    """Stops recording; on rank 0 prints the table of events (sorted by
    `sorted_key`: None keeps the order events were first seen, else
    "calls", "total", "max", "min" or "ave", descending) and writes the
    trace to `profile_path`. Returns the table's rows (dicts) on rank 0,
    None elsewhere. Collective under mpirun."""
    if sorted_key not in _SORT_KEYS:
        raise ValueError(f"stop_profiler(sorted_key={sorted_key!r}): one of "
                         f"{', '.join(map(repr, _SORT_KEYS))}")
    if _state["path"] is None:
        raise RuntimeError("stop_profiler: the profiler is not running "
                           "(start_profiler first)")
    done = _finish()
    if not done:
        return None
    with open(done, encoding="utf-8") as f:
        trace = json.load(f)
    directory = os.path.dirname(os.path.abspath(profile_path))
    os.makedirs(directory, exist_ok=True)
    os.replace(done, profile_path)
    rows = _summary(trace, sorted_key)
    print(_table(rows, profile_path))
    return rows


@contextlib.contextmanager
def profiler(state, sorted_key=None, profile_path="/tmp/profile",
             tracer_option="Default"):
    """Records what runs inside the `with` block (start_profiler, then
    stop_profiler with `sorted_key` and `profile_path` at its end)."""
    start_profiler(state, tracer_option)
    try:
        yield
    finally:
        stop_profiler(sorted_key, profile_path)


def _summary(trace, sorted_key):
    """Rows of {event, calls, total, min, max, ave, ratio} (milliseconds)
    for rank 0's complete events, in `sorted_key` order."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    stats = collections.OrderedDict()
    for e in events:
        if e.get("ph") != "X" or e.get("pid") != 1:  # rank 0's own
            continue
        if e.get("cat") not in ("op", "collective", "data"):
            continue
        s = stats.setdefault(e["name"], [0, 0.0, float("inf"), 0.0])
        ms = e.get("dur", 0.0) / 1000.0
        s[0] += 1
        s[1] += ms
        s[2] = min(s[2], ms)
        s[3] = max(s[3], ms)
    whole = sum(s[1] for s in stats.values()) or 1.0
    rows = [dict(event=name, calls=s[0], total=s[1], min=s[2], max=s[3],
                 ave=s[1] / s[0], ratio=s[1] / whole)
            for name, s in stats.items()]
    if sorted_key is not None:
        rows.sort(key=lambda r: r[sorted_key], reverse=True)
    return rows


def _table(rows, path):
    lines = ["------------------------->     Profiling Report     "
             "<-------------------------",
             f"Trace written to {path} (Chrome trace-event JSON).",
             f"{'Event':<32}{'Calls':>8}{'Total':>12}{'Min.':>10}"
             f"{'Max.':>10}{'Ave.':>10}{'Ratio.':>9}"]
    for r in rows:
        lines.append(f"{r['event'][:31]:<32}{r['calls']:>8}"
                     f"{r['total']:>12.4f}{r['min']:>10.4f}"
                     f"{r['max']:>10.4f}{r['ave']:>10.4f}{r['ratio']:>9.4f}")
    return "\n".join(lines)
