"""Worker processes and the Ray session, shared by recording (``embodied.data.workers``) and evaluation
(``embodied.eval.distributed``). It imports nothing of the dataset stack (video, parquet), so evaluation,
and the ``embodied`` command, start without the ``data`` extra."""

from __future__ import annotations

import ctypes
import os
import signal
import socket


def detach_worker(parent: int) -> None:
    """In a local worker process: ignore SIGINT (the parent decides) and die with ``parent``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # die with the parent (Linux): PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect: no signal will come
        os._exit(1)


def ray_session(address: str | None, workers: int):
    """Ray, connected: to the cluster at ``address`` (HOST:PORT or "auto"), else to the instance this
    process already runs, else to a new local instance of ``workers`` CPUs."""
    try:
        import ray
    except ImportError:
        raise ValueError("--ray needs Ray: pip install 'embodied[ray]'") from None
    if address:
        _reachable(address)
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        except ConnectionError as exc:
            raise ValueError(f"--ray {address}: {exc}. Run the command on a node of that cluster (after `ray start "
                             "--address=HEAD:6379` there); a cluster with token authentication (Ray >= 2.59's "
                             "default for `ray start`) needs RAY_AUTH_MODE=token and its token here too") from None
    elif not ray.is_initialized():
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    return ray


def _reachable(address: str) -> None:
    """Fail fast where nothing listens at HOST:PORT (Ray itself waits on such an address for good)."""
    host, sep, port = address.rpartition(":")
    if address == "auto" or "://" in address or not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
    except OSError as exc:
        raise ValueError(f"--ray {address}: nothing answers there ({exc}); start the cluster with "
                         "`ray start --head --port=6379` on that node, or check the address") from None
