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
    action_norm: str = "mean_std"

    def validate(self) -> None:
        super().validate()
        if self.dim_model % self.n_heads:
            raise ValueError(f"dim_model {self.dim_model} must be a multiple of n_heads {self.n_heads}")
