"""The memory's knobs, one dataclass per component, every one with its unit and why.

    MemoryConfig()                              # the renderer's masks
    MemoryConfig.for_detector("learned")        # a detector's profile (see DetectorProfile)
    MemoryConfig(detector=DetectorProfile.of("learned", object_pieces=False))   # one rule off, an ablation

Lengths are metres, times control steps. Tolerances that depend on the sensor are ``SensorPrior.k``
noise stds of the measurement at hand (perception measures each camera's depth noise) with a floor for a
noiseless renderer; the floors come from the scene (4 cm blocks, 8 cm cups, 18 cm drawer fronts) and the
robot (a 6 mm button click, a 12 mm fingertip).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from embodied.memory.affordances import ARTICULATED_CLASSES, HOUSING_CLASSES, SIZE_CLASSES, kind_of  # noqa: F401
from embodied.memory.profiles import DETECTORS, RULES, DetectorProfile


@dataclass
class SensorPrior:
    """What memory assumes of its sensors beyond the depth noise perception measures in every image."""

    k: float = 3.0  # noise stds a difference must exceed to be real (0.3 % of Gaussian noise passes)
    calibration_shift: float = 0.003  # m RMS: two cameras' calibrations disagree by this much ...
    calibration_tilt: float = 0.3  # degrees RMS ... and this much rotation (a good hand-eye calibration)
    proprio_sigma: float = 0.001  # m: the TCP from joint readings (kinematic offsets of a fraction of a mrad)
    face_share: float = 4.0  # a box face rests on about a quarter of a view's points (its std: the points' over sqrt)


@dataclass
class BeliefConfig:
    """Evidence accumulated as log-odds (embodied.memory.beliefs)."""

    cap: float = 6.0  # the most one frame adds: a measurement 3 noise stds past the threshold (log-odds 6.6)
    limit: float = 4.0  # beliefs stay within +-limit, so one clear frame (cap) turns them past enter
    enter: float = 2.0  # log-odds 2 (88 %) decides "yes", -2 "no"
    single_frame: bool = False  # the ablation: each decision on one frame's evidence alone, as thresholds made them


@dataclass
class AssociationConfig:
    """Which remembered node each view is (embodied.memory.association)."""

    voxel: float = 0.025  # m: a view point overlaps a node when a node point lies within one voxel (ConceptGraphs)
    min_overlap: float = 0.25  # share of a view's points on a node's for the same place
    move_gate: float = 0.15  # m: a view of a node's class and colour this near its predicted centre may be it, moved
    lookahead: int = 5  # steps a node's constant-velocity prediction runs ahead at most
    touch: float = 0.05  # m: boxes closer than this touch (overlap is measured only then)
    colour_tolerance: float = 0.18  # perception.colour.colour_distance within which two looks are one colour
    brightness_ratio: float = 1.4  # a still thing seen this many times brighter lit up (a grey button's light)
    reid_brightness_ratio: float = 3.0  # ... and a look-alike this much brighter or dimmer is another thing
    settle_shift: float = 0.004  # m: a view centred this near a camera's last one shows a still thing (floor)
    settle_size: float = 0.2  # ... with this share of its points more or less
    handoff_steps: int = 3  # a node lost this recently, ...
    handoff_gate: float = 0.5  # m ... this near a new one of its class and colour, hands its track over
    reid_any_distance: bool = True  # an unseen node may be found again anywhere if nothing nearer explains the view
    beside: float = 0.02  # m: a view of a pressable class centred farther outside a node's box is not of it
    slide_gate: float = 0.05  # m: a drawer view centred this far across its slide is not of it (a half front: 4.5 cm)
    lane_slack: float = 0.01  # m: a view cut by the image's edge is of a drawer only if it reaches its lane
    line: float = 0.005  # m: a view this thin along two axes is a line (an edge's sliver), no solid thing
    patch: float = 0.005  # m: a size class's view this flat is a patch of a surface: no hidden thing's view
    piece_gap: float = 0.04  # m: such a patch this near a view of its colour that found a node is a piece of it
    merged_view: float = 1.5  # a view this many times wider than two settled rigid objects it covers is both
    settled_sightings: int = 10  # a rigid object seen this often has its size
    piece_slack: float = 0.01  # m: pieces of a remembered object lie within its box grown by this
    # Costs (association.py): on a node's points 0-1.1, by nearness alone 2-3, found again 5-6.5, new spawn_cost.
    settled_cost: float = -10.0  # the camera's last look of a node is it unless ten ordinary pairs say otherwise
    lit_cap_cost: float = -12.0  # an emissive node's face named otherwise, centred over it: above even a settled look
    near_weight: float = 0.1  # ties between pairs on a node's points go to the nearer centre
    other_colour_cost: float = 1.0  # a view of another colour on the node's points (it lit up)
    other_label_cost: float = 1.0  # a view of another class on the node's points (a flickering label)
    motion_cost: float = 2.0  # a view matched by nearness alone (a move), plus distance / gate
    still_cost: float = 3.0  # a container lost at rest takes a view off its footprint after any passing one's move
    reid_cost: float = 5.0  # a node found again away from where it was, plus its rank and distance share
    reid_rank_cost: float = 0.5  # ... out of view ranks after missing or hidden
    spawn_cost: float = 7.0  # a view that becomes a new node


@dataclass
class TrackConfig:
    """How a matched view updates its node (embodied.memory.update)."""

    move_tol: float = 0.015  # m: a centre shift under this (and k noise stds) is no move: partial views jitter
    move_tol_pixels: float = 1.0  # ... or this many pixels at the object's range, if more
    creep: float = 0.003  # m: a smaller shift seen by one camera is a slow push (floor of the noise test)
    partial_points: float = 0.6  # a view with fewer than this share of the camera's last view's points is partial
    reach_out: float = 0.02  # m: a smaller view reaching this far out of the last one shows the object elsewhere
    face_thin: float = 0.005  # m: a view this thin along an axis ...
    solid: float = 0.02  # m ... on which the object is this thick shows one face of it
    nest_slack: float = 0.01  # m: a view within this of another's box lies inside it
    reference_blend: float = 0.5  # a camera's reference look moves this far toward each look showing no change
    log_tol: float = 0.01  # m: a position change written to the event log
    face_tol: float = 0.003  # m: a box face moving this far is written too (a touch or a grasp aims at faces)
    max_points: int = 256  # points a node's fused cloud keeps
    moving: float = 0.003  # m per step: a smoothed speed above this is motion
    furniture_width: float = 0.5  # m: a first view wider than this is furniture whatever it is called
    height_slack: float = 0.003  # m: a view this much shorter than a rigid object's height misses its bottom


@dataclass
class LifecycleConfig:
    """Existence, visibility, containment and duplicates (embodied.memory.lifecycle)."""

    depth_tol: float = 0.01  # m: a remembered point is seen through if the depth reads farther by this ...
    depth_tol_rel: float = 0.01  # ... plus this share of the range (and k noise stds at that range)
    min_projected: int = 3  # a camera with fewer of a node's points in its image gives no verdict
    occluded_fraction: float = 0.5  # share hidden behind something nearer: occluded
    misread: float = 0.05  # share of a node's points a depth image misreads either way (each is log(19) of evidence)
    frame_evidence: float = 3.0  # most one frame adds to absence: one frame (a glitch, a hand passing) is no missing
    samples: int = 32  # points of a node tested against the depth
    ground_band: float = 0.015  # m: depth cannot tell an object's bottom this thick from its support: no samples
    look_cell: float = 0.25  # m: cells of the ground the cameras have looked at
    look_move: float = 0.02  # m a camera moves (or look_turn degrees it turns) before its ground cells are read again
    look_turn: float = 0.5  # degrees
    glimpse: int = 5  # steps: an object seen again this briefly after leaving a container is still in it
    floating: float = 0.015  # m: an object shut in a container this far above its floor sank to it
    contain_margin: float = 0.01  # m: a container's box grows by this for what is in it
    clear: float = 0.005  # m: a cup's bottom this far above what it covered is lifted clear of it
    steady_reach: float = 0.005  # m per frame: an edge view's centre moving less is still
    steady_alone: float = 0.2  # m: ... and it makes a node only with no node of its class this near


@dataclass
class ArticulationConfig:
    """Buttons and drawers (embodied.memory.buttons, embodied.memory.drawers)."""

    click: float = 0.006  # m of cap travel where a button clicks (the tasks' press)
    slide_floor: float = 0.002  # m: a drawer's travel std on a noiseless renderer (an edge moves a fraction of a pixel)
    fingertip_below_tcp: float = 0.012  # m: Panda fingertips reach this far below the TCP
    reach_slack: float = 0.02  # m: fingers over a part's footprint grown by this are over it ...
    reach_above: float = 0.2  # m ... up to this high over its top
    open_delta: float = 0.04  # m of travel out of the housing that reads open (a drawer front is 18 cm wide)
    housing_margin: float = 0.03  # m: a shut drawer's front sits this far outside its housing
    front_min: float = 0.08  # m: a drawer view this wide shows its front, which is across the slide
    narrower: float = 0.7  # a drawer view this much narrower across its slide than the camera's last is partial
    across_shift: float = 0.01  # m: a drawer view centred this far off its slide from the last shows part of it
    row_reach: float = 1.0  # m: drawers this close are one row, which faces one way
    pull_reach: float = 0.25  # m: a drawer pulled this far out still slides out of its housing
    piece_across: float = 0.015  # m: a drawer's piece lies across its slide within its width and this
    piece_widest: float = 1.3  # a drawer node wider than this times its row's narrowest has no corridor
    merged_width: float = 1.75  # a drawer view wider than this times its row's median is several drawers ...
    span_share: float = 0.5  # ... and so is one covering this share of two whole drawers' widths,
    whole: float = 0.6  # ... whole being at least this times the median
    lookalike_slack: float = 0.04  # m around a drawer's box: a size-class view in its colour there is of it
    object_slack: float = 0.01  # m around an object's box: a drawer view's points there are the object's
    blob_cover: float = 0.5  # a size-class view covering this share of a drawer's or housing's footprint ...
    blob_wide: float = 0.08  # m ... and wider than this (two blocks) is the furniture
    top_plate: float = 0.01  # m: a size-class view this close under a housing's top is its top plate


@dataclass
class GraspConfig:
    """The hand, from proprioception (embodied.memory.body)."""

    grasp_radius: float = 0.05  # m: an object whose box is this near the TCP is what the fingers closed on
    grasp_min_width: float = 0.004  # m: narrower and the fingers closed on nothing
    grasp_max_width: float = 0.075  # m: wider and the gripper is open
    width_still: float = 5e-4  # m per step: the fingers at rest (not bouncing on contact)
    release_open: float = 0.005  # m: fingers opening this much past the grasp let go


@dataclass
class RelationConfig:
    """Edges computed from geometry (embodied.memory.spatial)."""

    near_dist: float = 0.15  # m between centres: near
    on_tol: float = 0.02  # m between an object's bottom and a support's top: on
    contain_margin: float = 0.01  # m: a container's box grows by this for "in"
    part_margin: float = 0.03  # m: a part's footprint within its housing's grown by this is part of it
    sink: float = 0.005  # m a thing's box may reach below a container's bottom and still be in it ...
    drawer_sink: float = 0.02  # m ... a drawer's (its tray floor stands 1.5 cm up: a block seen from above)


@dataclass
class LogConfig:
    """The episodic log and the agent's places."""

    keyframe_every: int = 128  # events between keyframes, at least (a keyframe costs ~50 bytes a node)
    place_spacing: float = 1.0  # m of new ground between place nodes
    agent_log_tol: float = 0.05  # m of agent travel written to the log


@dataclass
class MemoryConfig:
    """Knobs of :class:`embodied.memory.SpatialMemory`, by component."""

    detector: DetectorProfile = field(default_factory=DetectorProfile)
    sensor: SensorPrior = field(default_factory=SensorPrior)
    beliefs: BeliefConfig = field(default_factory=BeliefConfig)
    association: AssociationConfig = field(default_factory=AssociationConfig)
    track: TrackConfig = field(default_factory=TrackConfig)
    lifecycle: LifecycleConfig = field(default_factory=LifecycleConfig)
    articulation: ArticulationConfig = field(default_factory=ArticulationConfig)
    grasp: GraspConfig = field(default_factory=GraspConfig)
    relations: RelationConfig = field(default_factory=RelationConfig)
    log: LogConfig = field(default_factory=LogConfig)
    off: tuple[str, ...] = ()  # named rules switched off (RULES): ablations

    def on(self, rule: str) -> bool:
        return rule not in self.off

    @classmethod
    def for_detector(cls, name: str, **profile: Any) -> MemoryConfig:
        """The memory for detector ``name`` (masks, learned, geometric), ``profile`` fields overridden."""
        return cls(detector=DetectorProfile.of(name, **profile))

    def validate(self) -> None:
        for part in dataclasses.fields(self):
            section = getattr(self, part.name)
            for f in dataclasses.fields(section) if dataclasses.is_dataclass(section) else ():
                value = getattr(section, f.name)
                if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0 \
                        and not f.name.endswith("_cost"):  # costs may be negative (a settled look's bonus)
                    raise ValueError(f"config.{part.name}.{f.name} must be >= 0, got {value}")
        unknown = sorted(set(self.off) - set(RULES))
        if unknown:
            raise ValueError(f"config.off: unknown rule {unknown[0]!r}; rules: {', '.join(RULES)}")
        if self.detector.name not in DETECTORS:
            raise ValueError(f"config.detector.name must be one of {DETECTORS}, got {self.detector.name!r}")
        if not 0 < self.association.min_overlap <= 1:
            raise ValueError(f"config.association.min_overlap must be in (0, 1], got {self.association.min_overlap}")
        if self.association.voxel <= 0 or self.association.move_gate <= 0:
            raise ValueError("config.association.voxel and move_gate must be > 0 m")
        if self.log.keyframe_every < 1 or self.detector.min_sightings < 1:
            raise ValueError("config.log.keyframe_every and config.detector.min_sightings must be >= 1")

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, doc: dict) -> MemoryConfig:
        """The config of a saved document (``to_json``); an unknown section or knob is a ValueError naming it."""
        if not isinstance(doc, dict):
            raise ValueError(f"config: expected an object, got {type(doc).__name__}")  # noqa: TRY004
        sections = {f.name: f for f in dataclasses.fields(cls)}
        built = {}
        for name, values in doc.items():
            if name not in sections:
                raise ValueError(f"config: unknown section {name!r}")
            if name == "off":
                if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                    raise ValueError("config.off: expected a list of rule names")
                built[name] = tuple(values)
                continue
            kind = sections[name].default_factory
            if not isinstance(values, dict):
                raise ValueError(f"config.{name}: expected an object, got {type(values).__name__}")  # noqa: TRY004
            unknown = sorted(set(values) - {f.name for f in dataclasses.fields(kind)})
            if unknown:
                raise ValueError(f"config.{name}: unknown knob {unknown[0]!r}")
            for key, value in values.items():
                _check_knob(value, kind().__dict__[key], f"config.{name}.{key}")
            built[name] = kind(**values)
        config = cls(**built)
        config.validate()
        return config


def _check_knob(value: Any, default: Any, where: str) -> None:
    """``value`` of the type of the knob's ``default`` (an optional distance for a None default), finite."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = {bool: isinstance(value, bool), int: number and isinstance(value, int), float: number,
          type(None): number or value is None}.get(type(default), isinstance(value, type(default)))
    if not ok:
        raise ValueError(f"{where}: expected {type(default).__name__ if default is not None else 'a number or null'}, "
                         f"got {type(value).__name__}")
    if number and not math.isfinite(value):
        raise ValueError(f"{where}: {value!r} is not finite")
