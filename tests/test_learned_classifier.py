"""The learned segmenter's second half: masks snapped to the image's regions, and the crop classifier that
names each instance (train, export with the segmenter, load, errors)."""

from __future__ import annotations


import numpy as np
import pytest
import torch

from embodied.perception.learned import LearnedSegmenter, load_frames
from embodied.perception.learned.classifier import CropConfig, CropNet, classify_instances
from embodied.perception.learned.crops import instance_crops
from embodied.perception.learned.regions import colour_depth_regions, snap_to_regions
from embodied.perception.learned.train_classifier import CropTrainConfig, build_crops, train_classifier
from embodied.perception.learned.weights import export_weights, load_classifier
from policies.checkpoint import CheckpointError

SHIPPED = LearnedSegmenter().source


def _iou_per_instance(true: np.ndarray, pred: np.ndarray, least: int = 20) -> list[float]:
    out = []
    for t in np.unique(true[true > 0]):
        m = true == t
        if m.sum() < least:
            continue
        p = np.bincount(pred[m]).argmax()
        out.append((m & (pred == p)).sum() / (m | (pred == p)).sum())
    return out


def test_regions_hold_one_instance_each_and_snapping_mends_ragged_masks(frames_dir):
    f = load_frames(frames_dir)
    rng = np.random.default_rng(0)
    mended = []
    for i in range(len(f)):
        true = f.instance[i].astype(np.int32)
        regions, n = colour_depth_regions(f.rgb[i], f.depth[i].astype(np.float32))
        assert 0 < n < 2000  # a frame of one plain wall is one region
        # every instance is (almost) a union of regions: each region's true majority rebuilds it
        m = int(true.max()) + 1
        counts = np.bincount(regions.ravel() * m + true.ravel(), minlength=n * m).reshape(n, m)
        rebuilt = counts.argmax(1)[regions]
        assert np.mean(_iou_per_instance(true, rebuilt)) > 0.97, f"frame {i}: regions straddle instances"
        # ragged masks (a fifth of the pixels take the id 4 px away) snap back to the true ones; an instance
        # a few pixels across (a 23-px lamp's stem) loses most of its regions' votes to that shift and is
        # left out of this check
        ragged = true.copy()
        flip = rng.random(true.shape) < 0.2
        ragged[flip] = np.roll(true, (4, 4), axis=(0, 1))[flip]
        labels = {int(k): "x" for k in np.unique(ragged)}
        snapped, kept = snap_to_regions(ragged, labels, regions, n)
        assert set(kept) == set(np.unique(snapped).tolist())
        before = np.mean(_iou_per_instance(true, ragged, 50))
        after = np.mean(_iou_per_instance(true, snapped, 50))
        assert after > 0.97, f"frame {i}: IoU {before:.3f} -> {after:.3f}"
        mended.append((before, after))
    before, after = np.mean(mended, axis=0)
    assert after > before + 0.05, f"snapping mends too little: IoU {before:.3f} -> {after:.3f}"


def test_crops_centre_the_instance_and_measure_it():
    rgb = np.zeros((64, 64, 3), np.uint8)
    depth = np.full((64, 64), 2.0, np.float32)
    ids = np.zeros((64, 64), np.int32)
    ids[20:30, 10:20] = 5
    depth[20:30, 10:20] = 1.9
    x, s = instance_crops(rgb, depth, ids, [5, 9])
    assert x.shape == (2, 5, 32, 32) and s.shape == (2, 4)
    mask = x[0, 3]
    assert mask[16, 16] == 1 and mask[0, 0] == 0 and 0.3 < mask.mean() < 0.6
    assert x[0, 4, 16, 16] == 0 and x[0, 4, 0, 0] == pytest.approx(0.1 / 0.3)  # relief around the median
    assert s[0, 1] == pytest.approx(np.log(100)) and s[0, 3] == pytest.approx(1.0)  # area, fill of its box
    assert not x[1].any() and not s[1].any()  # an id absent from the frame gives an empty crop


def test_an_instance_named_a_stuff_class_joins_that_instance():
    net = CropNet(CropConfig(classes=("block", "table")))
    with torch.no_grad():  # the network says "table" for every crop
        net.head[-1].weight.zero_()
        net.head[-1].bias.copy_(torch.tensor([0.0, 5.0]))
    net.eval()
    ids = np.zeros((32, 32), np.int32)
    ids[:, :16], ids[10:14, 20:24] = 1, 2
    sem = np.where(ids == 1, 2, 1)  # pixel votes: the table, and a block
    rgb, depth = np.zeros((32, 32, 3), np.uint8), np.ones((32, 32), np.float32)
    out, labels = classify_instances(net, rgb, depth, ids, {1: "table", 2: "block"}, sem, ("table",), 0.0)
    assert labels == {1: "table"} and (out[10:14, 20:24] == 1).all()
    # with the votes weighed in strongly, the block's own pixels keep it a block
    out, labels = classify_instances(net, rgb, depth, ids, {1: "table", 2: "block"}, sem, ("table",), 10.0)
    assert labels == {1: "table", 2: "block"}


def test_tiny_classifier_learns_exports_with_the_segmenter_and_loads(frames_dir, tmp_path):
    run = tmp_path / "clf"
    cfg = CropTrainConfig(data=[str(frames_dir)], out=str(run), steps=400, batch_size=32, lr=3e-3, warmup_steps=10,
                          checkpoint_every=75, progress=False, predicted=False, model={"widths": [8, 16, 16],
                                                                                      "hidden": 32})
    result = train_classifier(cfg)
    assert result["final_loss"] < 0.5 * result["first_loss"]
    net = load_classifier(run)
    f = load_frames(frames_dir, net.config.classes)
    x, s, y = build_crops(f, net.config.classes, progress=False)
    right = (net.probabilities(x.astype(np.float32) / 127, s).argmax(1).numpy() == y).mean()
    assert right > 0.9, f"the classifier does not fit its own crops: {right:.2f}"
    with pytest.raises(ValueError, match="--resume"):
        train_classifier(cfg)
    # one file holds both networks; the segmenter loads with its classifier from it
    out = export_weights(SHIPPED, tmp_path / "both.safetensors", classifier=run)
    assert out["bytes"] < 10e6
    both = LearnedSegmenter(tmp_path / "both.safetensors")
    assert both.classifier is not None
    assert torch.equal(both.classifier.probabilities(x[:8].astype(np.float32) / 127, s[:8]),
                       net.probabilities(x[:8].astype(np.float32) / 127, s[:8]))
    ids, labels = both(f.rgb[0], f.depth[0].astype(np.float32))
    assert set(labels) == set(np.unique(ids[ids > 0]).tolist())
    # a segmenter run holds no classifier; a classifier of another vocabulary is refused, naming it
    assert load_classifier(tmp_path / "both.safetensors") is not None
    other = tmp_path / "other"
    train_classifier(CropTrainConfig(**{**cfg.__dict__, "out": str(other), "steps": 1,
                                        "model": {**cfg.model, "classes": ["cup", "table"]}}))
    with pytest.raises(CheckpointError, match="other"):
        export_weights(SHIPPED, tmp_path / "bad.safetensors", classifier=other)
