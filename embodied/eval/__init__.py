"""Evaluation against the simulator's truth: running episodes in tasks, recall checks, memory accuracy.

This side may import ``embodied.tasks``, ``embodied.experts`` and ``embodied.envs``;
the agent side (perception, memory, planner, agent, policies) never does.
Import the submodules directly:

    embodied.eval.rollout    run_episodes, make_policy, VideoWriter, summarize, EpisodeResult
    embodied.eval.recall     the recall checks against ``info["privileged"]``; QUESTIONS, check_answer
    embodied.eval.accuracy   memory accuracy against the true world boxes
    embodied.eval.evaluate   ``embodied eval-memory``: eval_memory, run_episode, memory_accuracy
    embodied.eval.bench      ``embodied bench memory``: speed and size of perception + memory
    embodied.eval.memory_scale  ``embodied bench memory --grid``: the synthetic house, its measures, the grid
"""
