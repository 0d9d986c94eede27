"""The robot in memory, from proprioception: its node, its hand (grasps, carries, releases, presses) and
the places it has stood.

Workcell proprio (22,): qpos 7, qvel 7, TCP position 3 (m), TCP quaternion 4, gripper width 1 (m). Other
robots: the agent is where its first camera is, and leaves a trail of place nodes.
"""

from __future__ import annotations

import numpy as np

from embodied.memory.affordances import affords
from embodied.memory.store import AGENT
from embodied.memory.update import vec
from embodied.perception.perceiver import WORKCELL_PROPRIO_DIM


def fresh_grip() -> dict:
    return {"width": None, "closed": False, "holding": "", "grasp_width": 0.0, "offset": (0.0,) * 3, "tcp": None,
            "peak": 0.0}


class Body:
    """Needs the store, the config and the pressable plugin (presses by the hand)."""

    def __init__(self, store, config, buttons):
        self.store, self.config, self.buttons = store, config, buttons
        self.grip = fresh_grip()
        self.current_place = ""
        self._place_xy: tuple[list | None, np.ndarray] = (None, np.zeros((0, 2)))

    def update(self, proprio, views, t: int, seen: set) -> None:
        if proprio is not None and np.asarray(proprio).shape == (WORKCELL_PROPRIO_DIM,):
            p = np.asarray(proprio, dtype=np.float64)
            tcp, width = p[14:17], float(p[21])
        elif views:
            tcp, width = views[0].cam_to_world[:3, 3].astype(np.float64), None
        else:
            return
        store = self.store
        if width is None:
            self._places(tcp, t)
        if AGENT not in store._graph:
            store.add_node(AGENT, {"kind": "agent", "cls": "agent", "position": vec(tcp), "first_seen": t,
                                   "last_seen": t, "held": False, "status": "visible", "visible": True}, t, "seen")
        a = store._graph.nodes[AGENT]
        a["last_seen"] = t
        if np.linalg.norm(tcp - np.asarray(a["position"])) > self.config.log.agent_log_tol:
            store.set(AGENT, t, "moved", {"position": vec(tcp)})
        if width is not None:
            self.grip["tcp"] = vec(tcp)
            self._gripper(tcp, width, t, seen)
            self.buttons.on_hand(tcp, t)

    # --- the hand -----------------------------------------------------------------------------
    def hand_over(self, track) -> bool:
        """Whether the TCP is over a part's footprint grown by ``reach_slack``."""
        tcp = self.grip.get("tcp")
        if tcp is None:
            return False
        xy, slack = np.asarray(tcp[:2], dtype=np.float64), self.config.articulation.reach_slack
        return bool(np.all(xy >= track.box_min[:2] - slack) and np.all(xy <= track.box_max[:2] + slack))

    def reaching_in(self, track) -> bool:
        """Whether the fingers are down in (or just over) a part, open or holding something, not shut on
        nothing (a hook on its handle, which does slide it): the arm then hides the tray's front."""
        g = self.grip
        if g.get("tcp") is None or (g["width"] <= self.config.grasp.grasp_min_width and not g["holding"]):
            return False
        return self.hand_over(track) and float(g["tcp"][2]) <= track.box_max[2] + self.config.articulation.reach_above

    def _gripper(self, tcp: np.ndarray, width: float, t: int, seen: set) -> None:
        """Grasp: the fingers come to rest part-closed next to an object; release: they open. Two states (open /
        closed) on the width, so the bounce of the fingers on contact is no opening; a rest after they opened
        ``release_open`` past it (``peak``: their widest since the last rest) is a new closing, judged again."""
        cfg, g, store = self.config.grasp, self.grip, self.store
        last = width if g["width"] is None else g["width"]
        g["width"], g["peak"] = width, max(float(g.get("peak", width)), width)
        stable = abs(width - last) < cfg.width_still
        holding = g["holding"]
        if holding and holding not in store._graph:
            g["holding"] = holding = ""
        if holding:
            if width > g["grasp_width"] + cfg.release_open or width < cfg.grasp_min_width:
                g["holding"] = ""
                store.set(holding, t, "release", {"held": False})
            elif holding not in seen:  # out of sight in the hand: it goes where the hand goes
                track = store.tracks[holding]
                track.shift(tcp + np.asarray(g["offset"]) - track.center)
                a = store._graph.nodes[holding]
                if np.linalg.norm(track.center - np.asarray(a["position"])) > self.config.track.log_tol:
                    store.set(holding, t, "carried", {"position": vec(track.center), "box_min": vec(track.box_min),
                                                      "box_max": vec(track.box_max)})
        if width >= cfg.grasp_max_width:
            g["closed"] = False
            return
        if holding or not stable or (g["closed"] and g["peak"] <= width + cfg.release_open):
            return
        g["closed"], g["peak"] = True, width  # came to rest part-closed: on an object, or on nothing
        if width <= cfg.grasp_min_width:
            return
        best, best_key = "", None
        for node in store.physical():
            a, tr = store._graph.nodes[node], store.tracks[node]
            if not affords(a["cls"]).graspable or a["kind"] not in ("object", "container") or tr.surface:
                continue
            d = float(np.linalg.norm(np.clip(tcp, tr.box_min, tr.box_max) - tcp))
            key = (d, float(np.linalg.norm(tr.center - tcp)))  # within the box, the nearest centre
            if d < cfg.grasp_radius and (best_key is None or key < best_key):
                best, best_key = node, key
        if best:
            g["holding"], g["grasp_width"] = best, width
            g["offset"] = vec(store.tracks[best].center - tcp)
            # In the hand, out of its container (carried unseen, it must not move with the container).
            out = self.config.on("grasp_takes_out") and store._graph.nodes[best].get("inside")
            store.set(best, t, "grasp", {"held": True, "inside": ""} if out else {"held": True})

    # --- places --------------------------------------------------------------------------------
    def _places(self, pos: np.ndarray, t: int) -> None:
        """A place node every ``place_spacing`` m of new ground, connected to the last (a stretch travelled)."""
        store, spacing = self.store, self.config.log.place_spacing
        xy = np.asarray(pos[:2], dtype=np.float64)
        near, near_d = "", np.inf
        places = store.place_nodes()  # a new list whenever a node comes or goes; places never move
        if places:
            if self._place_xy[0] is not places:
                self._place_xy = (places, np.array([store._graph.nodes[n]["position"][:2] for n in places]))
            d = np.hypot(self._place_xy[1][:, 0] - xy[0], self._place_xy[1][:, 1] - xy[1])
            k = int(np.argmin(d))
            near, near_d = places[k], float(d[k])
        if near_d > spacing:
            near = store.new_id("place")
            store.add_node(near, {"kind": "place", "cls": "place", "position": (float(xy[0]), float(xy[1]), 0.0),
                                  "first_seen": t, "last_seen": t, "visible": True, "status": "visible", "links": ()},
                           t, "seen")
        elif near_d > spacing / 2:
            return  # between two places: still at the current one
        store._graph.nodes[near]["last_seen"] = t
        here = self.current_place
        if near != here and here in store._graph:
            for u, v in ((here, near), (near, here)):
                links = store._graph.nodes[u]["links"]
                if v not in links:
                    store.set(u, t, "connected", {"links": tuple(sorted(links + (v,)))})
                    store._graph.add_edge(u, v, key="connects", rel="connects")
        self.current_place = near
