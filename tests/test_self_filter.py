"""The robot self-filter: the arm's hand in its camera images from proprioception alone."""

from __future__ import annotations

import numpy as np

from embodied.perception.self_filter import in_hand


def _proprio(tcp=(0.4, 0.0, 0.2), width=0.04, quat=(0.0, 1.0, 0.0, 0.0)) -> np.ndarray:
    """The workcell's proprio with the tool pointing down (a half turn about x: local z = world -z)."""
    p = np.zeros(22)
    p[14:17], p[17:21], p[21] = tcp, quat, width
    return p


def test_the_hand_and_fingers_are_in_the_slot_between_them_is_not():
    p = _proprio(width=0.04)  # each finger's inner face 2 cm from the tool axis, along world -y / +y
    tcp = np.array([0.4, 0.0, 0.2])
    # local (x, y, z) -> world (x, -y, -z) for this orientation
    world = lambda local: tcp + np.array(local) * np.array([1.0, -1.0, -1.0])  # noqa: E731
    points = np.array([
        world((0.0, 0.0, 0.0)),      # the TCP: between the fingers, where a held block sits
        world((0.0, 0.015, 0.005)),  # a held 3 cm block's side, inside the slot
        world((0.0, 0.025, 0.0)),    # on a finger
        world((0.0, -0.03, -0.03)),  # on the other finger, near its root
        world((0.0, 0.05, -0.07)),   # on the palm
        world((0.0, 0.0, -0.2)),     # the wrist above
        world((0.0, 0.025, 0.02)),   # 8 mm past the fingertip: what it stands on
        world((0.1, 0.0, -0.07)),    # beside the palm
        world((0.025, -0.02, -0.049)),  # the palm's side face, 4 mm past the fingers' root
        world((0.019, 0.0, -0.045)),  # a held 4 cm block's top corner, up against the palm
    ])
    assert in_hand(points, p).tolist() == [False, False, True, True, True, True, False, False, True, False]
    # Another robot's proprio (no TCP) names no pixel.
    assert not in_hand(points, np.zeros(5)).any()


def test_on_an_expert_episode_the_filter_takes_the_robot_and_leaves_the_block():
    import gymnasium as gym

    from embodied.experts import make_expert
    from embodied.perception.geometry import back_project
    from embodied.perception.self_filter import hand_pixels

    env = gym.make("embodied/PutBlockBack-v0")
    obs, _ = env.reset(seed=3)
    expert = make_expert(env)
    expert.reset()
    robot_ids = [k for k, c in env.unwrapped.labels.items() if c == "robot"]
    block_ids = [k for k, c in env.unwrapped.labels.items() if c == "block"]
    taken = on_robot = on_block = block = wrist_robot = mismatched = 0
    for t in range(200):
        if t % 5 == 0:
            for cam in ("scene", "wrist"):
                hand = hand_pixels(obs[f"depth/{cam}"], obs[f"intrinsics/{cam}"], obs[f"extrinsics/{cam}"],
                                   obs["proprio"])
                seg = obs[f"segmentation/{cam}"]
                robot, blk = np.isin(seg, robot_ids), np.isin(seg, block_ids)
                taken += hand.sum()
                on_robot += (hand & robot).sum()
                on_block += (hand & blk).sum()
                block += blk.sum()
                wrist_robot += robot.sum() if cam == "wrist" else 0
                # The whole-image planes give what back-projecting each pixel and asking in_hand gives.
                depth = obs[f"depth/{cam}"]
                v, u = np.nonzero(depth > 0)
                points = back_project(u.astype(float), v.astype(float), depth[v, u].astype(float),
                                      obs[f"intrinsics/{cam}"], obs[f"extrinsics/{cam}"])
                one_by_one = np.zeros(depth.shape, bool)
                one_by_one[v, u] = in_hand(points, obs["proprio"])
                mismatched += int((one_by_one != hand).sum())
        obs, _, terminated, truncated, _ = env.step(expert.act(obs))
        if terminated or truncated:
            break
    env.close()
    assert mismatched <= 0.001 * max(taken, 1), f"{mismatched} pixels differ from the point-by-point test"
    assert taken > 0.3 * wrist_robot, "the filter finds too little of the hand"
    assert on_robot >= 0.99 * taken, f"{taken - on_robot} of {taken} filtered pixels are not the robot's"
    assert on_block <= 0.01 * block, f"{on_block} of the block's {block} pixels were taken for the hand"
