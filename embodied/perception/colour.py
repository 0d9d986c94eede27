"""Colour names from mean RGB.

Rendered colours are the material colour scaled by lighting, so naming goes
by hue, saturation and value rather than by distance to a palette entry. The
hue bands fit the workcell palette (red, orange, yellow, green, cyan, blue,
purple, pink) as the two cameras render it; weakly saturated warm colours
(the wooden table) are brown, unsaturated ones white/grey/black.
"""

from __future__ import annotations

import colorsys

import numpy as np

# Upper hue bound (degrees) of each chromatic name, in order; red wraps around.
_HUE_BANDS = (
    (15.0, "red"),
    (45.0, "orange"),
    (75.0, "yellow"),
    (160.0, "green"),
    (200.0, "cyan"),
    (255.0, "blue"),
    (295.0, "purple"),
    (345.0, "pink"),
    (360.0, "red"),
)
COLOUR_NAMES = tuple(dict.fromkeys(name for _, name in _HUE_BANDS)) + ("brown", "white", "grey", "black")


def hsv(rgb: np.ndarray) -> tuple[float, float, float]:
    """(hue degrees [0, 360), saturation [0, 1], value [0, 1]) of an RGB triple in [0, 1]."""
    r, g, b = (min(max(float(c), 0.0), 1.0) for c in rgb)
    hi, lo = max(r, g, b), min(r, g, b)
    delta = hi - lo
    if delta <= 1e-9:
        return 0.0, 0.0, hi
    if hi == r:
        hue = ((g - b) / delta) % 6.0
    elif hi == g:
        hue = (b - r) / delta + 2.0
    else:
        hue = (r - g) / delta + 4.0
    return hue * 60.0, delta / hi, hi


def colour_name(rgb: np.ndarray) -> str:
    """Name of a mean colour (3,) in [0, 1]: one of ``COLOUR_NAMES``."""
    hue, sat, val = hsv(rgb)
    if sat < 0.2 or val < 0.12:
        if val < 0.2:
            return "black"
        return "white" if val > 0.75 else "grey"
    # Warm hues that are dull or dark read as brown (wood), not orange/red.
    if 15.0 <= hue < 50.0 and (sat < 0.55 or val < 0.45):
        return "brown"
    for bound, name in _HUE_BANDS:
        if hue < bound:
            # Light, weakly saturated reds are pink.
            if name == "red" and sat < 0.55 and val > 0.6:
                return "pink"
            return name
    return "red"


def named_firmly(rgb: np.ndarray, margin: float = 5.0) -> bool:
    """Whether a chromatic colour (3,) in [0, 1] keeps its name with its hue ``margin`` degrees either way:
    not on the edge of two names' bands, where lighting alone (a lit face clipping in one channel) tips
    it over (an orange block read as yellow at hue 48). Achromatic names are always firm."""
    hue, sat, val = hsv(rgb)
    name = colour_name(rgb)
    if name in ("brown", "white", "grey", "black"):
        return True
    shifted = [np.asarray(colorsys.hsv_to_rgb((hue + d) % 360.0 / 360.0, sat, val)) for d in (-margin, margin)]
    return all(colour_name(c) == name for c in shifted)


def hue_nudged(rgb: np.ndarray, before: np.ndarray, most: float = 35.0) -> bool:
    """Whether two chromatic colours (3,) in [0, 1] differ in hue by under ``most`` degrees: what a face lit
    brighter does as its brightest channel clips and the next one catches up (orange turns yellow), not a
    change of paint (palette hues lie 25 or more degrees apart, but a brighter view of a new paint is
    rarely this close)."""
    (h1, s1, _), (h0, s0, _) = hsv(rgb), hsv(before)
    if colour_name(rgb) in ("brown", "white", "grey", "black") or colour_name(before) in ("brown", "white", "grey",
                                                                                         "black"):
        return False
    gap = abs(h1 - h0) % 360.0
    return min(gap, 360.0 - gap) < most


def colour_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Euclidean RGB distance, brightness-normalised so lighting changes between cameras matter less."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    na, nb = max(a.max(), 1e-3), max(b.max(), 1e-3)
    return float(np.linalg.norm(a / na - b / nb) * 0.7 + abs(na - nb) * 0.3)


def same_colour(name_a: str, rgb_a: np.ndarray, name_b: str, rgb_b: np.ndarray, tol: float = 0.18) -> bool:
    """Whether two observations could be the same surface colour (names or close RGB)."""
    return name_a == name_b or colour_distance(rgb_a, rgb_b) < tol
