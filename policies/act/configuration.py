"""ACT head configuration (Action Chunking with Transformers, scaled for a CPU)."""

from __future__ import annotations

from dataclasses import dataclass

from policies.head import HeadConfig


@dataclass
class ACTConfig(HeadConfig):
    dim_model: int = 128
    n_heads: int = 4
    dim_feedforward: int = 512
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    dropout: float = 0.1
    use_vae: bool = False  # CVAE latent over the action chunk (ACT: latent 32, kl_weight 10)
    latent_dim: int = 32
    n_vae_encoder_layers: int = 2
    kl_weight: float = 10.0
    done_weight: float = 1.0  # weight of the done channel's binary cross-entropy
    temporal_ensemble_coeff: float | None = None  # e.g. 0.01: predict every step, average overlapping chunks
    # Skills that run with temporal ensembling even when the head runs chunks otherwise: averaging the
    # overlapping chunks steadies where a pick or place comes down, and would slow a press's turn-around.
    ensemble_skills: tuple[str, ...] = ()
    skill_ensemble_coeff: float = 0.01
    action_norm: str = "mean_std"

    def validate(self) -> None:
        super().validate()
        if self.dim_model % self.n_heads:
            raise ValueError(f"dim_model {self.dim_model} must be a multiple of n_heads {self.n_heads}")
        from embodied.planner.calls import SKILLS

        unknown = [k for k in self.ensemble_skills if k not in SKILLS]
        if unknown:
            raise ValueError(f"ensemble_skills: unknown skill {unknown[0]!r}; skills: {', '.join(SKILLS)}")
        if self.temporal_ensemble_coeff is not None and self.n_action_steps != 1:
            raise ValueError("temporal ensembling predicts every step: set n_action_steps=1")
