"""CountFlashes' expert: press the button as many times as the screen flashed."""

from __future__ import annotations

from embodied.experts.calls import object_call
from embodied.experts.motion import ScriptedExpert, Waypoint
from embodied.experts.sequence_recall import press
from embodied.tasks.count_flashes import CountFlashes


class CountFlashesExpert(ScriptedExpert):
    """Reads the true count from the env's privileged state and presses that many times at recall."""

    count_override: int | None = None  # tests press a wrong count

    def plan(self, phase: str) -> list[Waypoint]:
        if phase != "recall":
            return []
        env: CountFlashes = self.env
        info = env.privileged()
        count = info["count"] if self.count_override is None else self.count_override
        plan: list[Waypoint] = []
        for i in range(count):
            call = object_call(env, "press", "button0", yaw=0.0, note=f"press {i + 1} of {count}")
            plan += press(*info["button_xy"], call=call)
        return plan
