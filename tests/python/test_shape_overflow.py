"""Shapes too large to allocate are errors, not crashes.

The element count of [2^31, 2^31] float32 times 4 bytes wraps to 0 in 64-bit
arithmetic; before the checked shape arithmetic a 0-byte buffer was
allocated and a kernel wrote past it. Each case runs in a subprocess so that
a crash fails the test instead of killing pytest.
"""
import subprocess
import sys
import textwrap

import pytest

CASE = textwrap.dedent("""
    import sys
    import fluid
    L = fluid.layers
    dims = [int(d) for d in sys.argv[1].split(",")]
    main, startup = fluid.Program(), fluid.Program()
    try:
        with fluid.program_guard(main, startup):
            x = L.data("x", dims, dtype="float32",
                       append_batch_size=sys.argv[2] == "batch")
            y = L.fc(x, 10)
            exe = fluid.Executor(fluid.CPUPlace())
            exe.run(startup)
    except (ValueError, MemoryError) as e:
        print("raised", type(e).__name__, str(e)[:300])
        sys.exit(0)
    print("no error")
    sys.exit(3)
""")


@pytest.mark.parametrize("batch", ["batch", "nobatch"])
@pytest.mark.parametrize("dims", [
    "2147483648,2147483648",   # [2^31, 2^31]: 2^64 bytes
    "4294967296,1073741824",   # [2^32, 2^30]
    "3,4611686018427387904",   # [3, 2^62]: the element count overflows
    "1,2147483648,2147483648",
])
def test_data_slot_too_large_raises(dims, batch):
    r = subprocess.run([sys.executable, "-c", CASE, dims, batch],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-2000:])
    assert "too large" in r.stdout, r.stdout
    assert "unknown" not in r.stdout, r.stdout
