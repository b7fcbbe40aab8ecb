"""Where the package's own data lives: one lookup for every shipped file, and its version.

``data_path("regard", "regard.csv")`` is ``nlgbias/data/regard/regard.csv`` inside the installed
package; ``package_path("suites", "data")`` is a folder of another subpackage.  Nothing here
imports another part of nlgbias.

>>> data_path("intersectional", "us_rows_data.csv").is_file()
True
"""

from __future__ import annotations

from importlib import metadata, resources
from pathlib import Path

DISTRIBUTION = "nlgbias"


def package_path(*parts: str) -> Path:
    """Path of ``nlgbias/<parts...>`` in the installed package."""
    return Path(str(resources.files("nlgbias").joinpath(*parts)))


def data_path(*parts: str) -> Path:
    """Path of ``nlgbias/data/<parts...>``: the shipped data sets, lists and classifiers."""
    return package_path("data", *parts)


def package_version() -> str:
    """The installed version of nlgbias, from the package metadata (one source: ``pyproject.toml``).

    A source tree that was never installed has no metadata: ``"0+unknown"``.
    """
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0+unknown"


__all__ = ["data_path", "package_path", "package_version"]
