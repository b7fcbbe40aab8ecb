"""One registry mechanism for analyses, scorers and backends: names -> lazily imported objects.

A :class:`Registry` maps a name to an object, or to a ``"module:attr"`` string that is imported
the first time the name is used, so listing names never loads a model or a heavy package.  It is
filled from three places, in this order:

1. the built-in entries of the package that owns the registry;
2. Python entry points of installed packages, in the registry's group (``nlgbias.analyses``,
   ``nlgbias.scorers``, ``nlgbias.backends``), read once, on the first lookup;
3. :meth:`Registry.register` calls, e.g. in a module loaded with ``--plugin MODULE``
   (:func:`load_plugin`), or in your own code before ``nlgbias.run(...)``.

An unknown name raises the registry's error with one line: *where: unknown KIND; did you mean
X? available: A, B, C*.

Example, a package that ships an analysis::

    # pyproject.toml
    [project.entry-points."nlgbias.analyses"]
    continuation_lengths = "my_probe:ANALYSIS"
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, MutableMapping

from nlgbias.errors import InputError, NlgbiasError

GROUPS = ("nlgbias.analyses", "nlgbias.scorers", "nlgbias.backends")

# Error messages (tests compare the exact text).
PLUGIN_NOT_FOUND = "{where} {spec}: no such module or .py file"
PLUGIN_FAILED = "{where} {spec}: importing it failed ({error})"
BAD_REFERENCE = "{kind} {name!r}: {ref!r} is not a 'module:attribute' reference"


def did_you_mean(name: str, choices) -> str:
    """``"did you mean X? "`` for the closest of ``choices`` to ``name`` (empty if none is close).

    >>> did_you_mean("regrad", ["regard", "vader"])
    'did you mean regard? '
    """
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f"did you mean {close[0]}? " if close else ""


def resolve(ref: str) -> Any:
    """The object a ``"module:attr"`` (or ``"module:attr.inner"``) reference names, imported now."""
    module, _, attr = ref.partition(":")
    target: Any = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        target = getattr(target, part)
    return target


class Registry(MutableMapping[str, Any]):
    """Name -> object, where an entry may be a lazy ``"module:attr"`` reference.

    ``registry[name]`` imports a lazy entry on first use and returns the object; an unknown name
    raises ``error`` with the one line of :meth:`unknown`.  ``registry[name] = obj`` (or
    :meth:`register`) adds or replaces an entry; :meth:`ref` returns an entry unresolved.

    Parameters
    ----------
    kind : str
        What one entry is, for messages: ``analysis``, ``scorer``, ``backend``.
    group : str
        The entry-point group read on first use (one of :data:`GROUPS`).
    entries : mapping, optional
        The built-in entries, in the order they are listed.
    error : exception class, default=InputError
        Raised for an unknown name.
    where : callable, optional
        ``where(name) -> str``: how the message names the value given (default ``KIND NAME``).
    """

    def __init__(self, kind: str, group: str, entries: dict[str, Any] | None = None, *,
                 error: type[NlgbiasError] = InputError, where: Callable[[str], str] | None = None) -> None:
        self.kind = kind
        self.group = group
        self.error = error
        self.where = where or (lambda name: f"{kind} {name}")
        self._entries: dict[str, Any] = dict(entries or {})
        self._loaded: dict[str, Any] = {}
        self._entry_points_read = False

    # -- filling -------------------------------------------------------------------------------

    def _read_entry_points(self) -> None:
        if self._entry_points_read:
            return
        self._entry_points_read = True
        for point in importlib.metadata.entry_points(group=self.group):
            self._entries.setdefault(point.name, point.value)

    def register(self, name: str, target: Any) -> Any:
        """Add (or replace) ``name``: an object, or a ``"module:attr"`` string imported on first use."""
        if isinstance(target, str) and ":" not in target:
            raise InputError(BAD_REFERENCE.format(kind=self.kind, name=name, ref=target))
        self._read_entry_points()
        self._entries[name] = target
        self._loaded.pop(name, None)
        return target

    # -- lookup --------------------------------------------------------------------------------

    def names(self) -> tuple[str, ...]:
        """Every registered name, built-ins first, in registration order."""
        self._read_entry_points()
        return tuple(self._entries)

    def ref(self, name: str) -> Any:
        """The entry as registered (a ``"module:attr"`` string or the object); KeyError if unknown."""
        self._read_entry_points()
        return self._entries[name]

    def unknown(self, name: str, where: str | None = None) -> str:
        """The one-line message for an unknown ``name``."""
        names = sorted(self.names())
        return (f"{where or self.where(name)}: unknown {self.kind}; {did_you_mean(name, names)}"
                f"available: {', '.join(names) or 'none'}")

    def get_or_raise(self, name: str, where: str | None = None) -> Any:
        """``self[name]``, or ``error`` with the :meth:`unknown` line naming ``where``."""
        if name not in self:
            raise self.error(self.unknown(name, where))
        return self[name]

    def __getitem__(self, name: str) -> Any:
        self._read_entry_points()
        if name not in self._entries:
            raise self.error(self.unknown(name))
        if name not in self._loaded:
            target = self._entries[name]
            self._loaded[name] = resolve(target) if isinstance(target, str) else target
        return self._loaded[name]

    def get(self, name: str, default: Any = None) -> Any:
        """``self[name]`` if registered, else ``default`` (an unknown name is not an error here)."""
        return self[name] if name in self else default

    def __setitem__(self, name: str, target: Any) -> None:
        self.register(name, target)

    def __delitem__(self, name: str) -> None:
        self._read_entry_points()
        del self._entries[name]
        self._loaded.pop(name, None)

    def __contains__(self, name: object) -> bool:
        self._read_entry_points()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self.names())!r})"


def load_plugin(spec: str, *, where: str = "--plugin") -> Any:
    """Import ``spec``, a module name (``my_probe``) or the path of a ``.py`` file, once; return the module.

    The module registers its analyses, scorers or backends when imported (see :class:`Registry`).
    A module name is looked up on ``sys.path`` and in the current folder.

    Raises
    ------
    InputError
        No such module or file, or the module raised (or called ``sys.exit``) while importing (one
        line, no traceback).
    """
    path = Path(spec)
    try:
        if path.suffix == ".py" or path.is_file():
            if not path.is_file():
                raise InputError(PLUGIN_NOT_FOUND.format(where=where, spec=spec))
            name = f"nlgbias_plugin_{path.resolve().stem}"
            if name in sys.modules:
                return sys.modules[name]
            loader_spec = importlib.util.spec_from_file_location(name, path.resolve())
            assert loader_spec is not None and loader_spec.loader is not None  # a .py file always has one
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[name] = module
            try:
                loader_spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
            return module
        if "" not in sys.path and str(Path.cwd()) not in sys.path:
            sys.path.insert(0, str(Path.cwd()))
        if importlib.util.find_spec(spec) is None:
            raise InputError(PLUGIN_NOT_FOUND.format(where=where, spec=spec))
        return importlib.import_module(spec)
    except NlgbiasError:
        raise
    except (ImportError, ValueError) as exc:
        if isinstance(exc, ModuleNotFoundError) and exc.name and (spec == exc.name or spec.startswith(exc.name + ".")):
            raise InputError(PLUGIN_NOT_FOUND.format(where=where, spec=spec)) from None
        raise InputError(PLUGIN_FAILED.format(where=where, spec=spec, error=f"{type(exc).__name__}: {exc}")) from None
    except Exception as exc:
        raise InputError(PLUGIN_FAILED.format(where=where, spec=spec, error=f"{type(exc).__name__}: {exc}")) from None
    except SystemExit as exc:  # sys.exit() at import: a run that exits 0 having done nothing would look fine
        raise InputError(PLUGIN_FAILED.format(where=where, spec=spec,
                                              error=f"it called sys.exit({exc.code!r}) while being imported")) from None


__all__ = ["GROUPS", "Registry", "did_you_mean", "load_plugin", "resolve"]
