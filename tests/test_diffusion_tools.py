"""The two diffusion-head tools the docs cite: tools/ddim_speedup.py and tools/call_trace.py."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}


def run_tool(*args: str) -> str:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_ddim_speedup_times_both_inferences_on_the_same_numbers():
    """The traced loop against the per-step loop, alternating in one process: same chunk, and faster."""
    out = json.loads(run_tool("tools/ddim_speedup.py", "--rounds", "3"))
    assert out["max_abs_diff"] < 1e-4
    assert out["per_step_ms"] > 0 and out["traced_loop_ms"] > 0 and out["speedup"] > 1.0
    assert out["load_1min"] >= 0


def test_call_trace_lists_each_call_with_its_start_and_end_and_the_outcome():
    out = run_tool("tools/call_trace.py", "PutBlockBack", "4", "act:manip").splitlines()
    calls = [line for line in out if line.startswith("t=")]
    ends = [line for line in out if line.startswith("  end t=")]
    assert [c.split("(")[0].split()[1] for c in calls] == ["pick", "place"]
    assert len(ends) == 2 and "episode over" in ends[-1]
    assert any("skill_done pick(pink block" in line for line in out)
    assert out[-1].startswith("end t=") and "success=True" in out[-1]
