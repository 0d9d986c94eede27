"""Diffusion head configuration (Diffusion Policy's low-dim settings, scaled for a CPU)."""

from __future__ import annotations

from dataclasses import dataclass

from policies.head import HeadConfig


@dataclass
class DiffusionConfig(HeadConfig):
    down_dims: tuple[int, ...] = (32, 64, 128)  # U-Net widths; 32/64/128 trains ~48 ms/step at batch 256 here
    kernel_size: int = 5
    n_groups: int = 8
    step_embed_dim: int = 64
    num_train_timesteps: int = 100  # DDPM
    beta_schedule: str = "squaredcos_cap_v2"
    num_inference_steps: int = 10  # DDIM
    clip_sample: bool = True
    # Inference: the scale of the starting noise of DDIM (deterministic, eta 0). Below 1 the samples
    # gather toward the distribution's dense middle (lower "temperature"): less spread in where a place
    # lands or how deep a press goes. Measured inside the agent at 0.5 and 0: no gain (docs/learned-policy.md).
    init_noise_scale: float = 1.0
    prediction_type: str = "epsilon"
    action_norm: str = "min_max"  # diffusion samples live in [-1, 1]
    trace_inference: bool = True  # inference runs the whole DDIM loop traced and frozen (sampling.py)
    # How the done flag is predicted: "classifier", a small MLP on the condition trained with binary
    # cross-entropy (deterministic, as ACT's); "sampled", denoised with the actions as one more trajectory
    # channel (heads trained before this option; a single sample can cross the threshold early).
    done_head: str = "classifier"
    done_weight: float = 1.0  # classifier: weight of its binary cross-entropy beside the noise loss
    done_hidden: int = 128  # classifier: hidden width
    done_pos_weight: float = 1.0  # classifier: weight of the (rare) steps past a segment's end in its loss
    # classifier: the steps since the call started (``skill.elapsed``) as one more input of the done
    # classifier only: a press passes its start pose again on the way back up, and only the time into the
    # skill tells the two apart (the U-Net without it does not follow the clock, as with ``use_elapsed``).
    done_elapsed: bool = True

    def needs_elapsed(self) -> bool:
        return self.use_elapsed or (self.done_head == "classifier" and self.done_elapsed)

    def validate(self) -> None:
        super().validate()
        factor = 2 ** (len(self.down_dims) - 1)
        if self.horizon % factor:
            raise ValueError(f"horizon {self.horizon} must be a multiple of {factor} for down_dims {self.down_dims}")
        if any(d % self.n_groups for d in self.down_dims):
            raise ValueError(f"every U-Net width {self.down_dims} must divide into n_groups={self.n_groups}")
        if not 0.0 <= self.init_noise_scale <= 1.0:
            raise ValueError(f"init_noise_scale must be in [0, 1], got {self.init_noise_scale}")
        if not 1 <= self.num_inference_steps <= self.num_train_timesteps:
            raise ValueError(f"num_inference_steps must be in 1..{self.num_train_timesteps}")
        if self.done_head not in ("classifier", "sampled"):
            raise ValueError(f"done_head must be 'classifier' or 'sampled', got {self.done_head!r}")
        if self.prediction_type not in ("epsilon", "sample"):
            raise ValueError(f"prediction_type must be 'epsilon' or 'sample', got {self.prediction_type!r}")
