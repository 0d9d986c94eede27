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


WORKCELL_PROPRIO_DIM = 22  # qpos 7, qvel 7, TCP pos 3, TCP quat (w,x,y,z) 4, gripper width 1
FINGERTIP_BELOW = 0.012  # m past the TCP along the tool axis
FINGER_ROOT = 0.045  # m before the TCP: where the fingers leave the palm
FINGER_HALF_X = 0.010  # m, the fingers' half-thickness across the slot's plane
FINGER_DEPTH = 0.018  # m of finger beyond the slot on each side
PALM_HALF = (0.025, 0.09)  # m, the palm box's half-sizes (x, y)
# m past the fingers' root that the palm's two broad side faces (|x| = PALM_HALF[0]) reach: a wrist camera
# shifted on its mount sees their lower edge (a strip a few mm wide, which joins a cup under the hand
# and raises its box far over a cup's height). Only the faces: a held block fills the slot
# between them below the root.
PALM_SIDE_BELOW = 0.005
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


def _inside(x: np.ndarray, y: np.ndarray, z: np.ndarray, width: float, margin: float) -> np.ndarray:
    """Which points, given in the TCP frame (any shape, m), lie on the hand, fingers or wrist of a gripper
    ``width`` m open."""
    x, y = np.abs(x), np.abs(y)
    half_slot = max(width / 2, 0.0)
    # To the fingertips and no further: what they press on or stand on lies right against them.
    fingers = ((z >= -FINGER_ROOT - margin) & (z <= FINGERTIP_BELOW + TIP_MARGIN) & (x <= FINGER_HALF_X + margin)
               & (y >= half_slot - margin / 2) & (y <= half_slot + FINGER_DEPTH + margin))
    above = (z < -FINGER_ROOT - margin) & (z >= -REACH_UP)
    palm = (x <= PALM_HALF[0] + margin) & (y <= PALM_HALF[1] + margin)
    wrist = x * x + y * y <= (WRIST_RADIUS + margin) ** 2
    sides = ((z < -FINGER_ROOT + PALM_SIDE_BELOW + margin) & (z >= -REACH_UP) & (x >= PALM_HALF[0] - margin / 2)
             & (x <= PALM_HALF[0] + margin) & (y <= PALM_HALF[1] + margin))
    return fingers | (above & (palm | wrist)) | sides


def _tcp_pose(proprio: np.ndarray) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The TCP's position (3,) m, rotation (3,3) and the gripper's width (m) in a workcell ``proprio``."""
    proprio = np.asarray(proprio, dtype=np.float64)
    if proprio.shape != (WORKCELL_PROPRIO_DIM,):
        return None
    return proprio[14:17], _rotation(proprio[17:21]), float(proprio[21])


def in_hand(points: np.ndarray, proprio: np.ndarray, margin: float = 0.006) -> np.ndarray:
    """(N,) bool: which world points (N,3) m lie on the hand, fingers or wrist of the arm in ``proprio``."""
    pose = _tcp_pose(proprio)
    if pose is None or not len(points):
        return np.zeros(len(points), bool)
    tcp, rotation, width = pose
    local = (np.asarray(points, np.float64) - tcp) @ rotation  # rows: the points in the TCP frame
    return _inside(local[:, 0], local[:, 1], local[:, 2], width, margin)


def hand_pixels(depth: np.ndarray, K: np.ndarray, cam_to_world: np.ndarray, proprio: np.ndarray | None,
                margin: float = 0.006) -> np.ndarray:
    """(H,W) bool: the pixels of depth (H,W) m (0 = no return) that see the arm's hand (none without a TCP).
    Whole-image float32 planes: each pixel's point goes from the camera's frame to the TCP's by one affine
    map (a tenth of the time of back-projecting the pixels one by one)."""
    pose = None if proprio is None else _tcp_pose(proprio)
    if pose is None:
        return np.zeros(depth.shape, bool)
    tcp, rotation, width = pose
    K, cam_to_world = np.asarray(K, np.float64), np.asarray(cam_to_world, np.float64)
    # TCP frame = R_tcp^T (R_cam p_cam + t_cam - tcp); p_cam = z * ((u - cx) / fx, (v - cy) / fy, 1).
    A = rotation.T @ cam_to_world[:3, :3]
    b = rotation.T @ (cam_to_world[:3, 3] - tcp)
    h, w = depth.shape
    z = depth.astype(np.float32)
    ray_u = ((np.arange(w) - K[0, 2]) / K[0, 0]).astype(np.float32)
    ray_v = ((np.arange(h) - K[1, 2]) / K[1, 1]).astype(np.float32)[:, None]
    local = [(np.float32(A[k, 0]) * ray_u + np.float32(A[k, 1]) * ray_v + np.float32(A[k, 2])) * z + np.float32(b[k])
             for k in range(3)]
    return (z > 0) & _inside(*local, width, np.float32(margin))
