"""The one place where a class name means something to memory: what a thing of that class affords.

Memory code asks what a node can do (``affords(cls).pressable``), never what it is called; a test checks
that no other memory module holds a class name. The detector's vocabulary is open: a label the table
does not know is a plain graspable object. Each affordance says what memory makes of such a thing.
"""

from __future__ import annotations

from dataclasses import dataclass

PHYSICAL = ("object", "container", "articulated", "surface")  # the node kinds of things (with a track)
KINDS = (*PHYSICAL, "place", "room", "agent")


@dataclass(frozen=True)
class Affordances:
    kind: str = "object"  # the node kind in the scene graph (see KINDS)
    # it lights up: a change of its colour is news (a flash, a colour shown), and a detector that names what it
    # sees may name it otherwise while lit
    emissive: bool = False
    pressable: bool = False  # a cap pressed in place: it never moves; it is judged pressed or released
    prismatic: bool = False  # it slides out of a housing on a joint: judged open or shut along its slide
    jointed: bool = False  # it moves only on its joint: never carried off, never found elsewhere
    mounted: bool = False  # fixed in place (a screen on its stand): a view that seems to move it shows part of it
    container: bool = False  # it holds things: what vanishes within it is hidden there
    # a rigid container whose contents travel with it (a cup over a ball) and stay behind when it is lifted clear
    carries: bool = False
    support: bool = False  # things rest on it; furniture is seen in pieces and grows from them
    housing: bool = False  # prismatic parts slide out of it (a cabinet's drawers)
    graspable: bool = True  # the hand may take it
    structure: bool = False  # floor and walls: in no room
    shape_only: bool = False  # a size class a geometric detector names by its box: the label says nothing of identity

    @property
    def fixed(self) -> bool:
        """Never moves by itself: supports, housings, mounted things and parts on a joint."""
        return self.support or self.housing or self.jointed or self.mounted

    @property
    def anchored(self) -> bool:
        """Never moves at all (a part that slides does, along its joint)."""
        return self.fixed and not self.prismatic


_CUP = Affordances(kind="container", container=True, carries=True)
_SUPPORT = Affordances(kind="surface", support=True, graspable=False)
_STRUCTURE = Affordances(kind="surface", support=True, graspable=False, structure=True)
_HOUSING = Affordances(kind="surface", support=True, housing=True, graspable=False)
_PRESSABLE = Affordances(kind="articulated", jointed=True, pressable=True, emissive=True, graspable=False)
_SIZE = Affordances(shape_only=True)

TABLE: dict[str, Affordances] = {
    "room": Affordances(kind="room", graspable=False),
    **dict.fromkeys(("cup", "bowl", "box", "bin", "basket"), _CUP),
    "drawer": Affordances(kind="container", container=True, prismatic=True, jointed=True, graspable=False),
    "drawer_unit": Affordances(kind="container", container=True, prismatic=True, jointed=True, housing=True,
                               graspable=False),
    **dict.fromkeys(("button", "switch"), _PRESSABLE),
    **dict.fromkeys(("door", "lever"), Affordances(kind="articulated", jointed=True, graspable=False)),
    "cue_panel": Affordances(emissive=True, mounted=True, graspable=False),
    **dict.fromkeys(("table", "pad", "surface", "shelf", "counter", "desk", "bed", "sofa", "couch", "rug",
                     "wardrobe", "bookshelf", "coffee_table", "nightstand", "armchair", "fridge"), _SUPPORT),
    **dict.fromkeys(("floor", "wall", "walls", "ceiling", "plane"), _STRUCTURE),
    **dict.fromkeys(("cabinet", "dresser"), _HOUSING),
    **dict.fromkeys(("flat", "small", "medium", "tall", "large"), _SIZE),
}
PLAIN = Affordances()


def affords(cls: str) -> Affordances:
    """What a thing of class ``cls`` affords (a plain graspable object for an unknown label)."""
    return TABLE.get(cls, PLAIN)


def kind_of(cls: str) -> str:
    return affords(cls).kind


def classes_with(flag: str) -> frozenset[str]:
    """The known classes with affordance ``flag`` set (``"pressable"``, ``"fixed"``, ...)."""
    return frozenset(c for c, a in TABLE.items() if getattr(a, flag))


# Class sets other stages read (evaluation against the truth, room assignment).
ARTICULATED_CLASSES = classes_with("jointed")
HOUSING_CLASSES = classes_with("housing")
SIZE_CLASSES = classes_with("shape_only")
STRUCTURE_CLASSES = classes_with("structure")
