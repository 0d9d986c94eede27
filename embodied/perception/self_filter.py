"""The robot's own hand in its camera images, from proprioception (a robot self-filter).

    hand = hand_pixels(depth, K, cam_to_world, proprio)   # (H,W) bool: pixels on the hand or fingers

The arm knows where its hand is: the TCP's position and orientation and the
gripper's opening are in ``proprio``. Pixels whose back-projected points fall
inside the hand's volume (the palm and the wrist above it, and each finger
beside the slot between them) are the robot's own body, whatever a learned
segmenter calls them; a few fingertip pixels that it groups with the button
under them would otherwise lift the button's box to the fingers. The slot
between the fingers is left alone, so a held object stays an object.

Volumes are in the TCP frame (the Panda's hand frame, z from the palm
towards the fingertips, fingers sliding along y; ``scenes/panda/panda.xml``),
grown by ``margin`` for depth noise and pixel footprints. Workcell arm only:
other robots' proprio (no TCP) gives no pixels.
"""

from __future__ import annotations

import numpy as np

from embodied.perception.geometry import back_project

WORKCELL_PROPRIO_DIM = 22  # qpos 7, qvel 7, TCP pos 3, TCP quat (w,x,y,z) 4, gripper width 1
FINGERTIP_BELOW = 0.012  # m past the TCP along the tool axis
FINGER_ROOT = 0.045  # m before the TCP: where the fingers leave the palm
FINGER_HALF_X = 0.010  # m, the fingers' half-thickness across the slot's plane
FINGER_DEPTH = 0.018  # m of finger beyond the slot on each side
PALM_HALF = (0.025, 0.09)  # m, the palm box's half-sizes (x, y)
WRIST_RADIUS = 0.045  # m, link 7 above the palm
REACH_UP = 0.30  # m above the TCP taken for the palm, the wrist and what carries them
TIP_MARGIN = 0.0  # m past the fingertips: none, so a cap they press on stays the button


def _rotation(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of a unit quaternion (w, x, y, z)."""
    w, x, y, z = q / max(float(np.linalg.norm(q)), 1e-12)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def in_hand(points: np.ndarray, proprio: np.ndarray, margin: float = 0.006) -> np.ndarray:
    """(N,) bool: which world points (N,3) m lie on the hand, fingers or wrist of the arm in ``proprio``."""
    proprio = np.asarray(proprio, dtype=np.float64)
    if proprio.shape != (WORKCELL_PROPRIO_DIM,) or not len(points):
        return np.zeros(len(points), bool)
    tcp, quat, width = proprio[14:17], proprio[17:21], float(proprio[21])
    local = (np.asarray(points, np.float64) - tcp) @ _rotation(quat)  # rows: the points in the TCP frame
    x, y, z = np.abs(local[:, 0]), np.abs(local[:, 1]), local[:, 2]
    half_slot = max(width / 2, 0.0)
    # To the fingertips and no further: what they press on or stand on lies right against them.
    fingers = ((z >= -FINGER_ROOT - margin) & (z <= FINGERTIP_BELOW + TIP_MARGIN) & (x <= FINGER_HALF_X + margin)
               & (y >= half_slot - margin / 2) & (y <= half_slot + FINGER_DEPTH + margin))
    palm = ((z < -FINGER_ROOT - margin) & (z >= -REACH_UP) & (x <= PALM_HALF[0] + margin)
            & (y <= PALM_HALF[1] + margin))
    wrist = (z < -FINGER_ROOT - margin) & (z >= -REACH_UP) & (np.hypot(x, y) <= WRIST_RADIUS + margin)
    return fingers | palm | wrist


def hand_pixels(depth: np.ndarray, K: np.ndarray, cam_to_world: np.ndarray, proprio: np.ndarray | None,
                margin: float = 0.006) -> np.ndarray:
    """(H,W) bool: the pixels of depth (H,W) m (0 = no return) that see the arm's hand (none without a TCP)."""
    out = np.zeros(depth.shape, bool)
    if proprio is None or np.asarray(proprio).shape != (WORKCELL_PROPRIO_DIM,):
        return out
    v, u = np.nonzero(depth > 0)
    if not len(v):
        return out
    z = depth[v, u].astype(np.float64)
    points = back_project(u.astype(np.float64), v.astype(np.float64), z, np.asarray(K, np.float64),
                          np.asarray(cam_to_world, np.float64))
    out[v, u] = in_hand(points, proprio, margin)
    return out
