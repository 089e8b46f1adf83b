"""tests/python/mpi_timeline.py under `mpirun -np 2` (see its docstring):
the timeline rank 0 writes is valid JSON with both ranks' op and
collective events, every collective of every step, and the ranks' clocks
within 1 ms of each other (one machine: one clock)."""
import json
import os
import sys

from test_mpi import NP, mpirun

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_timeline.py")
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import timeline_report  # noqa: E402

STEPS = 6


def test_mpi_executor_timeline(tmp_path):
    path = str(tmp_path / "trace.json")
    r = mpirun([sys.executable, SCRIPT, path, str(STEPS)])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"timeline written to {path}" in r.stdout, out
    with open(path, encoding="utf-8") as f:
        trace = json.load(f)
    assert timeline_report.world_size(trace) == NP
    assert timeline_report.check(trace, STEPS, max_offset_ms=1.0) == []
    ranks = timeline_report.by_rank(trace)
    assert sorted(ranks) == list(range(NP))
    for rank, r in ranks.items():
        per_step = {}
        for e in r["collectives"]:
            per_step[e["args"]["step"]] = per_step.get(e["args"]["step"], 0) + 1
            assert e["dur"] >= 0 and e["args"]["queued_us"] >= 0
            if e["name"] == "allreduce":
                assert e["args"]["bytes"] > 0
        # Small buckets: several allreduces per step, all of them there.
        counts = {per_step[s] for s in range(1, STEPS + 1)}
        assert len(counts) == 1 and counts.pop() > 1, per_step
        # The evaluation ran after the last step: its ops, no collectives.
        muls = {s: sum(1 for e in r["ops"] if e["name"] == "mul"
                       and e["args"]["step"] == s) for s in (1, STEPS)}
        assert muls[STEPS] == 2 * muls[1] > 0, muls
        assert abs(r["clock"]["offset_ns"]) < 1e6, r["clock"]
        assert r["clock"]["uncertainty_ns"] < 1e6, r["clock"]
        shapes = [e["args"]["shapes"] for e in r["ops"] if e["name"] == "mul"]
        assert [16, 64] in [s[0] for s in shapes], shapes[:4]
    assert not [p for p in os.listdir(tmp_path) if p != "trace.json"]
