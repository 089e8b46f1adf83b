"""benchmarks/pipeline_bubble.py's measures, on hand-made timelines of two
stages running 1F1B (forward 1, backward 2 time units per micro-batch)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "benchmarks"))
import pipeline_bubble as pb  # noqa: E402


def op(name, ts, dur, step=3, pid=1):
    return {"ph": "X", "cat": "op", "name": name, "ts": ts, "dur": dur,
            "pid": pid, "args": {"step": step, "shapes": [[4, 4]]}}


def one_f_one_b(m, backward=2.0):
    """One step of two stages: stage 0 runs F0 F1, then B(i) F(i+2); stage 1
    F(i) B(i); each stage waits (c_wait) for the message it needs, the
    sends' waits come after the last backward, and the loss broadcast
    joins both. With backward == 2 the times are 1F1B's own."""
    slot = 1.0 + backward
    r0, r1 = [], []
    # stage 0's forwards and sends, and its backwards after their gradients
    f0 = [float(i) if i < 2 else 1.0 + slot * (i - 1) + backward
          for i in range(m)]
    b1 = [2.0 + slot * i for i in range(m)]  # stage 1's backward starts
    for i in range(m):
        r1 += [op("c_wait", b1[i] - 1.0, 0.0, pid=2), op("mul", b1[i] - 1.0,
                                                         1.0, pid=2),
               op("mul_grad", b1[i], backward, pid=2),
               op("send_v2", b1[i] + backward, 0.0, pid=2)]
    g = [b + backward for b in b1]  # gradient i arrives
    t = 0.0
    order = [("F", 0), ("F", 1)]
    for i in range(m):
        order += [("B", i)] + ([("F", i + 2)] if i + 2 < m else [])
    for kind, i in order:
        if kind == "F":
            t = max(t, f0[i]) if i >= 2 else t
            r0 += [op("mul", t, 1.0), op("send_v2", t + 1.0, 0.0)]
            t += 1.0
        else:
            r0 += [op("c_wait", t, max(0.0, g[i] - t))]
            t = max(t, g[i])
            r0 += [op("mul_grad", t, backward)]
            t += backward
    end1 = b1[-1] + backward
    r1 += [op("c_wait", end1, 0.0, pid=2)] * m
    r1 += [op("c_broadcast", end1, t - end1, pid=2)]
    r0 += [op("c_wait", t, 0.0)] * m + [op("c_broadcast", t, 0.0)]
    return {3: {1: r0, 2: r1}}


@pytest.mark.parametrize("m", [4, 8])
def test_equal_stages_measure_the_formula_and_replay_exactly(m):
    steps = one_f_one_b(m)
    want = 1.0 / (m + 1)
    assert pb.bubble(steps) == pytest.approx(want)
    assert pb.replay(steps[3], m) == pytest.approx(3.0 * (m + 1))
    assert pb.free_bubble(steps, m) == pytest.approx(want)
    assert pb.free_bubble(steps, m, equal=True) == pytest.approx(want)
    # 1F1B's slots are 3 units (forward 1, backward 2): m + 1 of them a
    # step, m of them computing on each stage, one idle.
    assert pb.times(steps) == pytest.approx((3.0 * (m + 1), 3.0 * m, 3.0))


def test_late_messages_show_in_the_measure_not_in_the_replay():
    m = 4
    steps = one_f_one_b(m)
    # every op of stage 0 after its first wait starts 0.5 later, as if each
    # gradient arrived late: the span grows, the compute does not
    late = [dict(e, ts=e["ts"] + 0.5) if i > 2 else e
            for i, e in enumerate(steps[3][1])]
    steps[3][1] = late
    steps[3][2][-1] = dict(steps[3][2][-1], dur=steps[3][2][-1]["dur"] + 0.5)
    assert pb.bubble(steps) > 1.0 / (m + 1)
    assert pb.free_bubble(steps, m) == pytest.approx(1.0 / (m + 1))


def test_a_slower_stage_widens_the_bubble_until_the_ops_are_equalised():
    m = 4
    steps = one_f_one_b(m)
    steps[3][2] = [dict(e, dur=e["dur"] * 1.5) if e["name"] == "mul_grad"
                   else e for e in steps[3][2]]
    assert pb.free_bubble(steps, m) > 1.0 / (m + 1) + 0.05
    # the medians over both ranks: a backward of 2 or 3 takes 3 (the upper
    # median), so the stages are equal again
    assert pb.free_bubble(steps, m, equal=True) == pytest.approx(
        1.0 / (m + 1))


def test_a_receive_with_no_send_is_an_error():
    m = 4
    steps = one_f_one_b(m)
    steps[3][2] = [e for e in steps[3][2] if e["name"] != "send_v2"]
    with pytest.raises(RuntimeError, match="do not pair"):
        pb.replay(steps[3], m)
