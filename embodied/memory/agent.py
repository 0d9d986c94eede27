"""The agent in memory (mixed into :class:`SpatialMemory`): its pose, grasps,
releases and button presses from proprioception, and the place graph of
where it has been.

Workcell proprio layout (22,): qpos 7, qvel 7, TCP position 3 (m), TCP
quaternion 4, gripper width 1 (m). Other robots: the agent is where its first
camera is.
"""

from __future__ import annotations

import numpy as np

from embodied.memory.tracker import _vec
from embodied.perception.perceiver import WORKCELL_PROPRIO_DIM

AGENT = "agent"


class AgentTracking:
    """Needs the SpatialMemory fields (graph, tracks, grip, config, _set, _add_node)."""

    def _proprio(self, proprio, views, t: int, seen: set) -> None:
        cfg = self.config
        if proprio is not None and np.asarray(proprio).shape == (WORKCELL_PROPRIO_DIM,):
            p = np.asarray(proprio, dtype=np.float64)
            tcp, width = p[14:17], float(p[21])
        elif views:
            # Mobile robots: the agent is where its first camera is.
            tcp, width = views[0].cam_to_world[:3, 3].astype(np.float64), None
        else:
            return
        if width is None:
            self._places(tcp, t)
        if AGENT not in self._graph:
            self._add_node(
                AGENT,
                {
                    "kind": "agent",
                    "cls": "agent",
                    "position": _vec(tcp),
                    "first_seen": t,
                    "last_seen": t,
                    "held": False,
                    "status": "visible",
                    "visible": True,
                },
                t,
                "seen",
            )
        a = self._graph.nodes[AGENT]
        a["last_seen"] = t
        if np.linalg.norm(tcp - np.asarray(a["position"])) > cfg.agent_log_tol:
            self._set(AGENT, t, "moved", {"position": _vec(tcp)})
        if width is not None:
            self.grip["tcp"] = _vec(tcp)
            self._gripper(tcp, width, t, seen)
            self._touch(tcp, t)

    def _touch(self, tcp: np.ndarray, t: int) -> None:
        """Buttons pressed by the robot: the fingertips below a button's resting top, over its footprint as
        last seen with no hand over it (``Articulation``: ``rest`` x0, y0, x1, y1; else its box now).

        The fingers hide the cap while they press it, so its travel cannot be
        seen; proprioception tells where the fingertips are. What is seen of the
        button under the fingers can be a sliver beside them (a learned
        detector's view 2.6 cm wide of a 7 cm button: the press went unlogged,
        was retried, and the count came out one over, CountFlashes 930023 in the
        randomized look).
        """
        cfg = self.config
        tip = tcp[2] - cfg.fingertip_below_tcp
        for node in self._find(cls="button"):
            a, tr = self._graph.nodes[node], self.tracks[node]
            top = tr.rest.get("top", float(tr.box_max[2]))
            r = tr.rest
            lo, hi = ((r["x0"], r["y0"]), (r["x1"], r["y1"])) if "x0" in r else (tr.box_min[:2], tr.box_max[:2])
            over = bool(np.all(tcp[:2] >= lo) and np.all(tcp[:2] <= hi))
            if over and tip < top - cfg.button_press_delta:
                if a["state"] != "pressed":
                    self._set(node, t, "pressed", {"state": "pressed", "pressed_by": "agent"})
            elif a["state"] == "pressed" and a.get("pressed_by") == "agent" and (not over or tip > top):
                self._set(node, t, "released", {"state": "released", "pressed_by": ""})

    def _gripper(self, tcp: np.ndarray, width: float, t: int, seen: set) -> None:
        """Grasp: the fingers come to rest part-closed (on something) next to an object; release: they open.

        A two-state machine (open / closed) on the width, so the bounce of the
        fingers on contact is not mistaken for opening.
        """
        cfg, g = self.config, self.grip
        last = width if g["width"] is None else g["width"]
        g["width"] = width
        stable = abs(width - last) < 5e-4
        holding = g["holding"]
        if holding and holding not in self._graph:
            g["holding"] = holding = ""
        if holding:
            if width > g["grasp_width"] + 5e-3 or width < cfg.grasp_min_width:
                g["holding"] = ""
                self._set(holding, t, "release", {"held": False})
            elif holding not in seen:
                # Out of sight in the hand: it goes where the hand goes.
                track = self.tracks[holding]
                track.shift(tcp + np.asarray(g["offset"]) - track.center)
                a = self._graph.nodes[holding]
                if np.linalg.norm(track.center - np.asarray(a["position"])) > cfg.log_tol:
                    self._set(
                        holding,
                        t,
                        "carried",
                        {
                            "position": _vec(track.center),
                            "box_min": _vec(track.box_min),
                            "box_max": _vec(track.box_max),
                        },
                    )
        if width >= cfg.grasp_max_width:
            g["closed"] = False
            return
        if holding or g["closed"] or not stable:
            return
        g["closed"] = True  # came to rest part-closed: on an object, or on nothing
        if width <= cfg.grasp_min_width:
            return
        best, best_key = "", None
        for node in self._physical():
            a = self._graph.nodes[node]
            tr = self.tracks[node]
            # Articulated parts (drawers) slide but are never carried off: a block held inside an
            # open drawer is inside the drawer's box too, and the block is what the hand holds.
            if a["kind"] not in ("object", "container") or tr.surface or a.get("articulated"):
                continue
            d = float(np.linalg.norm(np.clip(tcp, tr.box_min, tr.box_max) - tcp))
            if d >= cfg.grasp_radius:
                continue
            key = (d, float(np.linalg.norm(tr.center - tcp)))  # within the box, the nearest centre
            if best_key is None or key < best_key:
                best, best_key = node, key
        if best:
            g["holding"], g["grasp_width"] = best, width
            g["offset"] = _vec(self.tracks[best].center - tcp)
            # In the hand, out of its container: a block taken from a drawer and carried unseen (merged with
            # the fingers, as geometric perception sees it) had stayed "in" the drawer, so it moved when the
            # drawer's node moved, 4.5 cm off where it was set down (Rearrange 930046 and 930092, geometric).
            changes = {"held": True, "inside": ""} if self._graph.nodes[best].get("inside") else {"held": True}
            self._set(best, t, "grasp", changes)

    def _places(self, pos: np.ndarray, t: int) -> None:
        """A place node every ``place_spacing`` metres of new ground; consecutive places connect.

        Places are where the agent has stood, so an edge between two of them is
        a stretch it has travelled: the place graph is traversable by construction.
        """
        cfg = self.config
        xy = np.asarray(pos[:2], dtype=np.float64)
        near, near_d = "", np.inf
        places = self._kind_index()[2]  # a new list whenever a node comes or goes; places never move
        if places:
            if self._place_xy[0] is not places:
                self._place_xy = (places, np.array([self._graph.nodes[n]["position"][:2] for n in places]))
            d = np.hypot(self._place_xy[1][:, 0] - xy[0], self._place_xy[1][:, 1] - xy[1])
            k = int(np.argmin(d))  # the first of equals, as a scan in order would keep
            near, near_d = places[k], float(d[k])
        if near_d > cfg.place_spacing:
            near = self._new_id("place")
            self._add_node(
                near,
                {
                    "kind": "place",
                    "cls": "place",
                    "position": (float(xy[0]), float(xy[1]), 0.0),
                    "first_seen": t,
                    "last_seen": t,
                    "visible": True,
                    "status": "visible",
                    "links": (),
                },
                t,
                "seen",
            )
        elif near_d > cfg.place_spacing / 2:
            return  # between two places: still at the current one
        self._graph.nodes[near]["last_seen"] = t
        here = self.current_place
        if near != here and here in self._graph:
            for u, v in ((here, near), (near, here)):
                links = self._graph.nodes[u]["links"]
                if v not in links:
                    self._set(u, t, "connected", {"links": tuple(sorted(links + (v,)))})
                    self._graph.add_edge(u, v, key="connects", rel="connects")
        self.current_place = near
