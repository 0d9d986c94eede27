"""The memory scale benchmark (``embodied bench memory --grid``): a synthetic house of many look-alike
objects feeds the real ``SpatialMemory.update``, and the memory is measured as it grows.

    stream = HouseStream(objects=500, seed=0)             # house: the world and the frames it shows
    points = scale_run(500, checkpoints=[10_000, 100_000])  # measure: one house run, measured at each count
    report = run_grid([10_000, 100_000], [50, 500], out=Path("runs/bench-memory"))  # grid: fit, plot, report

Stages, each its own module:
    house     HouseStream, CLASSES, COLOURS, LOOKS: the shelves, the patrol, what moves and what the
              camera sees
    measure   scale_run, measure, check_truth, deep_size, time_queries, time_snapshots, time_save_load,
              TARGETS: the memory's costs and counts against the house's truth
    grid      run_grid, fit_growth, check_targets, plot_growth, MEASURES: runs over steps x objects,
              results.json and growth.png
"""

from embodied.eval.memory_scale.grid import MEASURES, check_targets, fit_growth, machine, plot_growth, run_grid
from embodied.eval.memory_scale.house import CLASSES, COLOURS, LOOKS, HouseStream
from embodied.eval.memory_scale.measure import (
    PHYSICAL_KINDS,
    TARGETS,
    check_truth,
    deep_size,
    measure,
    physical_nodes,
    scale_run,
    time_queries,
    time_save_load,
    time_snapshots,
)

__all__ = [
    "CLASSES",
    "COLOURS",
    "LOOKS",
    "MEASURES",
    "PHYSICAL_KINDS",
    "TARGETS",
    "HouseStream",
    "check_targets",
    "check_truth",
    "deep_size",
    "fit_growth",
    "machine",
    "measure",
    "physical_nodes",
    "plot_growth",
    "run_grid",
    "scale_run",
    "time_queries",
    "time_save_load",
    "time_snapshots",
]
