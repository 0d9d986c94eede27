"""Configuration of the memory and the class -> node-kind tables.

Numbers follow ConceptGraphs (association by the fraction of a detection's
points within one 2.5 cm voxel of an object's points) and sizes of the
workcell props (4 cm blocks, 8 cm cups, 24 cm drawers).
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("object", "container", "articulated", "surface", "place", "room", "agent")

# What a class label makes of a node. Unknown labels are plain objects.
CONTAINER_CLASSES = frozenset({"cup", "drawer", "drawer_unit", "bowl", "box", "bin", "basket"})
# Parts that move on a joint; "articulated" is their kind unless they also contain things (drawers).
ARTICULATED_CLASSES = frozenset({"drawer", "drawer_unit", "button", "door", "switch", "lever"})
# Supports and furniture; housings hold articulated parts (part_of edges).
SURFACE_CLASSES = frozenset(
    {
        "table",
        "pad",
        "surface",
        "shelf",
        "counter",
        "floor",
        "desk",
        "bed",
        "sofa",
        "couch",
        "plane",
        "rug",
        "cabinet",
        "dresser",
        "wardrobe",
        "bookshelf",
        "coffee_table",
        "nightstand",
        "armchair",
        "fridge",
        "wall",
    }
)
# m: a view wider than this along x or y is furniture whatever it is called (its node grows from pieces).
FURNITURE_WIDTH = 0.5
# Coarse size classes the geometric detector gives clusters of no recognised shape (see
# embodied.perception.geometry.shape_class); with strict_class off they may continue any track.
SIZE_CLASSES = frozenset({"flat", "small", "medium", "tall", "large"})
HOUSING_CLASSES = frozenset({"cabinet", "dresser", "drawer_unit"})
ROOM_CLASSES = frozenset({"room"})
# Containers whose content cannot be seen once closed or put down over it.
RIGID_CONTAINERS = frozenset({"cup", "bowl", "box", "bin", "basket"})


def kind_of(cls: str) -> str:
    """Node kind of a class label."""
    if cls in ROOM_CLASSES:
        return "room"
    if cls in CONTAINER_CLASSES:
        return "container"
    if cls in ARTICULATED_CLASSES:
        return "articulated"
    if cls in SURFACE_CLASSES:
        return "surface"
    return "object"


@dataclass
class MemoryConfig:
    """Knobs of :class:`embodied.memory.SpatialMemory` (metres, control steps)."""

    assoc_voxel: float = 0.025  # m; a detection point overlaps an object if a point of it lies within one voxel
    min_overlap: float = 0.25  # fraction of detection points; below this it is not the same place
    move_gate: float = 0.15  # m; an unmatched detection may continue a same-class track this close
    # A node first seen at most this many steps after a same-class, same-colour node was last seen,
    # this close to it, and never seen together with it, is that node picked up again.
    handoff_steps: int = 3
    handoff_gate: float = 0.5  # m
    reid_any_distance: bool = True  # an unseen object may reappear anywhere if it is the only candidate
    # m: ... but one merely out of view (lost at rest, not found missing) only this near its remembered
    # place. For a learned detector, whose stray views of furniture take objects' names: a one-frame
    # "lamp" 4.8 m off had taken the lamp's node, and the agent drove there (ObjectRevisit 930043). None:
    # any distance.
    reid_out_of_view_reach: float | None = None
    colour_tolerance: float = 0.18  # RGB distance (see perception.colour.colour_distance)
    # Re-identification at any distance under another colour name: the two looks may differ in brightness
    # by at most this factor (a room's light, not 14x: a white vase seen dim, named grey, is no black vase,
    # though the tolerance above, which weighs brightness little, lets achromatic colours through).
    reid_brightness_ratio: float = 3.0
    # A camera that sees a still object this many times brighter (or dimmer) than it last did saw a light
    # go on (off): logged even when the colour name stays (a white light on a grey button).
    brightness_ratio: float = 1.4
    strict_class: bool = True  # masks mode: classes must match; geometric mode shape classes may differ
    # A learned detector's labels flicker (a plate read as a book now and then): a detection of another class
    # may then continue a node it lies on (half its points on the node's own), and the node takes the class
    # most of its detections gave (Track.votes). Off for the renderer's masks, whose classes never flicker.
    class_votes: bool = False
    # A detection cut by the image's edge that matches no node makes one (False: only furniture's do). A
    # learned detector's pieces at the border (the corner of a panel in the wrist camera, split in two)
    # are its least reliable; the object becomes one when a camera sees it whole.
    new_from_truncated: bool = True
    # A drawer view under 0.7 times as wide across its slide as the camera's last is partly hidden, not a
    # move (see articulation.py). For a learned detector, whose drawer views split and shrink around the
    # arm; on the renderer's masks a pulled drawer's narrower view is real and the rule stalls the pull.
    drawer_narrow_views: bool = False
    # A camera's views of drawers that lie in one remembered drawer's slide corridor (across the slide within
    # its width, at its height) are pieces of it an occluder cut apart (the arm pulling it open hides its
    # middle), joined before association; a view wider across the slide than 1.75 times the row's median
    # drawer is several drawers seen as one, left out. For a learned detector; the renderer's masks never
    # cut or join objects.
    drawer_pieces: bool = False
    # A camera's views of a plain object's class and colour that lie, two or more together, within its
    # remembered box are pieces of it (a block's top and side), joined before association; a view 1.5 times
    # wider than a rigid object of its class seen 10 times, with another such beside, is both, left out, as
    # is a view of a plain object's class wider than furniture (the object joined with what it stands on).
    # For a learned detector, whose regions can split an object's faces or join two objects; the
    # renderer's masks never do.
    object_pieces: bool = False
    # A drawer with no slide vote of its own takes its row's: geometric mode sees an open drawer apart
    # from its housing (its tray's inner half hidden), and such a view cannot vote. Off for a learned
    # detector, whose stray drawer fragments would then be judged and slide what lies near them.
    row_slide: bool = False
    move_tol: float = 0.015  # m; centre shift (same camera) that counts as motion
    # ... or this many pixels at the object's range, if more: a far object's centre wanders by a pixel
    # or two from view to view as the camera moves (4 cm at 3 m for a 96 px, 70 degree camera).
    move_tol_pixels: float = 1.0
    log_tol: float = 0.01  # m; position change that is written to the event log
    # A node seen fewer times than this is tentative: find() and resolve() leave it out. A learned detector's
    # stray piece of one frame (a drawer's edge read as a cup) then never enters a plan; the renderer's masks
    # need no such wait (1). ConceptGraphs keeps an object after 3 detections.
    min_sightings: int = 1
    max_object_points: int = 256  # fused cloud cap per object
    # Visibility: a remembered point is "seen through" if the depth image reads
    # farther than it by more than this (m, plus a fraction of the depth).
    depth_tol: float = 0.01
    depth_tol_rel: float = 0.01
    min_projected: int = 3  # fewer in-image points: no verdict from that camera
    missing_fraction: float = 0.5  # seen-through fraction that marks an object missing
    near_dist: float = 0.15  # m, "near" edges between objects
    on_tol: float = 0.02  # m, gap between an object's bottom and a support's top
    contain_margin: float = 0.01  # m, container box growth for "in"
    # Articulation.
    drawer_open_delta: float = 0.04  # m of travel that reads as open
    # m of cap travel that reads as pressed: past the 6 mm where a cap clicks, with a margin for the
    # fingertip estimate (a shallower push that memory took for a press was never retried)
    button_press_delta: float = 0.0065
    # Grasping from proprioception (workcell layout).
    grasp_radius: float = 0.05  # m, TCP to object centre
    grasp_min_width: float = 0.004  # m; narrower and the fingers closed on nothing
    grasp_max_width: float = 0.075  # m; wider and the gripper is open
    fingertip_below_tcp: float = 0.012  # m; Panda fingertips reach this far below the TCP site
    # Episodic log.
    keyframe_every: int = 128  # events between keyframes, at least (and at least one per node: a keyframe
    # costs ~50 bytes per node)
    # Places (navigation): a new place node every this many metres of travel.
    place_spacing: float = 1.0
    agent_log_tol: float = 0.05  # m of agent travel written to the log

    def validate(self) -> None:
        if not 0 < self.min_overlap <= 1:
            raise ValueError(f"min_overlap must be in (0, 1], got {self.min_overlap}")
        if self.assoc_voxel <= 0 or self.move_gate <= 0 or self.keyframe_every < 1 or self.min_sightings < 1:
            raise ValueError("assoc_voxel and move_gate must be > 0, keyframe_every and min_sightings >= 1")
        if self.reid_out_of_view_reach is not None and not self.reid_out_of_view_reach >= 0:
            raise ValueError(f"reid_out_of_view_reach must be None or >= 0 m, got {self.reid_out_of_view_reach}")
