"""The standing bad-input suite: every command and option, one case per way to get it wrong.

Each case runs ``nlgbias ...`` in-process and asserts the promise of the README: exit code 2,
exactly one line on stderr starting ``Error:`` (with the expected words), no traceback, and
nothing changed on disk: every file under the test folder keeps its bytes (no file appears
or disappears) and the finished run's store keeps every row.  The cases share one finished
run, one annotation folder and the damaged inputs, all built once (fake model, vader scorer).
Counted and explained in docs/reliability.md.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from nlgbias.annotation import read_sheet
from nlgbias.cli import main

OK_SUITE = "suite: ok\ngroups:\n  - {id: a, text: The A, attributes: {axis: g}}\n  - {id: b, text: The B, attributes: {axis: g}}\ntemplates:\n  - {id: t, context: c, text: '{group} was'}\n"


def call(capsys, args):
    with pytest.raises(SystemExit) as caught:
        main([str(a) for a in args])
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def suite_file(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def writable(folder: Path) -> bool:
    try:
        tempfile.NamedTemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


@pytest.fixture(scope="module")
def read_only_folder(tmp_path_factory):
    """An empty folder nobody may write into, or None where this machine cannot make one.

    ``chmod 555`` is enough for a user; root writes anyway, so for root the folder is also made
    immutable (``chattr +i``) or, failing that, bind-mounted read-only.
    """
    folder = tmp_path_factory.mktemp("read-only-parent") / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    undo = None
    if writable(folder) and subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0:
        undo = ["chattr", "-i", str(folder)]
    if writable(folder) and subprocess.run(["mount", "--bind", "-o", "ro", str(folder), str(folder)],
                                           capture_output=True).returncode == 0:
        undo = ["umount", str(folder)]
    yield None if writable(folder) else folder
    if undo:
        subprocess.run(undo, check=True)
    folder.chmod(0o755)


@pytest.fixture(scope="module")
def world(tmp_path_factory, read_only_folder):
    """Everything the cases point at, built once; afterwards nothing may change."""
    base = tmp_path_factory.mktemp("bad-inputs")
    w = {"base": base}
    finished = base / "finished"
    import nlgbias

    nlgbias.run("sheng2019", models=["fake"], samples=1, scorers=["vader"], n_boot=100, out=finished, quiet=True)
    w["finished"] = finished
    annotation = base / "annotation"
    code = main_quiet(["annotate", "sample", str(finished), "--out", str(annotation), "--k-positive", "1",
                       "--k-negative", "1"])
    assert code == 0
    w["annotation"] = annotation
    items = pd.read_csv(annotation / "items.csv", dtype=str)
    w["items"] = annotation / "items.csv"
    w["sheet"] = annotation / "sheet-a1.csv"
    sheet = read_sheet(w["sheet"])
    filled = sheet.assign(regard="positive", sentiment="positive")
    inputs = base / "inputs"
    inputs.mkdir()
    filled.to_csv(inputs / "sheet-a1.csv", index=False)
    w["filled"] = inputs / "sheet-a1.csv"
    for name, sheet_copy in {"unknown": filled.assign(id="nope"), "noid": filled.assign(id=""),
                             "badlabel": filled.assign(regard="great")}.items():
        (inputs / name).mkdir()
        sheet_copy.to_csv(inputs / name / "sheet-a1.csv", index=False)
    (inputs / "items-empty.csv").write_text("")
    items.drop(columns=["id"]).to_csv(inputs / "items-noid.csv", index=False)
    items.head(0).to_csv(inputs / "items-header.csv", index=False)
    pd.concat([items, items.head(1)]).to_csv(inputs / "items-dup.csv", index=False)
    for name, content in {"ods": ("sheet-a1.ods", b"PK\x03\x04"), "notxlsx": ("sheet-a1.xlsx", b"not a zip"),
                          "encoding": ("sheet-a1.csv", b"id,annotator,regard,sentiment\r\nx,a1,\x81\x8d,x\r\n"),
                          "pipes": ("sheet-a1.csv", b"id|annotator|regard|sentiment\ni0|a1|positive|positive\n")}.items():
        (inputs / name).mkdir()
        (inputs / name / content[0]).write_bytes(content[1])
    (inputs / "blank").mkdir()
    sheet.to_csv(inputs / "blank" / "sheet-a1.csv", sep=";", index=False, encoding="cp1252")
    (inputs / "items-latin.csv").write_bytes("id,context,vader_label\ncaf\xe9,c,positive\n".encode("latin-1"))
    (inputs / "items-garbage.csv").write_text('id,context,vader_label\n"unterminated,c\n')
    # damaged copies of the finished run, one file each
    for name, content in {"metrics-garbage": ("metrics.json", b"{not json"),
                          "metrics-list": ("metrics.json", b"[1, 2]"),
                          "metrics-empty-object": ("metrics.json", b"{}"),
                          "metrics-latin": ("metrics.json", "caf\xe9".encode("latin-1")),
                          "metrics-wrong-tables": ("metrics.json", b'{"meta": {"columns": {"shares": 5}}}'),
                          "samples-garbage": ("samples.parquet", b"PAR1 not really"),
                          "samples-empty": ("samples.parquet", b""),
                          "manifest-garbage": ("manifest.json", b"\x00\x01"),
                          "manifest-empty-object": ("manifest.json", b"{}"),
                          "manifest-list": ("manifest.json", b"[]"),
                          "metrics-nested": ("metrics.json", b"[" * 200_000),
                          "metrics-long-number": ("metrics.json", b'{"meta": ' + b"7" * 5001 + b"}"),
                          "manifest-nested": ("manifest.json", b'{"run_id": ' + b"[" * 200_000),
                          "manifest-long-number": ("manifest.json", b'{"run_id": ' + b"1" * 5001 + b"}"),
                          "no-metrics": ("metrics.json", None)}.items():
        copy = base / name
        shutil.copytree(finished, copy, ignore=shutil.ignore_patterns("store.sqlite*"))
        if content[1] is None:
            (copy / content[0]).unlink()
        else:
            (copy / content[0]).write_bytes(content[1])
        w[name] = copy
    novader = base / "no-vader"
    novader.mkdir()
    pd.read_parquet(finished / "samples.parquet").drop(columns=["vader_label"]).to_parquet(novader / "samples.parquet")
    w["no-vader"] = novader
    empty_store = base / "empty-store"
    empty_store.mkdir()
    (empty_store / "store.sqlite").write_bytes(b"")
    w["empty-store"] = empty_store
    w["afile"] = suite_file(inputs, "afile", "x")
    w["ro"] = read_only_folder
    for name, line in {"jsonl-nested": b"[" * 200_000, "jsonl-long-number": b'{"id": ' + b"9" * 5001 + b"}"}.items():
        (inputs / name).mkdir()
        (inputs / name / "sheet-a1.jsonl").write_bytes(line + b"\n")
    w["latin"] = suite_file(inputs, "latin.txt", "fine\ncaf\xe9\n".encode("latin-1"))
    w["texts"] = suite_file(inputs, "texts.txt", "XYZ was kind.\n")
    w["texts-link"] = inputs / "texts-link.txt"
    os.link(w["texts"], w["texts-link"])  # the same file under another name
    w["names-nocol"] = suite_file(inputs, "names-nocol.csv", "name,sex\nAmina,F\n")
    w["names-conflict"] = suite_file(inputs, "names-conflict.csv", "name,gender,continent\nAmina,F,Africa\nAmina,M,Asia\n")
    w["names-badgender"] = suite_file(inputs, "names-bad.csv", "name,gender,continent\nAmina,X,Africa\n")
    w["names"] = suite_file(inputs, "names.csv", "name,gender,continent\nAmina,F,Africa\n")
    w["bls-typo"] = suite_file(inputs, "bls.csv", "job,bls_title,gendered,source\nnurse,Registred nurses,false,mine\n")
    w["regard-nocols"] = suite_file(inputs, "regard.csv", "a,b\n1,2\n")
    # suites
    s = {}
    s["syntax"] = suite_file(inputs, "syntax.yaml", "suite: x\ngroups: [\n")
    s["list"] = suite_file(inputs, "list.yaml", "- a\n- b\n")
    s["unknown-key"] = suite_file(inputs, "unknown-key.yaml", OK_SUITE + "colour: red\n")
    s["dup-group"] = suite_file(inputs, "dup.yaml", OK_SUITE.replace("{id: b,", "{id: a,"))
    s["no-placeholder"] = suite_file(inputs, "noph.yaml", OK_SUITE.replace("'{group} was'", "no placeholder"))
    s["missing-include"] = suite_file(inputs, "inc.yaml", "include: nowhere.yaml\nsuite: y\n")
    s["self-include"] = suite_file(inputs, "self.yaml", "include: self.yaml\nsuite: y\n")
    s["latin"] = suite_file(inputs, "latin.yaml", OK_SUITE.replace("The A", "caf\xe9").encode("latin-1"))
    s["version"] = suite_file(inputs, "version.yaml", OK_SUITE + "version: 0\n")
    s["kind"] = suite_file(inputs, "kind.yaml", OK_SUITE + "kind: poem\n")
    s["truncate"] = suite_file(inputs, "truncate.yaml", OK_SUITE + "truncate: words:0\n")
    s["analysis"] = suite_file(inputs, "analysis.yaml", OK_SUITE + "analyses: [magic]\n")
    s["scorers"] = suite_file(inputs, "scorers.yaml", OK_SUITE + "scorers: []\n")
    s["sampling"] = suite_file(inputs, "sampling.yaml", OK_SUITE + "sampling: {temprature: 1}\n")
    s["no-groups"] = suite_file(inputs, "nogroups.yaml", "suite: x\ntemplates:\n  - {id: t, context: c, text: '{group} was'}\n")
    s["empty"] = suite_file(inputs, "empty.yaml", "")
    s["huge"] = suite_file(inputs, "huge.yaml", OK_SUITE + "#" + "x" * 5_100_000 + "\n")
    many = "suite: many\ngroups:\n" + "".join(f"  - {{id: g{i}, text: G{i}, attributes: {{axis: x}}}}\n" for i in range(400)) + "templates:\n" + \
        "".join(f"  - {{id: t{i}, context: c, text: '{{group}} number {i}'}}\n" for i in range(300))
    s["many-prompts"] = suite_file(inputs, "many.yaml", many)
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(7)) + "suite: bomb\n"
    s["alias-bomb"] = suite_file(inputs, "bomb.yaml", bomb)
    s["pronoun-key"] = suite_file(inputs, "pk.yaml", OK_SUITE + "continuations: [' he']\n")
    s["template-field"] = suite_file(inputs, "tf.yaml", OK_SUITE.replace("context: c, ", ""))
    s["nested-flow"] = suite_file(inputs, "nested-flow.yaml", "[" * 100_000)
    s["nested-block"] = suite_file(inputs, "nested-block.yaml", "suite: x\ngroups:\n" + "- " * 3000 + "x\n")
    s["dup-top-key"] = suite_file(inputs, "dup-top.yaml", OK_SUITE + "suite: other\n")
    s["dup-list-key"] = suite_file(inputs, "dup-list.yaml", OK_SUITE + "templates:\n  - {id: u, context: c, text: '{group} is'}\n")
    s["dup-nested-key"] = suite_file(inputs, "dup-nested.yaml", OK_SUITE.replace("text: The A,", "text: The A, text: The C,"))
    for key, name in {"name-traversal": "../../evil", "name-absolute": "/tmp/evil", "name-nul": "a\\0b",
                      "name-long": "x" * 300, "name-newline": "a\\n"}.items():
        s[key] = suite_file(inputs, f"{key}.yaml", OK_SUITE.replace("suite: ok", f'suite: "{name}"'))
    w["suites"] = s
    return w


def main_quiet(args) -> int:
    try:
        main(args)
    except SystemExit as exc:
        return exc.code or 0
    return 0


def snapshot(base: Path) -> dict:
    """Every file's SHA-256 (the store by its rows: SQLite may rewrite pages it did not change)."""
    state = {}
    for path in sorted(base.rglob("*")):
        if path.is_file() and not path.name.startswith("store.sqlite"):
            state[str(path.relative_to(base))] = hashlib.sha256(path.read_bytes()).hexdigest()
    store = base / "finished" / "store.sqlite"
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        for table in ("generations", "scores", "runs", "models", "records"):
            state[f"store:{table}"] = db.execute(f"SELECT COUNT(*), group_concat(rowid) FROM {table}").fetchone()
    state["empty-store"] = (base / "empty-store" / "store.sqlite").stat().st_size
    return state


def _cuda_case():
    import torch

    return "cuda" if not torch.cuda.is_available() else "cuda:99"


F = "{finished}"
RUN = ["run", "sheng2019", "--model", "fake", "--samples", "1", "--scorer", "vader", "--quiet", "--out", F]

# (case id, arguments with {placeholders} from the world, words the one Error line must contain)
CASES = [
    # run: numbers
    ("run-samples-0", RUN + ["--samples", "0"], "--samples 0: must be a whole number of at least 1"),
    ("run-samples-negative", RUN + ["--samples", "-3"], "--samples -3: must be a whole number of at least 1"),
    ("run-samples-word", RUN + ["--samples", "many"], "Invalid value for '--samples'"),
    ("run-batch-size-0", RUN + ["--batch-size", "0"], "--batch-size 0: must be a whole number of at least 1"),
    ("run-batch-size-word", RUN + ["--batch-size", "x"], "Invalid value for '--batch-size'"),
    ("run-batch-size-negative", RUN + ["--batch-size", "-3"], "--batch-size -3: must be a whole number of at least 1, or auto"),
    ("run-batch-size-auto-typo", RUN + ["--batch-size", "autox"], "Invalid value for '--batch-size': 'autox' is not a whole number or auto"),
    ("run-batch-size-fraction", RUN + ["--batch-size", "1.5"], "Invalid value for '--batch-size': '1.5' is not a whole number"),
    ("run-batch-size-huge", RUN + ["--batch-size", "10000000000"], "--batch-size 10000000000: must be at most 100,000"),
    ("run-max-new-tokens-0", RUN + ["--max-new-tokens", "0"], "--max-new-tokens:"),
    ("run-max-new-tokens-negative", RUN + ["--max-new-tokens", "-1"], "--max-new-tokens:"),
    ("run-temperature-negative", RUN + ["--temperature", "-1"], "--temperature:"),
    ("run-temperature-word", RUN + ["--temperature", "hot"], "Invalid value for '--temperature'"),
    ("run-top-k-negative", RUN + ["--top-k", "-1"], "--top-k:"),
    ("run-top-p-0", RUN + ["--top-p", "0"], "--top-p: top_p must be in (0, 1], got 0.0"),
    ("run-top-p-above-1", RUN + ["--top-p", "1.5"], "--top-p: top_p must be in (0, 1]"),
    ("run-dtype", RUN + ["--dtype", "int8"], "Invalid value for '--dtype'"),
    ("run-device-bogus", RUN + ["--device", "bogus"], "--device bogus: unknown device; use auto, cpu, cuda, cuda:N or mps"),
    ("run-device-empty", RUN + ["--device", ""], "--device : unknown device"),
    ("run-device-cuda-missing", RUN + ["--device", "{cuda}"], "--device {cuda}:"),
    ("run-device-gpu", RUN + ["--device", "gpu"], "--device gpu: unknown device"),
    ("run-concurrency-0", RUN + ["--concurrency", "0"], "--concurrency 0: must be a whole number of at least 1"),
    ("run-timeout-negative", RUN + ["--timeout", "-1"], "--timeout -1.0: must be more than 0 seconds"),
    ("run-timeout-0", RUN + ["--timeout", "0"], "--timeout 0.0: must be more than 0 seconds"),
    ("run-timeout-nan", RUN + ["--timeout", "nan"], "--timeout nan: must be a finite number"),
    ("run-timeout-word", RUN + ["--timeout", "soon"], "Invalid value for '--timeout'"),
    ("run-max-retries-negative", RUN + ["--max-retries", "-1"], "--max-retries -1: must be a whole number of at least 0"),
    ("run-cooldown-negative", RUN + ["--cooldown", "-1"], "--cooldown -1.0: must be at least 0 seconds"),
    ("run-cooldown-nan", RUN + ["--cooldown", "nan"], "--cooldown nan: must be a finite number"),
    ("run-n-boot-small", RUN + ["--n-boot", "5"], "--n-boot 5: must be a whole number of at least 100"),
    ("run-n-boot-word", RUN + ["--n-boot", "x"], "Invalid value for '--n-boot'"),
    ("run-min-n-negative", RUN + ["--min-n", "-1"], "--min-n -1: must be a whole number of at least 1"),
    ("run-min-n-0", RUN + ["--min-n", "0"], "--min-n 0: must be a whole number of at least 1"),
    ("run-seed-word", RUN + ["--seed", "x"], "Invalid value for '--seed'"),
    ("run-unknown-option", RUN + ["--bogus"], "No such option '--bogus'. (Did you mean one of: '--out'"),
    # run: values that can only be mistakes (upper bounds, named in --help)
    ("run-samples-huge", RUN + ["--samples", "99999999999"], "--samples 99,999,999,999: at most 100,000 per prompt"),
    ("run-n-boot-huge", RUN + ["--n-boot", "1000000000000"], "--n-boot 1,000,000,000,000: at most 1,000,000 bootstrap replicates"),
    ("run-n-boot-negative", RUN + ["--n-boot", "-1"], "--n-boot -1: must be a whole number of at least 100"),
    ("run-batch-size-just-over", RUN + ["--batch-size", "100001"], "--batch-size 100001: must be at most 100,000"),
    ("run-batch-size-minus-8", RUN + ["--batch-size", "-8"], "--batch-size -8: must be a whole number of at least 1, or auto"),
    ("run-concurrency-huge", RUN + ["--concurrency", "99999999999"], "--concurrency 99,999,999,999: at most 1,024 requests in flight per server"),
    ("run-concurrency-negative", RUN + ["--concurrency", "-1"], "--concurrency -1: must be a whole number of at least 1"),
    ("run-timeout-huge", RUN + ["--timeout", "1e9"], "--timeout 1,000,000,000.0: at most 86,400 seconds (a day)"),
    ("run-timeout-inf", RUN + ["--timeout", "inf"], "--timeout inf: must be a finite number"),
    ("run-max-retries-huge", RUN + ["--max-retries", "1000"], "--max-retries 1,000: at most 100"),
    ("run-cooldown-huge", RUN + ["--cooldown", "1e9"], "--cooldown 1,000,000,000.0: at most 86,400 seconds"),
    ("run-cooldown-inf", RUN + ["--cooldown", "inf"], "--cooldown inf: must be a finite number"),
    ("run-min-n-huge", RUN + ["--min-n", "10000000000"], "--min-n 10,000,000,000: at most 1,000,000,000"),
    ("run-top-k-huge", RUN + ["--top-k", "99999999999"], "--top-k: top_k must be an integer from 0 (off) to 1,000,000"),
    ("run-max-new-tokens-huge", RUN + ["--max-new-tokens", "99999999999"], "--max-new-tokens: max_new_tokens must be an integer from 1 to 4096"),
    ("run-temperature-huge", RUN + ["--temperature", "1e9"], "--temperature: temperature must be from 0 to 100"),
    ("run-temperature-nan", RUN + ["--temperature", "nan"], "--temperature: temperature must be from 0 to 100, got nan"),
    ("run-top-p-nan", RUN + ["--top-p", "nan"], "--top-p: top_p must be in (0, 1], got nan"),
    ("run-max-samples-huge", RUN + ["--until-mde", "5", "--max-samples", "99999999999"], "--max-samples 99,999,999,999: at most 100,000 samples per prompt"),
    ("run-until-mde-100", RUN + ["--until-mde", "100"], "--until-mde 100: must be between 0 and 100"),
    ("run-until-mde-nan", RUN + ["--until-mde", "nan"], "--until-mde nan: must be a finite number"),
    ("run-ray-workers-huge", RUN + ["--ray", "--workers", "99999999"], "--workers 99,999,999: at most 10,000"),
    ("run-ray-worker-cpus-huge", RUN + ["--ray", "--worker-cpus", "1e12"], "--worker-cpus 1,000,000,000,000.0: at most 1,024"),
    ("run-ray-worker-gpus-huge", RUN + ["--ray", "--worker-gpus", "1000"], "--worker-gpus 1,000.0: at most 64"),
    ("run-ray-worker-cpus-nan", RUN + ["--ray", "--worker-cpus", "nan"], "--worker-cpus nan: must be a finite number"),
    # run: output folders
    ("run-out-empty", RUN[:-1] + [""], "Invalid value for '--out': '': empty value; give a path (use . for the current folder)"),
    ("run-out-blank", RUN[:-1] + [" "], "Invalid value for '--out': ' ': empty value"),
    ("run-out-nul", RUN[:-1] + ["{base}/a\0b"], "contains a NUL character"),
    ("run-out-read-only", RUN[:-1] + ["{ro}"], "--out {ro}: cannot create or write this folder"),
    ("run-out-under-read-only", RUN[:-1] + ["{ro}/run"], "--out {ro}/run: cannot create or write this folder"),
    # run: URLs with credentials (the secret never appears: checked for every case)
    ("run-model-url-credentials", RUN + ["--model", "openai:m@http://user:SECRET@127.0.0.1:9/v1"], "--model openai:m@http://***@127.0.0.1:9/v1: http://***@127.0.0.1:9/v1: the URL holds credentials (user:password@); give the server URL without them and put the key in an environment variable named by --api-key-env"),
    ("run-model-url-key-only", RUN + ["--model", "openai:m@https://SECRET@127.0.0.1:9/v1"], "the URL holds credentials"),
    ("run-model-no-name-credentials", RUN + ["--model", "openai:@http://u:SECRET@127.0.0.1:9/v1"], "the URL holds credentials"),
    ("run-api-base-credentials", RUN + ["--model", "openai:m", "--api-base", "http://user:SECRET@127.0.0.1:9/v1"], "--api-base: http://***@127.0.0.1:9/v1: the URL holds credentials"),
    ("run-api-base-list-credentials", RUN + ["--model", "openai:m", "--api-base", "http://127.0.0.1:9/v1,http://u:SECRET@127.0.0.1:10/v1"], "--api-base: http://***@127.0.0.1:10/v1: the URL holds credentials"),
    ("run-api-base-credentials-empty-item", RUN + ["--model", "openai:m", "--api-base", "http://u:SECRET@127.0.0.1:9/v1,,"], "has an empty item"),
    ("run-model-nul", RUN + ["--model", "fake\0x"], "--model 'fake\\x00x': contains a control character"),
    ("run-model-newline", RUN + ["--model", "fake\nx"], "--model 'fake\\nx': contains a control character"),
    # run: Ray pool (checked before Ray starts or the store is touched)
    ("run-ray-workers-0", RUN + ["--ray", "--workers", "0"], "--workers 0: must be a whole number of at least 1"),
    ("run-ray-worker-cpus-negative", RUN + ["--ray", "--worker-cpus", "-1"], "--worker-cpus -1.0: must be at least 0"),
    ("run-ray-worker-cpus-0", RUN + ["--ray", "--worker-cpus", "0"], "--worker-cpus 0: a worker needs at least one CPU or GPU"),
    ("run-ray-worker-gpus-negative", RUN + ["--ray", "--worker-gpus", "-1"], "--worker-gpus -1.0: must be at least 0"),
    ("run-ray-address-unreachable", RUN + ["--ray-address", "127.0.0.1:9"], "--ray-address 127.0.0.1:9: no Ray cluster answers there"),
    ("run-ray-address-no-port", RUN + ["--ray-address", "headnode"], "--ray-address headnode: give auto, or HOST:PORT of the head node"),
    ("run-ray-workers-without-ray", RUN + ["--workers", "2"], "--workers 2: only with --ray or --ray-address"),
    ("run-ray-and-address", RUN + ["--ray", "--ray-address", "auto"], "--ray-address auto: give --ray (a local Ray instance) or --ray-address, not both"),
    # run: models and servers
    ("run-model-empty", ["run", "--model", "", "--out", F, "--quiet"], "--model: empty value"),
    ("run-model-alias-typo", ["run", "--model", "smollm2", "--out", F, "--quiet"], "--model smollm2: unknown model alias; did you mean smollm2-135m?"),
    ("run-model-missing-file", ["run", "--model", "./nope/model.gguf", "--out", F, "--quiet"], "--model ./nope/model.gguf: file not found"),
    ("run-model-not-a-model", ["run", "--model", "{afile}", "--out", F, "--quiet"], "not a model folder or a .gguf file"),
    ("run-model-url-without-scheme", RUN + ["--model", "openai:x@127.0.0.1:9/v1"], "--model openai:x@127.0.0.1:9/v1: '127.0.0.1:9/v1' is not a server URL"),
    ("run-model-url-ftp", RUN + ["--model", "openai:x@ftp://h/v1"], "is not a server URL"),
    ("run-model-url-host-only", RUN + ["--model", "openai:x@localhost:8000"], "is not a server URL"),
    ("run-model-openai-no-name", RUN + ["--model", "openai:"], "--model openai:: name the served model"),
    ("run-api-base-without-scheme", RUN + ["--model", "openai:x", "--api-base", "127.0.0.1:9/v1"], "--api-base: '127.0.0.1:9/v1' is not a server URL"),
    ("run-api-base-list-without-scheme", RUN + ["--model", "openai:x", "--api-base", "http://127.0.0.1:9/v1,127.0.0.1:10/v1"], "--api-base: '127.0.0.1:10/v1' is not a server URL"),
    ("run-api-base-twice", RUN + ["--model", "openai:x", "--api-base", "http://127.0.0.1:9/v1", "--api-base", "http://127.0.0.1:9/v1/"], "--api-base: http://127.0.0.1:9/v1 is given twice; give each server once"),
    ("run-api-base-empty-item", RUN + ["--model", "openai:x", "--api-base", "http://127.0.0.1:9/v1,,http://127.0.0.1:10/v1"], "--api-base: 'http://127.0.0.1:9/v1,,http://127.0.0.1:10/v1' has an empty item"),
    ("run-api-base-trailing-comma", RUN + ["--model", "openai:x", "--api-base", "http://127.0.0.1:9/v1,"], "has an empty item; separate server URLs with single commas"),
    ("run-model-twice", ["run", "--model", "fake", "--model", "fake", "--out", F, "--quiet"], "--model: the same model is given twice"),
    ("run-model-dir-not-a-model", ["run", "--model", "{base}/inputs", "--out", F, "--quiet"], "not a model folder (no config.json) or a .gguf file"),
    # run: scorers, mappings, outputs
    ("run-scorer-unknown", RUN[:-1] + ["{finished}", "--scorer", "nope"], "--scorer nope: unknown scorer"),
    ("run-analysis-needs-scorer", ["run", "kirk2021-identity", "--model", "fake", "--scorer", "vader", "--out", F, "--quiet"], "needs the occupation scorer"),
    ("run-bls-mapping-missing", ["run", "kirk2021-identity", "--model", "fake", "--bls-mapping", "{base}/none.csv", "--out", F, "--quiet"], "none.csv"),
    ("run-bls-mapping-typo", ["run", "kirk2021-identity", "--model", "fake", "--bls-mapping", "{bls-typo}", "--out", F, "--quiet"], "BLS title 'Registred nurses' is not in us_rows_data.csv"),
    ("run-out-is-a-file", RUN[:-1] + ["{afile}"], "is a file; give a folder"),
    ("run-out-under-a-file", RUN[:-1] + ["{afile}/sub"], "cannot create or write this folder"),
    ("run-export-unknown", RUN + ["--export", "docx"], "--export docx: unknown export format 'docx'"),
    ("run-empty-store", RUN[:-1] + ["{empty-store}"], "the run store is empty (0 bytes)"),
    # run: precision-targeted sampling
    ("run-until-mde-0", RUN + ["--until-mde", "0"], "--until-mde 0: must be between 0 and 100"),
    ("run-until-mde-negative", RUN + ["--until-mde", "-5"], "--until-mde -5: must be between 0 and 100"),
    ("run-until-mde-word", RUN + ["--until-mde", "small"], "Invalid value for '--until-mde'"),
    ("run-max-samples-below-first-round", ["run", "sheng2019", "--model", "fake", "--samples", "100", "--until-mde",
                                           "5", "--max-samples", "50", "--scorer", "vader", "--quiet", "--out", F],
     "--max-samples 50: must be a whole number of at least 100 (the first round is --samples 100 samples per prompt)"),
    ("run-max-samples-without-until-mde", RUN + ["--max-samples", "500"], "--max-samples 500: the budget of precision-targeted sampling; give it with --until-mde"),
    ("run-until-mde-no-comparisons", ["run", "kirk2021-names", "--model", "fake", "--until-mde", "5", "--out", F, "--quiet"],
     "--until-mde 5.0: suite kirk2021-names has no label-share comparisons"),
    ("run-until-mde-pronoun-suite", ["run", "pronouns", "--model", "fake", "--until-mde", "5", "--out", F, "--quiet"],
     "--until-mde 5.0: suite pronouns has no label-share comparisons"),
    # run: suites
    ("suite-unknown-name", ["run", "nosuch", "--model", "fake", "--out", F], "suite nosuch: no such built-in suite or file"),
    ("suite-yaml-syntax", ["run", "{s:syntax}", "--model", "fake", "--out", F], "invalid YAML"),
    ("suite-not-a-mapping", ["run", "{s:list}", "--model", "fake", "--out", F], "a suite must be a mapping"),
    ("suite-unknown-key", ["run", "{s:unknown-key}", "--model", "fake", "--out", F], "colour: unknown key"),
    ("suite-duplicate-group", ["run", "{s:dup-group}", "--model", "fake", "--out", F], "duplicate group 'a'"),
    ("suite-no-placeholder", ["run", "{s:no-placeholder}", "--model", "fake", "--out", F], "has no {group} placeholder"),
    ("suite-missing-include", ["run", "{s:missing-include}", "--model", "fake", "--out", F], "inc.yaml:1: include: nowhere.yaml: no such built-in suite or file"),
    ("suite-includes-itself", ["run", "{s:self-include}", "--model", "fake", "--out", F], "include: includes itself"),
    ("suite-not-utf8", ["run", "{s:latin}", "--model", "fake", "--out", F], "not UTF-8 text"),
    ("suite-version-0", ["run", "{s:version}", "--model", "fake", "--out", F], "version: must be a positive integer"),
    ("suite-unknown-kind", ["run", "{s:kind}", "--model", "fake", "--out", F], "unknown kind 'poem'"),
    ("suite-bad-truncate", ["run", "{s:truncate}", "--model", "fake", "--out", F], "truncate: must be first_sentence, none or words:N"),
    ("suite-unknown-analysis", ["run", "{s:analysis}", "--model", "fake", "--out", F], "unknown analysis 'magic'"),
    ("suite-no-scorers", ["run", "{s:scorers}", "--model", "fake", "--out", F], "scorers: must be a non-empty list"),
    ("suite-sampling-typo", ["run", "{s:sampling}", "--model", "fake", "--out", F], "temprature"),
    ("suite-no-groups", ["run", "{s:no-groups}", "--model", "fake", "--out", F], "groups"),
    ("suite-empty-file", ["run", "{s:empty}", "--model", "fake", "--out", F], "a suite must be a mapping"),
    ("suite-too-large", ["run", "{s:huge}", "--model", "fake", "--out", F], "suite file is 5.1 MB; the limit is 5 MB"),
    ("suite-too-many-prompts", ["run", "{s:many-prompts}", "--model", "fake", "--out", F], "300 templates x 400 groups = 120,000 prompts; the limit is 100,000"),
    ("suite-alias-bomb", ["run", "{s:alias-bomb}", "--model", "fake", "--out", F], "too large to be a suite"),
    ("suite-pronoun-key", ["run", "{s:pronoun-key}", "--model", "fake", "--out", F], "only pronoun suites"),
    ("suite-template-field", ["run", "{s:template-field}", "--model", "fake", "--out", F], "context"),
    ("suite-is-a-folder", ["run", "{base}/inputs", "--model", "fake", "--out", F], "no such built-in suite or file"),
    ("suite-nested-flow", ["run", "{s:nested-flow}", "--model", "fake", "--out", F], "nested-flow.yaml: nested too deeply to be a suite"),
    ("suite-nested-block", ["run", "{s:nested-block}", "--model", "fake", "--out", F], "nested-block.yaml: nested too deeply to be a suite"),
    ("suite-duplicate-top-key", ["run", "{s:dup-top-key}", "--model", "fake", "--out", F], "dup-top.yaml:7: suite: given twice (first on line 1)"),
    ("suite-duplicate-list-key", ["run", "{s:dup-list-key}", "--model", "fake", "--out", F], "dup-list.yaml:7: templates: given twice (first on line 5)"),
    ("suite-duplicate-nested-key", ["run", "{s:dup-nested-key}", "--model", "fake", "--out", F], "groups[0].text: given twice"),
    ("suite-name-traversal", ["run", "{s:name-traversal}", "--model", "fake", "--out", F], "name-traversal.yaml:1: suite: required: a name of letters"),
    ("suite-name-absolute", ["run", "{s:name-absolute}", "--model", "fake", "--out", F], "name-absolute.yaml:1: suite: required: a name of letters"),
    ("suite-name-nul", ["run", "{s:name-nul}", "--model", "fake", "--out", F], "name-nul.yaml:1: suite: required: a name of letters"),
    ("suite-name-long", ["run", "{s:name-long}", "--model", "fake", "--out", F], "at most 100 characters"),
    ("suite-name-newline", ["run", "{s:name-newline}", "--model", "fake", "--out", F], "name-newline.yaml:1: suite: required"),
    # suites
    ("suites-unknown", ["suites", "nosuch"], "suite nosuch: no such built-in suite or file"),
    ("suites-bad-yaml", ["suites", "{s:syntax}"], "invalid YAML"),
    ("suites-dup-group", ["suites", "{s:dup-group}"], "duplicate group 'a'"),
    ("suites-nested", ["suites", "{s:nested-flow}"], "nested too deeply to be a suite"),
    ("suites-duplicate-key", ["suites", "{s:dup-top-key}"], "suite: given twice"),
    ("suites-name-traversal", ["suites", "{s:name-traversal}"], "suite: required: a name"),
    # score
    ("score-unknown-scorer", ["score", "--scorer", "vadr", "--input", "{texts}", "--output", "{base}/o.jsonl"], "--scorer vadr: unknown scorer; did you mean vader?"),
    ("score-missing-input", ["score", "--scorer", "vader", "--input", "{base}/none.txt", "--output", "{base}/o.jsonl"], "none.txt: file not found"),
    ("score-input-not-utf8", ["score", "--scorer", "vader", "--input", "{latin}", "--output", "{base}/o.jsonl"], "latin.txt:2: not UTF-8 text"),
    ("score-input-is-a-folder", ["score", "--scorer", "vader", "--input", "{base}/inputs", "--output", "{base}/o.jsonl"], "is a folder; give a file"),
    ("score-classifier-missing", ["score", "--scorer", "regard", "--classifier", "{base}/none", "--input", "{texts}", "--output", "{base}/o.jsonl"], "--classifier {base}/none: no classifier there"),
    ("score-classifier-not-regard", ["score", "--scorer", "vader", "--classifier", "{base}/none", "--input", "{texts}", "--output", "{base}/o.jsonl"], "--classifier: only for --scorer regard or regard4, not vader"),
    ("score-output-is-a-folder", ["score", "--scorer", "vader", "--input", "{texts}", "--output", "{base}/inputs"], "is a folder; give a file name"),
    ("score-output-under-a-file", ["score", "--scorer", "vader", "--input", "{texts}", "--output", "{afile}/o.jsonl"], "cannot write"),
    ("score-empty-mask", ["score", "--scorer", "vader", "--input", "{texts}", "--output", "{base}/o.jsonl", "--mask", " "], "--mask: give the group mention"),
    ("score-no-scorer", ["score", "--input", "{texts}", "--output", "{base}/o.jsonl"], "Missing option '--scorer'"),
    ("score-no-input", ["score", "--scorer", "vader", "--output", "{base}/o.jsonl"], "Missing option '--input'"),
    ("score-output-is-the-input", ["score", "--scorer", "vader", "--input", "{texts}", "--output", "{texts}"], "--output {texts}: is the --input file; give another file name"),
    ("score-output-is-a-link-to-the-input", ["score", "--scorer", "vader", "--input", "{texts}", "--output", "{texts-link}"], "is the --input file"),
    ("score-output-read-only", ["score", "--scorer", "vader", "--input", "{texts}", "--output", "{ro}/o.jsonl"], "--output {ro}/o.jsonl: cannot write here"),
    ("score-output-empty", ["score", "--scorer", "vader", "--input", "{texts}", "--output", ""], "Invalid value for '--output': '': empty value"),
    ("score-input-nul", ["score", "--scorer", "vader", "--input", "{base}/t\0.txt", "--output", "{base}/o.jsonl"], "Invalid value for '--input':"),
    ("score-output-nul", ["score", "--scorer", "vader", "--input", "{texts}", "--output", "{base}/o\0.jsonl"], "contains a NUL character"),
    # report
    ("report-missing-folder", ["report", "{base}/nowhere"], "metrics.json: missing"),
    ("report-no-metrics", ["report", "{no-metrics}"], "metrics.json: missing"),
    ("report-metrics-garbage", ["report", "{metrics-garbage}"], "metrics.json:1: not valid JSON"),
    ("report-metrics-list", ["report", "{metrics-list}"], "metrics.json: holds JSON that is not an object"),
    ("report-metrics-empty-object", ["report", "{metrics-empty-object}"], "metrics.json: not the metrics file of a run"),
    ("report-metrics-not-utf8", ["report", "{metrics-latin}"], "metrics.json: not UTF-8 text"),
    ("report-metrics-wrong-tables", ["report", "{metrics-wrong-tables}"], "metrics.json: not the metrics file of a run"),
    ("report-samples-garbage", ["report", "{samples-garbage}"], "samples.parquet: not a readable Parquet file"),
    ("report-samples-empty", ["report", "{samples-empty}"], "samples.parquet: not a readable Parquet file"),
    ("report-manifest-garbage", ["report", "{manifest-garbage}"], "manifest.json"),
    ("report-manifest-empty-object", ["report", "{manifest-empty-object}"], "manifest.json: lacks run_id, suite, models, statistics"),
    ("report-manifest-list", ["report", "{manifest-list}"], "manifest.json: holds JSON that is not an object"),
    ("report-metrics-nested", ["report", "{metrics-nested}"], "metrics.json: nested too deeply to be a file nlgbias wrote"),
    ("report-metrics-long-number", ["report", "{metrics-long-number}"], "metrics.json: not valid JSON (a number too long to read)"),
    ("report-manifest-nested", ["report", "{manifest-nested}"], "manifest.json: nested too deeply"),
    ("report-manifest-long-number", ["report", "{manifest-long-number}"], "manifest.json: not valid JSON (a number too long to read)"),
    ("report-folder-nul", ["report", "{base}/fin\0ished"], "fin\\x00ished': contains a NUL character"),
    ("report-export-traversal", ["report", F, "--export", "../../evil"], "--export ../../evil: unknown export format"),
    ("report-export-absolute", ["report", F, "--export", "/tmp/evil"], "--export /tmp/evil: unknown export format"),
    # report over several runs (--out)
    ("report-runs-missing-folder", ["report", F, "{base}/nowhere", "--out", "{base}/both"], "{base}/nowhere: no such run folder"),
    ("report-runs-same-run-twice", ["report", F, F, "--out", "{base}/both"], "given twice"),
    ("report-runs-out-inside-a-run", ["report", F, "--out", "{finished}/both"], "inside the run folder {finished}"),
    ("report-runs-out-is-the-run", ["report", F, "--out", F], "inside the run folder {finished}"),
    ("report-runs-out-is-a-file", ["report", F, "--out", "{afile}"], "is a file; give a folder"),
    ("report-runs-without-out", ["report", F, "{base}/nowhere"], "2 runs: a new report needs --out DIR"),
    ("report-option-without-out", ["report", F, "--min-n", "5"], "--min-n: a new report needs --out DIR"),
    ("report-min-n", ["report", F, "--out", "{base}/both", "--min-n", "0"], "--min-n 0: must be a whole number of at least 1"),
    ("report-min-n-text", ["report", F, "--out", "{base}/both", "--min-n", "many"], "Invalid value for '--min-n'"),
    ("report-confidence", ["report", F, "--out", "{base}/both", "--confidence", "1.5"], "--confidence 1.5: must be between 0 and 1"),
    ("report-title-empty", ["report", F, "--out", "{base}/both", "--title", " "], "--title ' ': is empty"),
    ("report-export-unknown", ["report", F, "--export", "latex,pdf"], "--export pdf: unknown export format 'pdf'; choose from latex, markdown, svg, png"),
    ("report-export-empty", ["report", F, "--export", ","], "--export ',': empty value"),
    ("report-export-filter-alone", ["report", F, "--export-significant"], "--export-significant: filters the rows of exported tables; give it with --export latex or markdown"),
    ("report-export-unknown-scorer", ["report", F, "--export", "latex", "--export-scorer", "regrad"], "--export-scorer regrad: not in this run; its scorers:"),
    ("report-runs-export-unknown-context", ["report", F, "--out", "{base}/both", "--export", "latex", "--export-context", "nowhere"], "--export-context nowhere: not in this run; its contexts:"),
    ("report-runs-out-read-only", ["report", F, "--out", "{ro}"], "--out {ro}: cannot create or write this folder"),
    ("report-runs-out-under-read-only", ["report", F, "{metrics-garbage}", "--out", "{ro}/both"], "--out {ro}/both: cannot create or write this folder"),
    ("report-runs-out-empty", ["report", F, "--out", ""], "Invalid value for '--out': '': empty value"),
    ("report-runs-out-nul", ["report", F, "--out", "{base}/b\0th"], "contains a NUL character"),
    ("report-runs-metrics-nested", ["report", "{metrics-nested}", "--out", "{base}/both"], "metrics.json: nested too deeply"),
    ("report-runs-manifest-long-number", ["report", F, "{manifest-long-number}", "--out", "{base}/both"], "manifest.json: not valid JSON (a number too long to read)"),
    ("report-confidence-nan", ["report", F, "--out", "{base}/both", "--confidence", "nan"], "--confidence nan: must be a finite number"),
    ("report-min-n-negative", ["report", F, "--out", "{base}/both", "--min-n", "-3"], "--min-n -3: must be a whole number of at least 1"),
    # annotate sample
    ("annotate-sample-no-run", ["annotate", "sample", "{base}/nowhere", "--out", "{base}/ann"], "samples.parquet: missing"),
    ("annotate-sample-k-positive", ["annotate", "sample", F, "--out", "{base}/ann", "--k-positive", "-1"], "--k-positive -1: must be 0 or more"),
    ("annotate-sample-k-negative", ["annotate", "sample", F, "--out", "{base}/ann", "--k-negative", "-1"], "--k-negative -1: must be 0 or more"),
    ("annotate-sample-k-neutral", ["annotate", "sample", F, "--out", "{base}/ann", "--k-neutral", "-2"], "--k-neutral -2: must be 0 or more"),
    ("annotate-sample-low-confidence", ["annotate", "sample", F, "--out", "{base}/ann", "--low-confidence", "-1"], "--low-confidence -1: must be 0 or more"),
    ("annotate-sample-all-zero", ["annotate", "sample", F, "--out", "{base}/ann", "--k-positive", "0", "--k-negative", "0"], "--k-positive"),
    ("annotate-sample-format", ["annotate", "sample", F, "--out", "{base}/ann", "--format", "xml"], "Invalid value for '--format'"),
    ("annotate-sample-annotators-empty", ["annotate", "sample", F, "--out", "{base}/ann", "--annotators", ","], "--annotators"),
    ("annotate-sample-annotators-twice", ["annotate", "sample", F, "--out", "{base}/ann", "--annotators", "a,a"], "--annotators a,a: give distinct names"),
    ("annotate-sample-no-vader", ["annotate", "sample", "{no-vader}", "--out", "{base}/ann"], "has no vader_label column"),
    ("annotate-sample-out-is-a-file", ["annotate", "sample", F, "--out", "{afile}"], "--out"),
    ("annotate-sample-out-read-only", ["annotate", "sample", F, "--out", "{ro}"], "--out {ro}: cannot create or write this folder"),
    ("annotate-sample-out-under-read-only", ["annotate", "sample", F, "--out", "{ro}/ann"], "--out {ro}/ann: cannot create or write this folder"),
    ("annotate-sample-out-empty", ["annotate", "sample", F, "--out", ""], "Invalid value for '--out': '': empty value"),
    ("annotate-sample-samples-garbage", ["annotate", "sample", "{samples-garbage}", "--out", "{base}/ann"], "samples.parquet: not a readable Parquet file"),
    ("annotate-sample-samples-empty", ["annotate", "sample", "{samples-empty}", "--out", "{base}/ann"], "samples.parquet: not a readable Parquet file"),
    ("annotate-sample-annotator-traversal", ["annotate", "sample", F, "--out", "{base}/ann", "--annotators", "../../evil,b"], "--annotators '../../evil': a name here becomes a file name (sheet-NAME.csv); use letters, digits, '-', '_' and '.', starting with a letter or digit, at most 64 characters"),
    ("annotate-sample-annotator-absolute", ["annotate", "sample", F, "--out", "{base}/ann", "--annotators", "/tmp/evil"], "--annotators '/tmp/evil': a name here becomes a file name"),
    ("annotate-sample-annotator-nul", ["annotate", "sample", F, "--out", "{base}/ann", "--annotators", "a\0b,c"], "--annotators 'a\\x00b': a name here becomes a file name"),
    ("annotate-sample-annotator-long", ["annotate", "sample", F, "--out", "{base}/ann", "--annotators", "x" * 300], "...' (300 characters): a name here becomes a file name"),
    ("annotate-sample-annotator-dot-dot", ["annotate", "sample", F, "--out", "{base}/ann", "--annotators", "a,.."], "--annotators '..': a name here becomes a file name"),
    ("annotate-sample-annotator-backslash", ["annotate", "sample", F, "--out", "{base}/ann", "--annotators", "..\\evil"], "a name here becomes a file name"),
    ("annotate-sample-annotator-hidden", ["annotate", "sample", F, "--out", "{base}/ann", "--annotators", ".hidden"], "--annotators '.hidden': a name here becomes a file name"),
    ("annotate-sample-annotator-jsonl-traversal", ["annotate", "sample", F, "--out", "{base}/ann", "--format", "jsonl", "--annotators", "a/../../b"], "(sheet-NAME.jsonl)"),
    # annotate import
    ("annotate-import-items-missing", ["annotate", "import", "{filled}", "--items", "{base}/none.csv", "--out", "{base}/res"], "--items"),
    ("annotate-import-items-empty", ["annotate", "import", "{filled}", "--items", "{base}/inputs/items-empty.csv", "--out", "{base}/res"], "items-empty.csv: empty"),
    ("annotate-import-items-no-id", ["annotate", "import", "{filled}", "--items", "{base}/inputs/items-noid.csv", "--out", "{base}/res"], "items-noid.csv: missing column 'id'"),
    ("annotate-import-items-header-only", ["annotate", "import", "{filled}", "--items", "{base}/inputs/items-header.csv", "--out", "{base}/res"], "has a header but no items"),
    ("annotate-import-items-duplicate", ["annotate", "import", "{filled}", "--items", "{base}/inputs/items-dup.csv", "--out", "{base}/res"], "duplicate id"),
    ("annotate-import-items-not-utf8", ["annotate", "import", "{filled}", "--items", "{base}/inputs/items-latin.csv", "--out", "{base}/res"], "not UTF-8 text"),
    ("annotate-import-items-garbage", ["annotate", "import", "{filled}", "--items", "{base}/inputs/items-garbage.csv", "--out", "{base}/res"], "items-garbage.csv"),
    ("annotate-import-sheet-missing", ["annotate", "import", "{base}/none.csv", "--items", "{items}", "--out", "{base}/res"], "none.csv"),
    ("annotate-import-sheet-unknown-id", ["annotate", "import", "{base}/inputs/unknown/sheet-a1.csv", "--items", "{items}", "--out", "{base}/res"], "unknown id nope"),
    ("annotate-import-sheet-empty-id", ["annotate", "import", "{base}/inputs/noid/sheet-a1.csv", "--items", "{items}", "--out", "{base}/res"], "id is empty"),
    ("annotate-import-sheet-bad-label", ["annotate", "import", "{base}/inputs/badlabel/sheet-a1.csv", "--items", "{items}", "--out", "{base}/res"], "great"),
    ("annotate-import-sheet-unfilled", ["annotate", "import", "{sheet}", "--items", "{items}", "--out", "{base}/res"], "regard is empty (to skip unlabelled rows, pass --allow-blank)"),
    ("annotate-import-sheet-ods", ["annotate", "import", "{base}/inputs/ods/sheet-a1.ods", "--items", "{items}", "--out", "{base}/res"], "sheet-a1.ods: .ods files cannot be read; save it as 'CSV UTF-8' (Excel) or as .xlsx"),
    ("annotate-import-sheet-not-xlsx", ["annotate", "import", "{base}/inputs/notxlsx/sheet-a1.xlsx", "--items", "{items}", "--out", "{base}/res"], "sheet-a1.xlsx: not an .xlsx workbook"),
    ("annotate-import-sheet-encoding", ["annotate", "import", "{base}/inputs/encoding/sheet-a1.csv", "--items", "{items}", "--out", "{base}/res"], "sheet-a1.csv:2: neither UTF-8 nor Windows-1252 text"),
    ("annotate-import-sheet-separator", ["annotate", "import", "{base}/inputs/pipes/sheet-a1.csv", "--items", "{items}", "--out", "{base}/res"], "separated by commas, semicolons or tabs (found 'id|annotator|regard|sentiment')"),
    ("annotate-import-allow-blank-nothing", ["annotate", "import", "{base}/inputs/blank/sheet-a1.csv", "--items", "{items}", "--out", "{base}/res", "--allow-blank"], "sheet-a1.csv: no labelled rows"),
    ("annotate-import-ties", ["annotate", "import", "{filled}", "--items", "{items}", "--out", "{base}/res", "--ties", "coin"], "Invalid value for '--ties'"),
    ("annotate-import-no-sheets", ["annotate", "import", "--items", "{items}", "--out", "{base}/res"], "Missing argument 'SHEETS...'"),
    ("annotate-import-out-is-a-file", ["annotate", "import", "{filled}", "--items", "{items}", "--out", "{afile}"], "--out"),
    ("annotate-import-out-read-only", ["annotate", "import", "{filled}", "--items", "{items}", "--out", "{ro}/res"], "--out {ro}/res: cannot create or write this folder"),
    ("annotate-import-out-empty", ["annotate", "import", "{filled}", "--items", "{items}", "--out", ""], "Invalid value for '--out': '': empty value"),
    ("annotate-import-items-nul", ["annotate", "import", "{filled}", "--items", "{base}/items\0.csv", "--out", "{base}/res"], "Invalid value for '--items':"),
    ("annotate-import-jsonl-nested", ["annotate", "import", "{base}/inputs/jsonl-nested/sheet-a1.jsonl", "--items", "{items}", "--out", "{base}/res"], "sheet-a1.jsonl:1: not a JSON object"),
    ("annotate-import-jsonl-long-number", ["annotate", "import", "{base}/inputs/jsonl-long-number/sheet-a1.jsonl", "--items", "{items}", "--out", "{base}/res"], "sheet-a1.jsonl:1: not a JSON object"),
    ("annotate-unknown-subcommand", ["annotate", "merge"], "No such command 'merge'"),
    # ablate
    ("ablate-temperature-0", ["ablate", "--model", "fake", "--out", "{base}/abl", "--temperature", "0,1.0"], "--temperature 0: must be a number > 0"),
    ("ablate-temperature-word", ["ablate", "--model", "fake", "--out", "{base}/abl", "--temperature", "hot"], "--temperature hot: must be a number > 0"),
    ("ablate-top-k-negative", ["ablate", "--model", "fake", "--out", "{base}/abl", "--top-k", "-5"], "--top-k -5: must be a whole number >= 0"),
    ("ablate-top-k-fraction", ["ablate", "--model", "fake", "--out", "{base}/abl", "--top-k", "1.5"], "--top-k 1.5: must be a whole number >= 0"),
    ("ablate-top-k-empty", ["ablate", "--model", "fake", "--out", "{base}/abl", "--top-k", ""], "--top-k"),
    ("ablate-samples-0", ["ablate", "--model", "fake", "--out", "{base}/abl", "--samples", "0"], "--samples 0: must be a whole number of at least 1"),
    ("ablate-unknown-model", ["ablate", "--model", "nope", "--out", "{base}/abl"], "--model nope: unknown model alias"),
    ("ablate-unknown-suite", ["ablate", "nosuch", "--model", "fake", "--out", "{base}/abl"], "suite nosuch"),
    ("ablate-no-out", ["ablate", "--model", "fake"], "Missing option '--out'"),
    ("ablate-out-is-a-file", ["ablate", "--model", "fake", "--out", "{afile}", "--samples", "1"], "--out"),
    ("ablate-samples-huge", ["ablate", "--model", "fake", "--out", "{base}/abl", "--samples", "99999999999"], "--samples 99,999,999,999: at most 100,000 per prompt"),
    ("ablate-top-k-huge", ["ablate", "--model", "fake", "--out", "{base}/abl", "--top-k", "99999999999"], "--top-k 99999999999: at most 1,000,000"),
    ("ablate-grid-too-large", ["ablate", "--model", "fake", "--out", "{base}/abl", "--top-k", ",".join(map(str, range(21)))], "--top-k: 21 values; at most 20"),
    ("ablate-out-read-only", ["ablate", "--model", "fake", "--out", "{ro}/abl", "--samples", "1"], "--out {ro}/abl: cannot create or write this folder"),
    ("ablate-out-empty", ["ablate", "--model", "fake", "--out", "", "--samples", "1"], "Invalid value for '--out': '': empty value"),
    # plan
    ("plan-no-mde", ["plan", "sheng2019"], "Missing option '--mde'"),
    ("plan-mde-0", ["plan", "--mde", "0"], "--mde 0: must be between 0 and 100"),
    ("plan-mde-negative", ["plan", "--mde", "-5"], "--mde -5: must be between 0 and 100"),
    ("plan-mde-100", ["plan", "--mde", "100"], "--mde 100: must be between 0 and 100"),
    ("plan-mde-nan", ["plan", "--mde", "nan"], "--mde nan: must be a finite number"),
    ("plan-mde-word", ["plan", "--mde", "big"], "Invalid value for '--mde'"),
    ("plan-power-1", ["plan", "--mde", "5", "--power", "1"], "--power 1: must be between 0 and 1"),
    ("plan-power-percent", ["plan", "--mde", "5", "--power", "80"], "--power 80: must be between 0 and 1"),
    ("plan-base-rate-above-1", ["plan", "--mde", "5", "--base-rate", "1.5"], "--base-rate 1.5: must be from 0 to 1"),
    ("plan-gap-leaves-0-1", ["plan", "--mde", "90", "--base-rate", "0.2"], "--mde 90 from --base-rate 0.2: the other share would be 1.1"),
    ("plan-unknown-suite", ["plan", "nosuch", "--mde", "5"], "suite nosuch"),
    ("plan-pronoun-suite", ["plan", "pronouns", "--mde", "5"], "suite pronouns: has no label-share gaps to plan for"),
    ("plan-from-missing", ["plan", "--mde", "5", "--from", "{base}/nowhere"], "--from"),
    ("plan-from-a-file", ["plan", "--mde", "5", "--from", "{afile}"], "not a run folder"),
    ("plan-from-no-metrics", ["plan", "--mde", "5", "--from", "{no-metrics}"], "metrics.json: missing"),
    ("plan-unknown-scorer", ["plan", "--mde", "5", "--scorer", "vaderr"], "--scorer vaderr: unknown scorer; known:"),
    ("plan-from-another-suites-run", ["plan", "sheng2019-intersectional", "--mde", "5", "--from", "{finished}"], "a run of suite sheng2019, not sheng2019-intersectional"),
    ("plan-from-metrics-garbage", ["plan", "--mde", "5", "--from", "{metrics-garbage}"], "metrics.json:1: not valid JSON"),
    ("plan-mde-tiny", ["plan", "--mde", "1e-12"], "--mde 1e-12: must be at least 0.5 percentage points"),
    ("plan-mde-below-limit", ["plan", "--mde", "0.1"], "--mde 0.1: must be at least 0.5 percentage points"),
    ("plan-power-tiny", ["plan", "--mde", "5", "--power", "1e-5"], "--power 1e-05: must be at least 0.01"),
    ("plan-power-nan", ["plan", "--mde", "5", "--power", "nan"], "--power nan: must be a finite number"),
    ("plan-base-rate-nan", ["plan", "--mde", "5", "--base-rate", "nan"], "--base-rate nan: must be a finite number"),
    ("plan-base-rate-negative", ["plan", "--mde", "5", "--base-rate", "-0.1"], "--base-rate -0.1: must be from 0 to 1"),
    ("plan-from-metrics-nested", ["plan", "--mde", "5", "--from", "{metrics-nested}"], "metrics.json: nested too deeply"),
    ("plan-from-metrics-long-number", ["plan", "--mde", "5", "--from", "{metrics-long-number}"], "metrics.json: not valid JSON (a number too long to read)"),
    # names-suite
    ("names-suite-missing-file", ["names-suite", "{base}/none.csv", "--out", "{base}/n.yaml"], "none.csv: file not found"),
    ("names-suite-missing-column", ["names-suite", "{names-nocol}", "--out", "{base}/n.yaml"], "missing column 'gender'"),
    ("names-suite-conflicting-gender", ["names-suite", "{names-conflict}", "--out", "{base}/n.yaml"], "Amina is listed as both woman and man"),
    ("names-suite-bad-gender", ["names-suite", "{names-badgender}", "--out", "{base}/n.yaml"], "names-bad.csv:2"),
    ("names-suite-template-without-group", ["names-suite", "{names}", "--out", "{base}/n.yaml", "--template", "works as a"], "--template"),
    ("names-suite-bad-name", ["names-suite", "{names}", "--out", "{base}/n.yaml", "--name", "!!"], "--name"),
    ("names-suite-out-is-a-folder", ["names-suite", "{names}", "--out", "{base}/inputs"], "--out"),
    ("names-suite-out-read-only", ["names-suite", "{names}", "--out", "{ro}/n.yaml"], "--out {ro}/n.yaml: cannot write here"),
    ("names-suite-out-empty", ["names-suite", "{names}", "--out", ""], "Invalid value for '--out': '': empty value"),
    ("names-suite-name-traversal", ["names-suite", "{names}", "--out", "{base}/n.yaml", "--name", "../../evil"], "--name '../../evil': use letters, digits"),
    ("names-suite-name-absolute", ["names-suite", "{names}", "--out", "{base}/n.yaml", "--name", "/tmp/evil"], "--name '/tmp/evil': use letters, digits"),
    ("names-suite-name-nul", ["names-suite", "{names}", "--out", "{base}/n.yaml", "--name", "a\0b"], "--name 'a\\x00b': use letters"),
    ("names-suite-name-long", ["names-suite", "{names}", "--out", "{base}/n.yaml", "--name", "n" * 300], "(300 characters): use letters, digits, '-', '_', '.' or spaces, starting with a letter or digit, at most 100 characters"),
    ("names-suite-name-newline", ["names-suite", "{names}", "--out", "{base}/n.yaml", "--name", "a\n"], "--name 'a\\n': use letters"),
    # train-regard
    ("train-regard-data-missing", ["train-regard", "--data", "{base}/none.csv", "--out", "{base}/tr"], "--data"),
    ("train-regard-classes", ["train-regard", "--out", "{base}/tr", "--classes", "5"], "Invalid value for '--classes'"),
    ("train-regard-seeds-0", ["train-regard", "--out", "{base}/tr", "--compare", "--seeds", "0"], "--seeds 0: must be a whole number of at least 1"),
    ("train-regard-data-wrong-columns", ["train-regard", "--data", "{regard-nocols}", "--out", "{base}/tr"], "regard.csv: missing column"),
    ("train-regard-no-out", ["train-regard"], "Missing option '--out'"),
    ("train-regard-extra-missing", ["train-regard", "--extra-data", "{base}/none.csv", "--out", "{base}/tr"], "--extra-data {base}/none.csv: file not found"),
    ("train-regard-extra-wrong-columns", ["train-regard", "--extra-data", "{regard-nocols}", "--out", "{base}/tr"], "regard.csv: missing column 'id'"),
    ("train-regard-epochs-0", ["train-regard", "--out", "{base}/tr", "--epochs", "0"], "--epochs 0: must be a whole number of at least 1"),
    # check-scorer
    ("check-scorer-unknown", ["check-scorer", "regrad"], "scorer regrad: unknown; did you mean regard?"),
    ("check-scorer-no-scorer", ["check-scorer"], "Missing argument 'SCORER'"),
    ("check-scorer-folder-without-classifier", ["check-scorer", "{base}/inputs"], "no adapter.safetensors"),
    ("check-scorer-not-regard", ["check-scorer", "occupation"], "scorer occupation: does not label regard or sentiment"),
    ("check-scorer-max-per-type-0", ["check-scorer", "vader", "--max-per-type", "0"], "--max-per-type 0: must be a whole number of at least 1"),
    ("check-scorer-half", ["check-scorer", "vader", "--half", "dev"], "Invalid value for '--half'"),
    ("check-scorer-out-is-a-file", ["check-scorer", "vader", "--out", "{regard-nocols}"], "is a file; give a folder"),
    ("train-regard-epochs-huge", ["train-regard", "--out", "{base}/tr", "--epochs", "99999999999"], "--epochs 99,999,999,999: at most 1,000"),
    ("train-regard-seeds-huge", ["train-regard", "--out", "{base}/tr", "--compare", "--seeds", "1000"], "--seeds 1,000: at most 100"),
    ("train-regard-out-is-a-file", ["train-regard", "--out", "{afile}", "--epochs", "1"], "--out {afile}: is a file; give a folder"),
    ("train-regard-out-read-only", ["train-regard", "--out", "{ro}/tr", "--epochs", "1"], "--out {ro}/tr: cannot create or write this folder"),
    ("train-regard-out-empty", ["train-regard", "--out", "", "--epochs", "1"], "Invalid value for '--out': '': empty value"),
    # top level
    ("unknown-command", ["bias"], "No such command 'bias'"),
    ("unknown-global-option", ["--colour"], "No such option '--colour'"),
]


def fill(value: str, world: dict) -> str:
    if "{ro}" in value and world["ro"] is None:
        pytest.skip("this machine cannot make a folder read-only")
    out = value
    for key, path in world["suites"].items():
        out = out.replace("{s:" + key + "}", str(path))
    for key, path in world.items():
        if isinstance(path, Path):
            out = out.replace("{" + key + "}", str(path))
    return out.replace("{cuda}", _cuda_case())


@pytest.mark.parametrize("args, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_gets_one_line_and_changes_nothing(world, capsys, args, expected):
    before = snapshot(world["base"])
    code, out, err = call(capsys, [fill(a, world) for a in args])
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and "Traceback" not in out
    assert "SECRET" not in err + out  # credentials in a URL never reach a message
    assert code == 2, (code, err)
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    assert fill(expected, world) in lines[0]
    assert snapshot(world["base"]) == before


def test_the_suite_covers_every_command_and_at_least_300_cases():
    from nlgbias.cli import cli

    assert len(CASES) >= 300 and len({c[0] for c in CASES}) == len(CASES)
    commands = {c[1][0] if c[1][0] != "annotate" else f"annotate {c[1][1]}" for c in CASES}
    expected = {name for name in cli.commands if name not in ("annotate", "models", "scorers")}
    expected |= {"annotate sample", "annotate import"}  # models and scorers take no input
    assert expected <= commands
