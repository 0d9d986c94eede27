"""Reference resolution: a :class:`~embodied.planner.grammar.Ref` -> memory node ids.

One generic resolver for every goal, through the memory's public queries only
(``find``, ``where_is``, ``where_was``, ``history``, ``trajectory``, ``objects_in``,
``when``, ``last_seen``, ``room_of``) and the node attributes of ``memory.graph`` (class, colour, rgb,
box, number of observations). It never sees task names or simulator state.

    r = Resolver(memory, target_rgb=goal["target_rgb"])
    nodes = r.resolve(ref)        # best first; one node for a singular ref
    xyz = r.position(node, "first")
"""

from __future__ import annotations

import numpy as np

from embodied.perception.colour import colour_distance
from embodied.planner.gone import rank_gone
from embodied.planner.grammar import COLOUR_WORDS, Goal, GrammarError, Ref, parse

# Event tags of a colour change (see the memory's tracker): a new colour name, a light on / off.
COLOUR_TAGS = ("recoloured", "brightened", "dimmed")
DISPLACED = 0.03  # m from where first seen: an object this far off was moved, not nudged
RETURNED = 0.25  # an object now nearer where it was first seen than this share of its farthest move came back
HIDDEN_NEAR = 0.1  # m: an unseen object this close to a container is taken to be in it
ON_SLACK = 0.03  # m past a support's half-width that still counts as standing on it
# colour_distance past the nearest node's within which a node still has the goal's colour (the palette's
# colours are 0.28 or more apart; one object's views differ by a few hundredths)
COLOUR_SLACK = 0.12
# Steps an object must be seen at a place before it counts as where it was first: a glimpse at the edge
# of view that memory re-estimates at once (a jump it logs as "moved") is no place the object stood.
SETTLED = 3
# Event tags whose position starts a new stay: a move, a carry, a sighting after time out of view.
MOVES = ("moved", "carried", "seen")
TRACKED = ("moved", "carried")  # a move logged while memory followed the node (not a re-sighting)


class ResolutionError(LookupError):
    """Nothing in memory fits a reference; the message names the reference."""


class Resolver:
    def __init__(self, memory, target_rgb=None):
        self.memory = memory
        rgb = None if target_rgb is None else np.asarray(target_rgb, dtype=np.float64)
        self.target_rgb = rgb if rgb is not None and rgb.shape == (3,) and rgb.max() > 0 else None

    # --- node facts ----------------------------------------------------------------
    def attrs(self, node: str) -> dict:
        return self.memory.graph.nodes[node]

    def position(self, node: str, when: str = "now") -> np.ndarray:
        """(3,) m: where the node is now, or where it was first (``when="first"``: ``first_place``)."""
        if when == "first":
            pos = self.first_place(node)
            if pos is not None:
                return pos
        return np.asarray(self.memory.where_is(node)["position"], dtype=np.float64)

    def first_place(self, node: str) -> np.ndarray | None:
        """(3,) m: the first place memory saw the node stay at (``first_stay``); None without a position."""
        stay = self.first_stay(node)
        return None if stay is None else stay[1]

    def first_stay(self, node: str) -> tuple[int, np.ndarray] | None:
        """(t, (3,) m): the first place memory saw the node stay at, and when memory logged it there. A
        place counts when the node was seen there for ``SETTLED`` steps or more, or when memory watched
        it travel away from there (the next ``SETTLED`` positions logged as tracked moves, step on step:
        a drawer sliding it out, a hand carrying it); a glimpse re-estimated at once is no place.
        Without either: the first place. Visible time comes from the node's status events: seen (visible) until missing,
        out of view, occluded or hidden."""
        stays: list[tuple[int, np.ndarray, str]] = []  # (t, position, tag of the event that began it)
        seen: list[int] = []  # steps seen at each stay
        held, since = 0, None
        for e in self.memory.history(node):
            data, t = e["data"], e["t"]
            if "position" in data and (not stays or e["tag"] in MOVES):
                if stays:
                    seen.append(held + (t - since if since is not None else 0))
                stays.append((t, np.asarray(data["position"], dtype=np.float64), e["tag"]))
                held, since = 0, (t if since is not None else None)
            status = data.get("status")
            if status == "visible" and since is None:
                since = t
            elif status not in (None, "visible") and since is not None:
                held, since = held + t - since, None
        if not stays:
            return None
        seen.append(held + (self.memory.t - since if since is not None else 0))
        for k, (t, position, _) in enumerate(stays):
            run = stays[k:k + 1 + SETTLED]  # this stay and the next ones: a travel is tracked moves step on step
            watched_away = len(run) == SETTLED + 1 and all(
                tag in TRACKED and t1 - t0 <= 2 for (t0, _, _), (t1, _, tag) in zip(run, run[1:]))
            if seen[k] >= SETTLED or watched_away:
                return t, position
        return stays[0][:2]

    def size(self, node: str) -> np.ndarray:
        """(3,) m: the node's box size (zeros for a node without a box: the agent, a place)."""
        a = self.attrs(node)
        if "box_min" not in a or "box_max" not in a:
            return np.zeros(3)
        return np.asarray(a["box_max"], dtype=np.float64) - np.asarray(a["box_min"], dtype=np.float64)

    def holder(self, node: str) -> str:
        """The container the node is in (seen there or remembered there), "" if none."""
        where = self.memory.where_is(node)
        # A container deleted since, or only glimpsed (a detector's stray piece: tentative), holds nothing.
        holds = lambda c: c in self.memory.graph and not self.memory.tentative(c)  # noqa: E731
        inside = [c for c in where["in"] if holds(c)]
        recorded = self.attrs(node).get("inside", "") or ""
        if inside:
            # Two containers' boxes may both take it in (a drawer seen merged with its neighbour reaches
            # over the next one's tray): the one memory saw it go into, else the nearest (opening the
            # neighbour instead ends the episode).
            if recorded in inside:
                return recorded
            p = self.position(node)[:2]
            return min(inside, key=lambda c: (float(np.linalg.norm(self.position(c)[:2] - p)), c))
        inside = recorded
        inside = inside if holds(inside) else ""
        if inside or where["visible"] or where["held"]:
            return inside
        # Out of sight and not recorded inside anything: the container it vanished next to.
        p = self.position(node)[:2]
        near = [
            (float(np.linalg.norm(self.position(c)[:2] - p)), c)
            for c in self.memory.find(kind="container")
            if c != node
        ]
        near = [(d, c) for d, c in near if d <= HIDDEN_NEAR]
        return min(near)[1] if near else ""

    # --- resolution ----------------------------------------------------------------
    def candidates(self, ref: Ref) -> list[str]:
        memory = self.memory
        if ref.noun == "everything":
            return [n for n in memory.find() if self.attrs(n)["kind"] == "object"]
        if ref.noun == "object":  # any movable thing: a box or a cup is one too
            return [n for n in memory.find() if self.attrs(n)["kind"] in ("object", "container")]
        # Nothing of that class now: what the detector named so at times, its votes made another class.
        nodes = memory.find(cls=ref.noun) or memory.once_named(ref.noun)
        if nodes:
            return nodes
        # Without class labels (geometric perception) the class word cannot select: a small object
        # of the named colour stands in, and a plural or colour-shown ref ranges over every object
        # (its clause, such as "in the order they lit up", then does the selecting).
        if ref.colour is not None:
            now = memory.find(cls="small", colour=ref.colour) or memory.find(kind="object", colour=ref.colour)
            # ... or one first seen in that colour (a block shut in a drawer may look the drawer's colour).
            return now or [n for n in memory.find(kind="object") if self._first_colour(n) == ref.colour]
        if ref.plural or ref.colour_of is not None:
            return memory.find(kind="object") + memory.find(kind="articulated")
        # A bare noun ("the ball"): a small object remembered hidden in a container, else any small one.
        small = memory.find(cls="small")
        hidden = [n for n in small if self.attrs(n).get("inside") and not memory.where_is(n)["visible"]]
        return hidden or small

    def resolve(self, ref: Ref) -> list[str]:
        """Nodes that fit ``ref``, best first (a singular ref gets exactly one)."""
        nodes = self.candidates(ref)
        if not nodes:
            raise ResolutionError(f"nothing in memory is a {ref.noun!r} (for {str(ref)!r})")
        if ref.colour is not None:
            nodes = self._by_colour(nodes, ref.colour)
        if ref.state is not None:
            nodes = [n for n in nodes if self.memory.where_is(n)["state"] == ref.state]
            if not nodes:
                raise ResolutionError(f"no {ref.noun} is {ref.state} now (for {str(ref)!r})")
        if ref.was_state is not None:
            durations = {n: self._time_in_state(n, ref.was_state) for n in nodes}
            nodes = [n for n in sorted(nodes, key=lambda n: -durations[n]) if durations[n] > 0]
            if not nodes:
                raise ResolutionError(f"memory never saw a {ref.noun} {ref.was_state} (for {str(ref)!r})")
        if ref.holds is not None:
            nodes = self._holding(nodes, ref.holds)
        if ref.colour_of is not None:
            nodes = self._by_shown_colour(nodes, ref.colour_of)
        if ref.moved is not None:
            nodes = self._by_move(nodes, ref.moved)
        if ref.gone:
            nodes = self._gone(nodes)
        if ref.was_on is not None:
            nodes = self._first_on(nodes, ref.was_on)
        if not ref.plural and ref.was_state is None and ref.holds is None and ref.colour_of is None \
                and ref.moved is None and not ref.gone and ref.was_on is None:
            # Among equals, the most observed one: a tracked object, not a fleeting duplicate.
            nodes = sorted(nodes, key=lambda n: (-self.attrs(n)["n_obs"], n))
        return nodes if ref.plural else nodes[:1]

    def lit_order(self, nodes: list[str]) -> list[str]:
        """The nodes in the order they lit up (their "brightened" events); each flash counts once."""
        lit = sorted((t, n) for n in nodes for t in self.memory.when("brightened", n))
        order = [n for k, (_, n) in enumerate(lit) if k == 0 or lit[k - 1][1] != n]
        if not order:
            raise ResolutionError("memory saw none of them light up")
        return order

    def flash_count(self, node: str) -> int:
        """How many times ``node`` lit up: its "brightened" events, each flash counted once (a light
        that brightens again before memory saw it dim is the same flash, seen by another camera)."""
        lit, count = False, 0
        for event in self.memory.history(node):
            if event["tag"] == "brightened":
                count += not lit
                lit = True
            elif event["tag"] == "dimmed":
                lit = False
        return count

    def room_with_most(self, nodes: list[str]) -> str:
        """The room node that memory holds the most of ``nodes`` in ("" if it knows no rooms). Alike
        nodes (same class and colour: one object tracked twice) count once, in the room of their latest
        sighting."""
        latest: dict[tuple, str] = {}
        for n in sorted(nodes, key=lambda n: (self.memory.last_seen(n), self.attrs(n)["n_obs"], n)):
            latest[(self.attrs(n).get("cls"), self.attrs(n).get("colour"))] = n
        counts: dict[str, int] = {}
        for n in latest.values():
            room = self.memory.room_of(n)
            if room:
                counts[room] = counts.get(room, 0) + 1
        return max(counts, key=lambda room: (counts[room], room)) if counts else ""

    # --- helpers -------------------------------------------------------------------
    def _by_move(self, nodes: list[str], order: str) -> list[str]:
        """The nodes memory saw displaced (``DISPLACED`` m from where first seen; a nudge is no move): in
        the order their first displacement was logged ("first"), the latest first ("last"), or the
        farthest displaced first ("any": a re-estimate of where a still object is never wins), those back
        where they were first seen last (a round trip: a detector's misreading elsewhere taken for the
        object, then the object seen at home again, is no move)."""
        began, farthest, back = {}, {}, {}
        for n in nodes:
            stay = self.first_stay(n)
            if stay is None:
                continue
            since, first = stay  # a glimpse memory re-estimated before the object stayed is no move
            glimpses = self._glimpses(n)
            away = [(t, float(np.linalg.norm(np.asarray(p) - first))) for t, p in self.memory.trajectory(n)
                    if t >= since and not any(a <= t < b for a, b in glimpses)]
            moved = [(t, d) for t, d in away if d > DISPLACED]
            if moved:
                began[n], farthest[n] = moved[0][0], max(d for _, d in moved)
                back[n] = away[-1][1] < RETURNED * farthest[n]
        if not began:
            raise ResolutionError(f"memory saw none of {nodes} move")
        if order == "any":
            return sorted(began, key=lambda n: (back[n], -farthest[n], n))
        ranked = sorted(began, key=lambda n: (began[n], n))
        return ranked if order == "first" else ranked[::-1]

    def _glimpses(self, node: str) -> list[tuple[int, int]]:
        """[first, past-last) steps of each sighting after time unseen, at a new place, that lasted under
        ``SETTLED`` steps, up to the next sighting: a glimpse, and where memory put the object unseen after
        it, are no place the object went. (A learned detector's one-frame look-alike metres away takes the
        node of an object out of view there; counted as a move, that jump, or where memory then holds the
        object hidden, outranks the object the hand really carried.)"""
        spans, start, glimpse = [], None, None
        for e in self.memory.history(node):
            status = e["data"].get("status")
            sighting = status == "visible" and e["tag"] == "seen"
            if glimpse is not None and sighting:
                spans.append((glimpse, e["t"]))
                glimpse = None
            if start is None and glimpse is None and sighting and "position" in e["data"]:
                start = e["t"]
            elif start is not None and status not in (None, "visible"):
                if e["t"] - start < SETTLED:
                    glimpse = start
                start = None
        if glimpse is not None:
            spans.append((glimpse, self.memory.t + 1))
        return spans

    def _gone(self, nodes: list[str]) -> list[str]:
        """The nodes memory found missing, ranked as evidence that they left (``gone.rank_gone``)."""
        ranked = rank_gone(self.memory, nodes)
        if not ranked:
            raise ResolutionError(f"memory saw none of {nodes} go missing")
        return ranked

    def _first_on(self, nodes: list[str], support_ref: Ref) -> list[str]:
        """The nodes ranked by how near where memory first saw them is to the support (in xy): the
        one that stood on it first. Only nodes first seen within the support's footprint (plus
        ``ON_SLACK``) count."""
        support = self.resolve(support_ref)[0]
        centre, reach = self.position(support)[:2], self.size(support)[:2].max() / 2 + ON_SLACK
        away = {n: float(np.linalg.norm(self.position(n, "first")[:2] - centre)) for n in nodes if n != support}
        near = sorted((n for n in away if away[n] <= reach), key=lambda n: (away[n], n))
        if not near:
            raise ResolutionError(f"memory saw nothing stand on the {support_ref} ({support})")
        return near

    def _by_colour(self, nodes: list[str], colour: str) -> list[str]:
        named = [n for n in nodes if self.attrs(n).get("colour") == colour]
        if named:
            return named
        if self.target_rgb is not None:
            # A colour word the namer does not use (lime, ...) or did not use for it (a brown mug in bright light
            # named orange): rank by the goal's own colour, keeping only those about as near it as the nearest
            # (views of one object), not the other colours of the class.
            near = {n: colour_distance(self.attrs(n)["rgb"], self.target_rgb) for n in nodes}
            best = min(near.values())
            return sorted((n for n in nodes if near[n] <= best + COLOUR_SLACK), key=lambda n: (near[n], n))
        named = [n for n in nodes if self.attrs(n).get("colour") == COLOUR_WORDS.get(colour)]
        if named:  # without the goal's colour, the namer's name for the word (a "lime bottle" asked for,
            return named  # no node named lime, a blue piece of a dumbbell named bottle among them)
        if len({self.attrs(n).get("colour") for n in nodes}) <= 1:
            return nodes
        raise ResolutionError(f"no {colour} one among {nodes}")

    def _first_colour(self, node: str) -> str:
        history = self.memory.history(node)
        return str(history[0]["data"].get("colour", "")) if history else ""

    def _time_in_state(self, node: str, state: str) -> int:
        """Steps the node was remembered in ``state`` (from its state events)."""
        total, since = 0, None
        for e in self.memory.history(node):
            s = e["data"].get("state")
            if s == state and since is None:
                since = e["t"]
            elif s is not None and s != state and since is not None:
                total += max(e["t"] - since, 1)
                since = None
        if since is not None:
            total += max(self.memory.t - since, 1)
        return total

    def _holding(self, nodes: list[str], inner_ref: Ref) -> list[str]:
        inner = self.resolve(inner_ref)[0]
        inside = [n for n in nodes if inner in self.memory.objects_in(n)]
        holder = self.holder(inner)
        if holder in nodes and (not inside or holder in inside):
            return [holder] + [n for n in inside if n != holder]  # of several, the one holder() names
        if inside:
            return inside
        # Not remembered inside anything: the candidate nearest to where it was last seen.
        p = self.position(inner)[:2]
        return sorted(nodes, key=lambda n: float(np.linalg.norm(self.position(n)[:2] - p)))

    def _by_shown_colour(self, nodes: list[str], shower_cls: str) -> list[str]:
        """Nodes ranked by closeness to the most saturated colour the shower was seen with."""
        memory = self.memory
        changed = {n for n in memory.find() if any(memory.when(tag, n) for tag in COLOUR_TAGS)}
        showers = memory.find(cls=shower_cls) or sorted(changed - set(nodes))
        if not memory.find(cls=shower_cls):
            # No class labels: the showers are what changed colour, the answers what never did.
            showers = sorted(changed)
            nodes = [n for n in nodes if n not in changed]
        colours = [e["data"]["rgb"] for s in showers for e in memory.history(s) if "rgb" in e["data"]]
        if not colours or not nodes:
            raise ResolutionError(f"memory never saw the {shower_cls} show a colour")
        shown = max(colours, key=_saturation)
        return sorted(nodes, key=lambda n: colour_distance(self.attrs(n)["rgb"], shown))


def _saturation(rgb) -> float:
    rgb = np.asarray(rgb, dtype=np.float64)
    return float((rgb.max() - rgb.min()) / max(rgb.max(), 1e-6))


def heard_at(memory, text: str) -> int | None:
    """The memory time the instruction ``text`` was last heard (``memory.hear``), or None."""
    times = [t for t, said in memory.notes("instruction") if said == text]
    return times[-1] if times else None


def told_for_later(memory) -> Goal:
    """The first goal the agent was told to keep for later, from the instructions memory noted."""
    for _, text in memory.notes("instruction"):
        try:
            later = parse(text).later
        except GrammarError:
            continue
        if later is not None:
            return later
    raise ResolutionError("memory holds no instruction told for later")
