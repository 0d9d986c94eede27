"""Running the MemoryAgent in a task behind a sensors-only wall."""

from __future__ import annotations

import gymnasium as gym

from embodied.agent.memory_agent import AgentConfig, MemoryAgent


class SensorsOnly(gym.Wrapper):
    """Deletes ``info["privileged"]`` and blocks ``env.unwrapped``: what the agent gets is sensors."""

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return obs, _strip(info)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, _strip(info)

    @property
    def unwrapped(self):
        raise AttributeError("the agent may not reach the simulator (env.unwrapped is blocked)")


def _strip(info: dict) -> dict:
    info = dict(info)
    info.pop("privileged", None)
    return info


def run_agent(task: str, seed: int, config: AgentConfig | None = None, on_step=None, goal_text=None,
              skills: dict | None = None, sensors=None, **env_kwargs) -> tuple[MemoryAgent, dict, int]:
    """One agent episode; returns (agent, last info without privileged state, steps).

    ``on_step(raw_env, agent, info)`` lets a test disturb the world (it gets the raw env);
    ``goal_text(text) -> text`` rewrites the instruction the agent reads; ``sensors(obs, labels) -> obs``
    rewrites the whole observation (a detector's misses); ``skills`` replace the agent's scripted ones by name.
    """
    raw = gym.make(f"embodied/{task}", **env_kwargs)
    labels = raw.unwrapped.labels  # the detector's vocabulary, fixed before the episode
    env = SensorsOnly(raw)
    agent = MemoryAgent(labels, config, skills=skills)
    agent.reset(seed)
    obs, info = env.reset(seed=seed)
    steps, done = 0, False
    while not done:
        if goal_text is not None:
            obs = {**obs, "goal": {**obs["goal"], "text": goal_text(obs["goal"]["text"])}}
        if sensors is not None:
            obs = sensors(obs, labels)
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        steps += 1
        done = terminated or truncated
        if on_step is not None:
            on_step(raw, agent, info)
    raw.close()
    return agent, info, steps
