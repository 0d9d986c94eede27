"""Print the agent tables of docs/results.md from ``tools/measure_agent.sh`` output.

    python3 tools/report_agent.py out/agent

``markdown(root)`` returns the same text (``tools/report_results.py --agent`` writes it into docs/results.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def markdown(root: str | Path) -> str:
    """The ablation table, the episode note and the mean; ValueError when ``root`` holds no ablate_*.json."""
    root_path = Path(root)
    rows = []
    for path in sorted(root_path.glob("ablate_*.json")):
        report = json.loads(path.read_text())
        row = report["tasks"][0]
        for extra_path in sorted(root_path.glob(path.name.replace("ablate_", "extra*_"))):
            # More seeds run separately (the same command on the following seeds): pool each column.
            extra = json.loads(extra_path.read_text())
            for column in extra["columns"]:
                n0 = row.get(f"{column}_episodes", row["episodes"])
                n1 = extra["tasks"][0].get(f"{column}_episodes", extra["episodes"])
                row[column] = (row[column] * n0 + extra["tasks"][0][column] * n1) / (n0 + n1)
                row[f"{column}_episodes"] = n0 + n1
        delay_path = root_path / path.name.replace("ablate_", "delay10_")
        if delay_path.exists():
            delay = json.loads(delay_path.read_text())
            row["delay10"], row["delay10_n"] = delay["tasks"][0]["agent"], delay["episodes"]
        rows.append(row)
    if not rows:
        raise ValueError(f"no ablate_*.json in {root}")
    lines = ["| task | expert | agent | memory wiped at recall | blank cue | chance | agent, 10x delay "
             "| agent steps/s |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        cells = [
            f"{100 * r[c]:.0f}% ({r.get(f'{c}_episodes', r['episodes'])})" if c in r else "-"
            for c in ("expert", "agent", "agent:wiped", "agent:blank")
        ]
        delay = f"{100 * r['delay10']:.0f}% ({r['delay10_n']})" if "delay10" in r else "-"
        speed = f"{r['agent_steps_per_s']:.0f}" if "agent_steps_per_s" in r else "-"
        lines.append(f"| {r['task']} | " + " | ".join(cells) + f" | {100 * r['chance']:.1f}% | {delay} | {speed} |")
    agent = [r["agent"] for r in rows if "agent" in r]
    lines.append("\n(n): episodes, consecutive seeds from 1000 (10x delay: from 2000)")
    lines.append(f"\nmean agent success over {len(agent)} tasks: {100 * sum(agent) / len(agent):.1f}%")
    return "\n".join(lines)


def main(root: str) -> None:
    try:
        print(markdown(root))
    except ValueError as exc:
        sys.exit(str(exc))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "out/agent")
