"""Diffusion Policy head: a conditional 1D temporal U-Net with FiLM, DDPM training, DDIM sampling."""

from policies.diffusion.configuration import DiffusionConfig
from policies.diffusion.modeling import DiffusionHead

__all__ = ["DiffusionConfig", "DiffusionHead"]
