"""ACT head: encoder over conditioning tokens, decoder with learned queries, L1 on the action chunk.

Encoder tokens: the latent (zero at inference; from the CVAE encoder in
training when ``use_vae``), the skill embedding, the call's parameters in the
robot's frame, and one token per observation step (proprio and, with cameras,
image features). The decoder's ``horizon`` learned queries attend to them and
emit one action and one done logit each. Loss: L1 on normalised actions (pads
masked) + BCE on the done channel (+ ``kl_weight`` x KL with the CVAE).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from policies.act.configuration import ACTConfig
from policies.head import HeadBase, done_targets


class ACTHead(HeadBase):
    name = "act"

    def __init__(self, config: ACTConfig, stats: dict[str, dict]):
        super().__init__(config, stats)
        self.config: ACTConfig = config
        d = config.dim_model
        self.obs_proj = nn.Linear(self.obs_step_dim, d)
        self.skill_proj = nn.Linear(config.skill_embed_dim, d)
        self.param_proj = nn.Linear(self.call_dim - config.skill_embed_dim, d)
        self.latent_proj = nn.Linear(config.latent_dim, d)
        self.n_tokens = 3 + config.obs_horizon
        self.enc_pos = nn.Parameter(torch.randn(self.n_tokens, d) * 0.02)
        self.queries = nn.Parameter(torch.randn(config.horizon, d) * 0.02)

        def enc_layer() -> nn.TransformerEncoderLayer:
            return nn.TransformerEncoderLayer(d, config.n_heads, config.dim_feedforward, config.dropout,
                                              activation="relu", batch_first=True)

        self.encoder = nn.TransformerEncoder(enc_layer(), config.n_encoder_layers, enable_nested_tensor=False)
        dec = nn.TransformerDecoderLayer(d, config.n_heads, config.dim_feedforward, config.dropout,
                                         activation="relu", batch_first=True)
        self.decoder = nn.TransformerDecoder(dec, config.n_decoder_layers)
        self.action_out = nn.Linear(d, config.action_dim)
        self.done_out = nn.Linear(d, 1)
        if config.use_vae:
            self.vae_cls = nn.Parameter(torch.randn(1, d) * 0.02)
            self.vae_action_proj = nn.Linear(config.action_dim, d)
            self.vae_state_proj = nn.Linear(config.state_dim, d)
            self.vae_pos = nn.Parameter(torch.randn(2 + config.horizon, d) * 0.02)
            self.vae_encoder = nn.TransformerEncoder(enc_layer(), config.n_vae_encoder_layers,
                                                     enable_nested_tensor=False)
            self.vae_out = nn.Linear(d, 2 * config.latent_dim)

    def _latent(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(latent (B, latent_dim), KL (scalar) or None): the CVAE posterior in training, zeros otherwise."""
        b = batch["observation.state"].shape[0]
        device = batch["observation.state"].device
        if not (self.config.use_vae and self.training and "action" in batch):
            return torch.zeros(b, self.config.latent_dim, device=device), None
        action = self.normalizer.norm("action", batch["action"].float())
        state = self.normalizer.norm("observation.state", batch["observation.state"][:, -1].float())
        tokens = torch.cat([self.vae_cls.expand(b, -1, -1), self.vae_state_proj(state).unsqueeze(1),
                            self.vae_action_proj(action)], 1) + self.vae_pos
        pad = batch.get("action_is_pad")
        mask = None
        if pad is not None:
            mask = torch.cat([torch.zeros(b, 2, dtype=torch.bool, device=device), pad.bool()], 1)
        h = self.vae_encoder(tokens, src_key_padding_mask=mask)[:, 0]
        mu, logvar = self.vae_out(h).chunk(2, -1)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        kl = (-0.5 * (1 + logvar - mu.pow(2) - logvar.exp())).sum(-1).mean()
        return z, kl

    def _decode(self, batch: dict[str, torch.Tensor], z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        skill, params = self.call_features(batch)
        obs = self.obs_proj(self.obs_steps(batch))
        tokens = torch.cat([self.latent_proj(z).unsqueeze(1), self.skill_proj(skill).unsqueeze(1),
                            self.param_proj(params).unsqueeze(1), obs], 1) + self.enc_pos
        memory = self.encoder(tokens)
        h = self.decoder(self.queries.expand(tokens.shape[0], -1, -1), memory)
        return self.action_out(h), self.done_out(h).squeeze(-1)

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        self.check_batch(batch, with_actions=True)
        cfg = self.config
        z, kl = self._latent(batch)
        pred, done_logit = self._decode(batch, z)
        target = self.normalizer.norm("action", batch["action"].float())
        valid = ~batch["action_is_pad"].bool() if "action_is_pad" in batch else torch.ones_like(done_logit).bool()
        l1 = (F.l1_loss(pred, target, reduction="none").mean(-1) * valid).sum() / valid.sum().clamp_min(1)
        done_loss = F.binary_cross_entropy_with_logits(done_logit, done_targets(batch, cfg.horizon))
        loss = l1 + cfg.done_weight * done_loss
        out = {"action_loss": l1.detach(), "done_loss": done_loss.detach()}
        if kl is not None:
            loss = loss + cfg.kl_weight * kl
            out["kl"] = kl.detach()
        out["loss"] = loss
        return out

    @torch.no_grad()
    def predict_chunk(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        self.check_batch(batch, with_actions=False)
        b = batch["observation.state"].shape[0]
        z = torch.zeros(b, self.config.latent_dim, device=batch["observation.state"].device)
        pred, done_logit = self._decode(batch, z)
        return {"action": self.normalizer.unnorm("action", pred), "done": torch.sigmoid(done_logit)}
