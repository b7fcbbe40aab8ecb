"""Run a run's fixed batches on a pool of Ray actors; the calling process stays the only store writer.

``nlgbias run --ray`` (a local Ray instance) or ``--ray-address ADDR`` (a running cluster) sends
the batches that :func:`nlgbias.pipeline.generate.missing_batches` finds, and the score chunks of
:func:`nlgbias.store.cache.fill_scores`, to Ray actors.  Each actor loads the model (or scorer)
once and answers whole batches with the same requests, so the same per-sample seeds, as the
in-process path; the driver commits each batch in one store transaction as it completes
(``ray.wait``).  A killed driver therefore resumes exactly as a single-process run does.

Faults: a call that fails because its actor died (a crash, a node lost, ``ray.kill``) goes back
to the queue and runs on another actor; the dead actor is replaced by a fresh one.  Both are
bounded (:attr:`RayOptions.retries` tries per batch, ``retries x workers`` replacements per
pool); past the bound the run stops with one :class:`~nlgbias.errors.BackendError` line and
everything committed stays.

Server models (``openai:NAME``) are not sent to Ray: the servers already work in parallel, so
the driver sends their requests itself, as without Ray.

Ray is an optional extra (``pip install 'nlgbias[ray]'``); this module imports it only when a
pool is opened.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterator, Sequence

from nlgbias.errors import BackendError, InputError, NlgbiasError, command_line, command_line_wording, option
from nlgbias.models import load_backend, resolve_model
from nlgbias.scorers import get_scorer
from nlgbias.validate import at_least, bounded

INSTALL_HINT = "pip install 'nlgbias[ray]'"
IN_FLIGHT_PER_ACTOR = 2  # calls queued on each actor, so it never waits for the driver's commit
FAULT_ENV = "NLGBIAS_FAULT_WORKER_EXIT_AT"  # tests: "N" the first actors, "N:all" every actor, exit at their Nth call


@dataclass(frozen=True)
class RayOptions:
    """Where and how wide to run: the Python face of ``--ray``, ``--ray-address``, ``--workers``,
    ``--worker-cpus`` and ``--worker-gpus``.

    Parameters
    ----------
    address : str, optional
        A running cluster that this machine is a node of (``auto``, or ``HOST:PORT`` of its head);
        None starts a local Ray instance for the run (or uses the one this process is connected to).
    workers : int, optional
        Actors in the pool; default: as many as the cluster's CPUs (or GPUs) hold.
    worker_cpus, worker_gpus : float
        Resources each actor reserves; Ray places actors with GPUs on GPU nodes.
    retries : int
        Tries per batch after the first, and replacement actors per worker, before the run stops.
    """

    address: str | None = None
    workers: int | None = None
    worker_cpus: float = 1.0
    worker_gpus: float = 0.0
    retries: int = 3

    def check(self) -> None:
        """One-line :class:`InputError` on the first unusable value."""
        if self.workers is not None:
            bounded(self.workers, 1, "workers")
        bounded(self.worker_cpus, 0, "worker_cpus", whole=False)
        bounded(self.worker_gpus, 0, "worker_gpus", whole=False)
        if self.worker_cpus == 0 and self.worker_gpus == 0:
            raise InputError(f"{option('--worker-cpus', 0)}: a worker needs at least one CPU or GPU "
                             f"(give {option('--worker-gpus', 1)} for GPU workers)")
        at_least(self.retries, 0, "retries")
        if self.address is not None and (not isinstance(self.address, str) or not self.address.strip()):
            raise InputError(f"{option('--ray-address', repr(self.address))}: give auto, or HOST:PORT of the head node")


def import_ray():
    """The ``ray`` module, or a one-line :class:`InputError` that says how to install it."""
    try:
        import ray
    except ImportError:
        flag = "--ray" if command_line() else "ray="
        raise InputError(f"{flag}: Ray is not installed here; install it with: {INSTALL_HINT}") from None
    return ray


def _check_reachable(address: str) -> None:
    """Fail in one line, in seconds, where ``ray.init`` would wait minutes for a dead address."""
    if address == "auto":
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"{option('--ray-address', address)}: give auto, or HOST:PORT of the head node")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=3):
            pass
    except OSError as exc:
        raise InputError(f"{option('--ray-address', address)}: no Ray cluster answers there "
                         f"({exc.strerror or exc}); start one with `ray start --head`") from None


class RayPool:
    """A connection to Ray and the actor pools of one run (a context manager).

    Entering connects (or starts a local instance); leaving disconnects if entering connected.
    :meth:`generate` and :meth:`score` yield results as actors finish them; the caller stores them.

    Attributes
    ----------
    stats : dict
        What the manifest records: address, workers, resources per worker, replaced actors,
        retried calls.
    """

    def __init__(self, options: RayOptions) -> None:
        options.check()
        self.options = options
        self.ray = import_ray()
        self._connected_here = False
        self.stats: dict[str, Any] = {}
        self._fault = os.environ.get(FAULT_ENV)
        self._tag = uuid.uuid4().hex[:8]

    # -- connection --------------------------------------------------------------------------

    def __enter__(self) -> "RayPool":
        ray, address = self.ray, self.options.address
        if not ray.is_initialized():
            if address is not None:
                _check_reachable(address)
            try:
                if address is None:
                    ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
                else:
                    ray.init(address=address, log_to_driver=False, configure_logging=False)
            except ConnectionError as exc:
                raise InputError(f"{option('--ray-address', address)}: {str(exc).splitlines()[0]}") from None
            self._connected_here = True
        self.workers = self._pool_size()
        self.stats = {"address": address or "local", **{k: v for k, v in asdict(self.options).items() if k != "address"},
                      "workers": self.workers, "replaced_workers": 0, "retried_calls": 0}
        return self

    def __exit__(self, *exc) -> None:
        if self._connected_here:
            self.ray.shutdown()

    def _pool_size(self) -> int:
        """``workers``, checked against what the cluster holds (one line if it cannot hold them)."""
        total = self.ray.cluster_resources()
        cpus, gpus = total.get("CPU", 0.0), total.get("GPU", 0.0)
        o = self.options
        fits = [int(cpus // o.worker_cpus) if o.worker_cpus else None, int(gpus // o.worker_gpus) if o.worker_gpus else None]
        most = min(f for f in fits if f is not None)
        workers = o.workers if o.workers is not None else max(most, 1)
        if workers > most:
            need = " and ".join(f"{workers * amount:g} {kind}" for kind, amount in (("CPUs", o.worker_cpus),
                                                                                   ("GPUs", o.worker_gpus)) if amount)
            flag = option("--workers", workers) if o.workers is not None else f"{option('--worker-gpus', o.worker_gpus)}"
            raise InputError(f"{flag}: the pool needs {need}; the Ray cluster has {cpus:g} CPUs and {gpus:g} GPUs")
        return workers

    # -- pools -------------------------------------------------------------------------------

    def _actors(self, cls, args: tuple, name: str):
        """A factory that starts one more actor of ``cls(*args)``; the first ``workers`` get the fault hook."""
        remote = self.ray.remote(num_cpus=self.options.worker_cpus, num_gpus=self.options.worker_gpus,
                                 max_restarts=0, max_task_retries=0)(cls)
        threads = max(1, int(self.options.worker_cpus))
        started = [0]

        def start():
            started[0] += 1
            fault = self._fault if started[0] <= self.workers or (self._fault or "").endswith(":all") else None
            return remote.options(name=f"nlgbias-{self._tag}-{name}-{started[0]}").remote(
                *args, threads=threads, fault=fault, flags=command_line())
        return start

    def generate(self, ref, options, batches: Sequence[list], *,
                 loaded: Callable[[dict], None] | None = None) -> Iterator[tuple[int, list[str]]]:
        """Generate ``batches`` (lists of :class:`~nlgbias.models.backend.GenerationRequest`) of model ``ref``.

        Yields ``(batch index, texts)`` in completion order; ``loaded(info)`` gets the model's
        manifest facts once the first actor has loaded it.
        """
        start = self._actors(GenerationWorker, (ref.model_id, ref.fingerprint, options), "generate")
        yield from self._map(start, batches, "generate", first=loaded, what=f"model {ref.model_id}")

    def score(self, scorer, chunks: Sequence[list[str]]) -> Iterator[tuple[int, Any]]:
        """Score ``chunks`` of texts with the scorer ``scorer.spec`` (its name, or ``regard:DIR`` for a
        classifier of your own: workers load the same folder; same version) on the pool.

        Yields ``(chunk index, scored table)`` in completion order.
        """
        start = self._actors(ScoringWorker, (getattr(scorer, "spec", scorer.name), scorer.version), "score")
        yield from self._map(start, chunks, "score", what=f"scorer {scorer.name}")

    def _map(self, start: Callable, items: Sequence, method: str, *, first: Callable[[dict], None] | None = None,
             what: str) -> Iterator[tuple[int, Any]]:
        """Call ``actor.<method>(item)`` for every item across the pool; yield ``(index, result)`` as done."""
        ray = self.ray
        from ray.exceptions import (
            ActorUnschedulableError,
            NodeDiedError,
            ObjectLostError,
            OwnerDiedError,
            RayActorError,
            RayTaskError,
            WorkerCrashedError,
        )

        faults = (RayActorError, WorkerCrashedError, NodeDiedError, ObjectLostError, OwnerDiedError)
        actors = [start() for _ in range(min(self.workers, len(items)))]
        replacements = self.options.retries * len(actors)
        if first is not None and actors:
            first(self._ready(actors[0], what))
        pending, tries = deque(range(len(items))), [0] * len(items)
        free = [a for _ in range(IN_FLIGHT_PER_ACTOR) for a in actors]
        inflight: dict[Any, tuple[Any, int]] = {}
        dead: set = set()
        try:
            while pending or inflight:
                while pending and free:
                    actor, index = free.pop(0), pending.popleft()
                    inflight[getattr(actor, method).remote(items[index])] = (actor, index)
                done, _ = ray.wait(list(inflight), num_returns=1)
                actor, index = inflight.pop(done[0])
                try:
                    result = ray.get(done[0])
                except faults as exc:
                    self.stats["retried_calls"] += 1
                    tries[index] += 1
                    last = _first_line(exc)
                    if tries[index] > self.options.retries:
                        raise BackendError(f"Ray: {what}: batch {index + 1} of {len(items)} failed on "
                                           f"{tries[index]} workers (last: {last}); everything finished before is "
                                           f"stored, rerun to resume") from None
                    pending.appendleft(index)
                    if actor not in dead:
                        dead.add(actor)
                        ray.kill(actor, no_restart=True)
                        free = [a for a in free if a is not actor]
                        if replacements > 0:
                            replacements -= 1
                            self.stats["replaced_workers"] += 1
                            fresh = start()
                            free.extend([fresh] * IN_FLIGHT_PER_ACTOR)
                            actors.append(fresh)
                    if not free and not inflight:
                        raise BackendError(f"Ray: {what}: every worker failed (last: {last}); everything finished "
                                           f"before is stored, rerun to resume") from None
                    continue
                except RayTaskError as exc:  # the call itself raised: not a worker fault, so no retry
                    cause = exc.cause
                    if isinstance(cause, NlgbiasError):
                        raise cause from None
                    raise
                except ActorUnschedulableError as exc:
                    raise BackendError(f"Ray: {what}: no node can hold a worker ({_first_line(exc)})") from None
                free.append(actor)
                yield index, result
        finally:
            for actor in actors:
                if actor not in dead:
                    ray.kill(actor, no_restart=True)

    def _ready(self, actor, what: str) -> dict:
        """The first actor's load report: the model's manifest facts, or its one-line load error."""
        from ray.exceptions import RayActorError

        try:
            report = self.ray.get(actor.ready.remote())
        except RayActorError as exc:
            raise BackendError(f"Ray: {what}: the worker could not start ({_first_line(exc)})") from None
        if "error" in report:
            raise BackendError(report["error"])
        return report["info"]


def _first_line(exc: BaseException) -> str:
    """The message of a Ray error without its traceback, on one line."""
    text = " ".join(str(getattr(exc, "error_message", None) or exc).split())
    return text[:300]


class _Worker:
    """What every actor shares: thread count, the fault hook, the caller's wording of errors."""

    def __init__(self, *, threads: int, fault: str | None, flags: bool) -> None:
        import torch

        torch.set_num_threads(threads)
        self._calls, self._exit_at = 0, int(fault.split(":")[0]) if fault else None
        self._flags = flags
        self._error: str | None = None

    def _count_call(self) -> None:
        self._calls += 1
        if self._exit_at is not None and self._calls >= self._exit_at:
            os._exit(1)  # a real crash of the worker process, for fault tests

    def _load(self, load: Callable[[], Any]) -> Any:
        try:
            if self._flags:
                with command_line_wording():
                    return load()
            return load()
        except NlgbiasError as exc:
            self._error = str(exc)
            return None

    def ready(self) -> dict:
        """``{"info": ...}`` once loaded, or ``{"error": one line}``."""
        return {"error": self._error} if self._error else {"info": self._info()}

    def _info(self) -> dict:
        return {}


class GenerationWorker(_Worker):
    """A Ray actor holding one model: resolves it on its own node (the fingerprint must match the
    driver's, so every node has the same weights), loads it once, and generates whole batches."""

    def __init__(self, model_id: str, fingerprint: str, options, **kwargs) -> None:
        super().__init__(**kwargs)

        def load():
            ref = resolve_model(model_id, options)
            if ref.fingerprint != fingerprint:
                raise BackendError(f"{option('--model', model_id, keyword='models', many=True)}: the weights on Ray "
                                   f"node {socket.gethostname()} differ from the driver's ({ref.fingerprint[:16]} vs "
                                   f"{fingerprint[:16]}); give every node the same files")
            return load_backend(ref, options)
        self.backend = self._load(load)

    def _info(self) -> dict:
        return self.backend.info

    def generate(self, requests: list) -> list[str]:
        """Texts for one batch of requests, in order (``Backend.generate``)."""
        self._count_call()
        if self.backend is None:
            raise BackendError(self._error)
        return self.backend.generate(requests)


class ScoringWorker(_Worker):
    """A Ray actor holding one scorer (loaded once), scoring chunks of texts."""

    def __init__(self, name: str, version: str, **kwargs) -> None:
        super().__init__(**kwargs)

        self.scorer = self._load(lambda: get_scorer(name))
        if self.scorer is not None and self.scorer.version != version:
            self._error = (f"scorer {name}: version {self.scorer.version} on Ray node {socket.gethostname()}, "
                           f"{version} on the driver; install the same nlgbias everywhere")
            self.scorer = None

    def score(self, texts: list[str]):
        """``scorer.score(texts)``: ``label, score, details`` per text."""
        self._count_call()
        if self.scorer is None:
            raise BackendError(self._error)
        return self.scorer.score(texts)


__all__ = ["RayOptions", "RayPool", "import_ray", "INSTALL_HINT"]
