"""The pressable plugin: caps pressed in place (buttons, switches), judged pressed or released.

A cap clicks ``click`` m below its rest: the mean of its top over the frames it was seen released with no
hand over it, where its footprint is where a press must land. Each frame the ``press`` belief takes the
evidence that the cap travelled past the click: the top seen against the rest (with the view's noise), or
the fingertips while the hand is over the footprint and hides the cap (with the joints' noise). The
robot's own press is judged from its proprioception alone until the hand leaves.

State per track (``Track.parts``): ``top``, ``top_n``, ``top_m2`` (the rest's running mean, m) and the
footprint ``x0``, ``y0``, ``x1``, ``y1`` (m).
"""

from __future__ import annotations

import math

import numpy as np

from embodied.memory.affordances import affords
from embodied.memory.beliefs import RunningMean, side_llr
from embodied.memory.noise import centre_std


class Buttons:
    """Judges pressable parts. Needs the store, the config and the hand (``hooks.hand_over``)."""

    def __init__(self, store, config, hooks):
        self.store, self.config, self.hooks = store, config, hooks

    def _rest(self, track) -> RunningMean:
        p = track.parts
        return RunningMean(p.get("top_n", 0.0), p.get("top", 0.0), p.get("top_m2", 0.0))

    def on_update(self, node: str, t: int) -> None:
        """A cap's view changed: fold its top into its rest (released, no hand over it) or a press's evidence."""
        a = self.store._graph.nodes[node]
        if not affords(a["cls"]).pressable or a.get("pressed_by") == "agent":
            return
        track = self.store.tracks[node]
        top = float(track.box_max[2])
        view_std = max((centre_std(v.noise, len(v.points), self.config.sensor) for v in track.views.values()),
                       default=0.0)
        rest, click = self._rest(track), self.config.articulation.click
        hand = self.config.on("hand_hides_cap") and self.hooks.hand_over(track)
        if rest.n == 0 or (not hand and not track.press.state and top > rest.mean - click / 2):
            rest.add(top)
            p = track.parts
            p.update(top=rest.mean, top_n=rest.n, top_m2=rest.m2)
            (p["x0"], p["y0"]), (p["x1"], p["y1"]) = track.box_min[:2], track.box_max[:2]
        elif hand:
            return  # the fingers hide the cap: what is seen of it is no evidence (proprioception judges it)
        sigma = math.hypot(view_std, rest.std_of_mean)
        beliefs = self.config.beliefs
        track.press.add(side_llr(rest.mean - top, click, sigma, beliefs.cap), beliefs)
        state = "pressed" if track.press.state else "released"
        if state != a["state"]:
            self.store.set(node, t, state, {"state": state})

    def on_hand(self, tcp: np.ndarray, t: int) -> None:
        """The robot's own presses, from proprioception: the fingertips past the click below a cap's rest over
        its footprint (as seen with no hand over it); released once the hand leaves or rises above the rest."""
        cfg = self.config
        tip = float(tcp[2]) - cfg.articulation.fingertip_below_tcp
        for node in self.store.nodes_of():
            a = self.store._graph.nodes[node]
            if not affords(a["cls"]).pressable:
                continue
            track = self.store.tracks[node]
            p, rest = track.parts, self._rest(track)
            top = rest.mean if rest.n else float(track.box_max[2])
            lo, hi = ((p["x0"], p["y0"]), (p["x1"], p["y1"])) if "x0" in p else (track.box_min[:2], track.box_max[:2])
            over = bool(np.all(tcp[:2] >= lo) and np.all(tcp[:2] <= hi))
            if over:
                sigma = math.hypot(cfg.sensor.proprio_sigma, rest.std_of_mean)
                pressed = track.press.add(side_llr(top - tip, cfg.articulation.click, sigma, cfg.beliefs.cap),
                                          cfg.beliefs)
                if pressed and a["state"] != "pressed":
                    self.store.set(node, t, "pressed", {"state": "pressed", "pressed_by": "agent"})
            if a["state"] == "pressed" and a.get("pressed_by") == "agent" and (not over or tip > top):
                track.press.reset(False, cfg.beliefs)
                self.store.set(node, t, "released", {"state": "released", "pressed_by": ""})
