"""Data types of the perception stage: configuration, object observations, camera views.

Units: metres, world frame (z up, table top at z = 0 in the workcell), time in
control steps. Colours are RGB in [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MODES = ("masks", "geometric", "learned")


@dataclass
class PerceptionConfig:
    """Knobs of :class:`embodied.perception.Perceiver`.

    The defaults keep a 2-camera 128x128 frame within a few milliseconds on
    two cores: instances are subsampled in pixel space before any open3d call,
    and big instances (table, floor) get a coarser voxel so every downsampled
    cloud stays near ``max_points``.
    """

    mode: str = "masks"  # "masks" (rendered instance masks), "learned" (a trained RGB-D segmenter, no masks)
    # or "geometric" (RANSAC + DBSCAN, no masks)
    segmenter: str = ""  # learned mode: a segmenter run folder or weights file ("": the shipped weights)
    # Learned mode: pixels on the arm's own hand (from proprioception, embodied.perception.self_filter) are
    # taken out of every predicted mask.
    self_filter: bool = True
    # Learned mode: a piece of fewer valid pixels than this, its box within piece_gap m of a bigger
    # observation of its class and colour in the same camera, is part of it (an occluder cut them apart);
    # of a class whose objects never touch one another (LearnedSegmenter.touching), a piece of any size is.
    piece_pixels: int = 12
    piece_gap: float = 0.02
    singular_gap: float = 0.06  # ... and within this, for a class whose objects never touch one another
    # Learned mode: a detection thinner than this (m) along two axes is a line, an edge's sliver the regions
    # cut out (a textured table's rim, a shadow's border), no object: left out. 0: kept.
    line_width: float = 0.005
    # Learned mode: a view under line_width tall, level within this (m) with a table or floor seen by its
    # camera, is a patch of that surface (a table of the block's colour), no thing: left out. 0: kept.
    # Classes in flush_kept lie level with their surroundings by design (a pressed button, a shut drawer).
    flush_tolerance: float = 0.001
    flush_kept: tuple[str, ...] = ("pad", "button", "drawer")
    # Learned mode: line_width and flush_tolerance (and the flat test beside it) grow by this many stds of a
    # view's point noise (ObjectObservation.noise, from the camera's measured depth noise; 0 for a noiseless
    # image): a noisy camera thickens a line and lifts a patch's top by about one. 0: the fixed figures.
    filter_noise_stds: float = 2.0
    cameras: tuple[str, ...] = ()  # empty: every camera found in the observation
    voxel: float = 0.01  # m, finest voxel of the downsampled object clouds
    max_pixels: int = 256  # per instance, taken on a regular stride before back-projection
    max_points: int = 96  # target size of a downsampled cloud (sets the adaptive voxel)
    min_pixels: int = 4  # fewer valid pixels than this: no detection
    outlier_neighbors: int = 6  # statistical outlier removal: k nearest neighbours (open3d); objects with
    # at most 2k points skip the filter
    outlier_std: float = 2.0  # ... and std ratio; 0 disables it
    outlier_impl: str = "grid"  # "grid" (density statistic, fast; see clouds.py) or "open3d"
    ignore_labels: tuple[str, ...] = ("robot",)  # the agent's own body is known from proprioception
    min_depth: float = 0.03  # m; closer returns are the robot's own fingers or lens noise
    # m: a neighbouring pixel this much nearer than a mask's edge pixel (or occluder_noise_stds of the image's
    # depth noise there, if more) is a surface in front of the object: an arm, a drawer's front, another thing.
    # Half a small block: a step of the object's own surface (a face seen edge-on) stays under it.
    occluder_jump: float = 0.02
    occluder_noise_stds: float = 5.0
    max_depth: float = 6.0  # m
    # Robustness test corruptions (applied before anything else; seeded).
    shuffle_ids: bool = False  # permute instance ids every frame: ids then carry no identity
    depth_noise: float = 0.0  # m, std of Gaussian depth noise at 1 m, growing with z^2
    dropout: float = 0.0  # fraction of depth pixels set to 0 (no return)
    mask_erosion: int = 0  # pixels eroded off every instance mask
    seed: int = 0
    # Geometric mode.
    plane_distance: float = 0.006  # m, RANSAC inlier distance
    plane_min_inliers: int = 200  # smaller planes are objects' faces, not supports
    max_planes: int = 3
    cluster_eps: float = 0.025  # m, DBSCAN neighbourhood
    cluster_min_points: int = 5
    small_min_points: int = 2  # a second pass over DBSCAN's noise keeps groups this small ...
    small_max_height: float = 0.05  # m ... that rest on the support and are at most this big
    geometric_voxel: float = 0.008  # m, scene cloud downsampling before RANSAC
    geometric_max_pixels: int = 6000  # per camera, before back-projection
    max_object_height: float = 0.3  # m above the support; taller clusters are the arm
    tcp_clearance: float = 0.045  # m; clusters this close to the TCP are the gripper
    hand_radius: float = 0.1  # m (xy) around the TCP: points from just below the TCP up are the hand
    robot_base: tuple[float, float] = (0.0, 0.0)  # m, world xy of the arm's base (workcell origin)
    robot_base_radius: float = 0.13  # m; clusters reaching this close to the base are the arm

    def validate(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"perception mode must be one of {MODES}, got {self.mode!r}")
        if self.voxel <= 0 or self.max_points < 8 or self.max_pixels < self.min_pixels:
            raise ValueError("voxel must be > 0, max_points >= 8 and max_pixels >= min_pixels")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.outlier_impl not in ("grid", "open3d"):
            raise ValueError(f"outlier_impl must be 'grid' or 'open3d', got {self.outlier_impl!r}")
        if self.depth_noise < 0 or self.mask_erosion < 0:
            raise ValueError("depth_noise and mask_erosion must be >= 0")
        if self.line_width < 0 or self.flush_tolerance < 0 or self.filter_noise_stds < 0:
            raise ValueError(f"line_width and flush_tolerance must be >= 0 m and filter_noise_stds >= 0, got "
                             f"{self.line_width}, {self.flush_tolerance} and {self.filter_noise_stds}")
        if self.piece_pixels < 0 or self.piece_gap < 0 or self.singular_gap < 0:
            raise ValueError(f"piece_pixels, piece_gap and singular_gap must be >= 0, got {self.piece_pixels}, "
                             f"{self.piece_gap} and {self.singular_gap}")


@dataclass
class ObjectObservation:
    """One object seen by one camera at one time.

    ``key`` names the detection within its frame only (``"<camera>#<id>"``);
    identity across frames is the memory's job.
    """

    key: str
    label: str  # class from the detector's vocabulary (masks) or a shape class (geometric)
    rgb: np.ndarray  # (3,) float32 mean colour in [0, 1]
    colour: str  # colour name, see embodied.perception.colour
    centroid: np.ndarray  # (3,) float64 m, mean of the downsampled points
    box_min: np.ndarray  # (3,) float64 m, axis-aligned box
    box_max: np.ndarray  # (3,) float64 m
    points: np.ndarray  # (N,3) float32 m, voxel-downsampled, outliers removed
    n_points: int  # valid pixels of the instance before any subsampling
    camera: str
    t: int
    truncated: bool = False  # the mask touches the image border: the object may extend beyond
    occluded: bool = False  # a nearer surface borders the mask: part of the object may be hidden behind it
    shape: str = ""  # coarse shape class: flat / small / medium / large / tall
    # (3,) m: std of one point along each world axis from the camera's depth noise at this range (0: none
    # measured); memory derives its tolerances from it
    noise: np.ndarray = field(default_factory=lambda: np.zeros(3))

    @property
    def center(self) -> np.ndarray:
        """(3,) m, centre of the axis-aligned box."""
        return (self.box_min + self.box_max) / 2

    @property
    def extent(self) -> np.ndarray:
        """(3,) m, size of the axis-aligned box."""
        return self.box_max - self.box_min


@dataclass
class CameraView:
    """What the memory needs of one camera to decide what it should see."""

    name: str
    depth: np.ndarray  # (H,W) float32 m, z-depth, 0 = no return (NaN already zeroed)
    K: np.ndarray  # (3,3) pinhole intrinsics in pixels
    cam_to_world: np.ndarray  # (4,4) OpenCV axes: x right, y down, z forward
    world_to_cam: np.ndarray  # (4,4) inverse of cam_to_world
    depth_sigma: float = 0.0  # m: std of depth at 1 m range, measured from this image (it grows with range^2)

    def depth_std(self, z) -> np.ndarray:
        """Std (m) of a depth reading at range ``z`` (m): ``depth_sigma * z^2``."""
        return self.depth_sigma * np.square(z)


@dataclass
class Frame:
    """Perception output for one time step."""

    t: int
    objects: list[ObjectObservation]
    views: list[CameraView]
    proprio: np.ndarray | None = None  # (P,) float32, robot layout (TCP pos at 14:17, width at 21)
    extras: dict = field(default_factory=dict)  # e.g. detected support planes (geometric mode)
