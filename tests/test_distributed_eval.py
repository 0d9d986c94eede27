"""``--workers K`` / ``--ray``: `run`, `ablate` and `benchmark` give the serial run's per-episode results, in seed
order."""

from __future__ import annotations

import json

import pytest

import embodied.eval.ablate as ablate_module
import embodied.eval.distributed as distributed
from embodied.cli.main import main
from embodied.eval.ablate import ablate
from embodied.eval.benchmark import BenchmarkConfig, load_results, run_benchmark
from embodied.eval.distributed import Batch, Parallel, split


@pytest.fixture(scope="module")
def ray_cpus():
    """One local Ray instance of two CPUs for the module (its start-up costs seconds); ``--ray`` without
    an address joins it, as `record-demos --ray` does."""
    ray = pytest.importorskip("ray", reason="Ray is the optional 'ray' extra: pip install -e '.[ray]'")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _run(capsys, *flags: str) -> list[dict]:
    assert main(["run", "--task", "ShellGame", "--policy", "agent", "--episodes", "3", "--seed", "1000",
                 "--json", *flags]) == 0
    return json.loads(capsys.readouterr().out)["episodes"]


def test_run_on_two_worker_processes_gives_the_serial_episodes(capsys):
    serial = _run(capsys)
    assert [e["seed"] for e in serial] == [1000, 1001, 1002]
    assert _run(capsys, "--workers", "2") == serial  # success, failure, steps, return, in seed order


def test_benchmark_on_worker_processes_resumes_and_reports_every_cell(tmp_path):
    tiny = dict(tasks=("ShellGame-v0",), presets=("easy", "hard"), episodes=2)
    out = tmp_path / "bench"
    run_benchmark(BenchmarkConfig(policies=("expert",), **tiny), out=out, progress=False)
    reported = []
    result = run_benchmark(BenchmarkConfig(policies=("expert", "memoryless"), **tiny), out=out, progress=False,
                           on_cell=reported.append, parallel=Parallel(workers=2))
    assert sorted((c.policy, c.preset) for c in reported) == [("expert", "easy"), ("expert", "hard"),
                                                              ("memoryless", "easy"), ("memoryless", "hard")]
    assert [(c["policy"], c["preset"]) for c in result["cells"]] == [
        ("expert", "easy"), ("expert", "hard"), ("memoryless", "easy"), ("memoryless", "hard")]
    assert all(c["episodes"] == 2 for c in load_results(out)["cells"])


def test_ablate_as_ray_tasks_gives_the_serial_episodes(ray_cpus, monkeypatch):
    seen: list[list] = []

    def spy(batches, parallel=Parallel(), progress=True, on_batch=None):
        out = distributed.evaluate(batches, parallel, progress, on_batch)
        seen.append([[r.to_dict() for r in results] for results, _ in out])
        return out

    monkeypatch.setattr(ablate_module, "evaluate", spy)
    kwargs = dict(tasks=["ShellGame-v0"], episodes=3, seed=2000, columns=("expert", "agent"), progress=False)
    serial = ablate(**kwargs)
    on_ray = ablate(**kwargs, parallel=Parallel(workers=2, ray=""))
    assert seen[0] == seen[1]
    assert [[e["seed"] for e in column] for column in seen[0]] == [[2000, 2001, 2002]] * 2
    speed = [k for k in serial["tasks"][0] if k.endswith("_steps_per_s")]
    assert len(speed) == 2
    strip = lambda report: [{k: v for k, v in row.items() if k not in speed} for row in report["tasks"]]  # noqa: E731
    assert strip(on_ray) == strip(serial)


def test_benchmark_cli_on_ray_writes_the_serial_results(ray_cpus, tmp_path, capsys):
    flags = ["benchmark", "--policy", "expert", "--policy", "memoryless", "--task", "ShellGame", "--preset", "easy",
             "--preset", "hard", "--episodes", "3", "--json"]
    assert main([*flags, "--out", str(tmp_path / "serial")]) == 0
    assert main([*flags, "--out", str(tmp_path / "ray"), "--ray", "--workers", "2"]) == 0
    capsys.readouterr()
    strip = lambda cells: [{k: v for k, v in c.items() if k != "seconds"} for c in cells]  # noqa: E731
    serial, on_ray = load_results(tmp_path / "serial"), load_results(tmp_path / "ray")
    assert strip(on_ray["cells"]) == strip(serial["cells"])
    assert [(c["policy"], c["preset"]) for c in on_ray["cells"]] == [
        ("expert", "easy"), ("expert", "hard"), ("memoryless", "easy"), ("memoryless", "hard")]
    assert (tmp_path / "ray" / "leaderboard.md").read_text() == (tmp_path / "serial" / "leaderboard.md").read_text()


@pytest.mark.parametrize("flag", [["--video", "v.mp4"], ["--record", "rec"],
                                  ["--video", "v.mp4", "--overlay", "graph"]])
def test_live_env_features_refuse_workers(flag, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--task", "ShellGame", "--episodes", "2", "--workers", "2", *flag]) != 0
    err = capsys.readouterr().err
    assert "need" in err and "the env in this process" in err and "--workers 2" in err
    assert not list(tmp_path.iterdir()), "nothing was started or written"


def test_chunks_cover_every_seed_once_in_order():
    batches = [Batch("embodied/ShellGame-v0", {}, "expert", tuple(range(s, s + n))) for s, n in ((0, 20), (100, 3))]
    chunks = split(batches, slots=2)
    assert [s for i, c in chunks if i == 0 for s in c.seeds] == list(range(20))
    assert [s for i, c in chunks if i == 1 for s in c.seeds] == [100, 101, 102]
    assert {len(c.seeds) for i, c in chunks if i == 0} == {2}  # 23 episodes, 2 slots: ~4 chunks a slot
    assert len(split(batches, slots=64)) == 23  # more slots than episodes: one episode a chunk
    # 20 seeds, 3 chunks a slot: at most 20 // 3 = 6 a chunk, so four even chunks
    assert [len(c.seeds) for _, c in split(batches[:1], slots=1, per_slot=3)] == [5, 5, 5, 5]
    with pytest.raises(ValueError, match="--workers must be >= 1"):
        Parallel(workers=0)


def test_a_ray_address_where_nothing_listens_fails_at_once(capsys):
    pytest.importorskip("ray", reason="Ray is the optional 'ray' extra: pip install -e '.[ray]'")
    assert main(["run", "--task", "ShellGame", "--episodes", "1", "--ray", "127.0.0.1:1"]) == 2
    assert "--ray 127.0.0.1:1: nothing answers there" in capsys.readouterr().err
