"""benchmarks/cpu_by_process.py: the CPU time of what ran while a command
ran, by process name, and the command's exit status passed on."""
import os
import shutil
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "benchmarks", "cpu_by_process.py")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args],
                          capture_output=True, text=True, timeout=60)


def test_a_busy_child_is_counted_and_its_status_passed_on(tmp_path):
    # A shell loop of about half a CPU-second, in a process of its own
    # name (the kernel's name of a process is its executable's).
    shell = str(tmp_path / "fluid_busy")
    shutil.copy("/bin/sh", shell)
    r = run("--", shell, "-c",
            "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; exit 3")
    assert r.returncode == 3, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0].startswith("cpu_by_process: "), r.stderr
    counted = {l.split()[0]: float(l.split()[1]) for l in lines[1:]}
    assert counted.get("fluid_busy", 0.0) > 0.05, r.stderr
    busy_total = float(lines[0].split("machine busy ")[1].split()[0])
    assert busy_total >= counted["fluid_busy"] - 0.02, r.stderr


def test_no_command_is_an_error_saying_how():
    r = run()
    assert r.returncode == 2
    assert "no command to run" in r.stderr
