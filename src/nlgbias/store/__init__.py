"""The store underneath the pipeline: SQLite run store and atomic output files."""

from nlgbias.store.db import RunStore, now
from nlgbias.store.export import (
                                  atomic_write,
                                  write_bytes,
                                  write_csv,
                                  write_json,
                                  write_jsonl,
                                  write_parquet,
                                  write_text,
)
from nlgbias.submodules import lazy_submodules

__all__ = ["RunStore", "atomic_write", "now", "write_bytes", "write_csv", "write_json", "write_jsonl", "write_parquet",
           "write_text"]

__getattr__ = lazy_submodules(__name__)  # nlgbias.<package>.<module> after a plain import nlgbias
