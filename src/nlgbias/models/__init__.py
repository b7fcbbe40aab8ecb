"""Models: backends that sample continuations and score log-probabilities.

``resolve_model`` checks a ``--model`` value cheaply; ``load_backend`` loads it; ``register_backend``
adds a backend (``--model NAME:SOURCE``).
"""

from nlgbias.models.backend import Backend, GenerationRequest, TokenBackend
from nlgbias.models.embedded import DEFAULT_MODEL, EMBEDDED
from nlgbias.models.registry import (
                                     BACKENDS,
                                     BackendOptions,
                                     ModelRef,
                                     list_models,
                                     load_backend,
                                     register_backend,
                                     resolve_model,
)
from nlgbias.submodules import lazy_submodules

__all__ = ["BACKENDS", "Backend", "BackendOptions", "DEFAULT_MODEL", "EMBEDDED", "GenerationRequest", "ModelRef",
           "TokenBackend", "list_models", "load_backend", "register_backend", "resolve_model"]

__getattr__ = lazy_submodules(__name__)  # nlgbias.<package>.<module> after a plain import nlgbias
