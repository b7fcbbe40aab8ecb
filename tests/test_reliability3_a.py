"""Reliability 3 (part a): the new surfaces get the old guarantees (issue 30).

A table of bad-input cases, each asserting what tests/test_bad_inputs.py asserts (exit code 2,
one ``Error:`` line with the expected words, no traceback, nothing under the test folder
changed) and also that every FIFO, device node and folder used as a bad path is still what it
was (a rename never replaced it with a regular file).  Then the scenarios that need a server or
a second process: replies without text retried and counted, keys in URL query strings and
fragments, and run folders another run holds.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

import nlgbias
from fakeserver import FakeServer
from nlgbias.errors import InputError, StoreError
from nlgbias.store import write_text
from test_bad_inputs import call, fill, read_only_folder, snapshot, world  # noqa: F401  (fixtures)
from test_reliability import stored

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(nlgbias.__file__).parents[1]),
                                                    os.environ.get("PYTHONPATH", "")])}
SECRET_URL = "http://127.0.0.1:9/v1?api-key=SECRET"
QUERY = "a server URL takes no query string or fragment"


def make_char_device(path: Path) -> bool:
    """A character device node with /dev/null's numbers at ``path`` (needs root); False where refused.

    A node under the test folder stands in for /dev/null and /dev/full: were it replaced, only
    this node would be, never the machine's own devices.
    """
    try:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except (OSError, AttributeError):
        return False
    return True


@pytest.fixture(scope="module")
def special(request):
    """The bad paths of this file's cases, added to the shared world of tests/test_bad_inputs.py
    (``{name}`` in the cases)."""
    w = request.getfixturevalue("world")
    base = w["base"] / "r3a"
    base.mkdir()
    w["fifo"] = base / "pipe"
    os.mkfifo(w["fifo"])
    w["chardev"] = base / "chardev"
    w["has-chardev"] = base if make_char_device(w["chardev"]) else None
    w["fifo-link"] = base / "link-to-pipe"
    w["fifo-link"].symlink_to(w["fifo"])
    w["dir-with-fifo"] = base / "out-with-fifo"
    w["dir-with-fifo"].mkdir()
    os.mkfifo(w["dir-with-fifo"] / "sheet-a1.csv")
    for name, (target, kind) in {"run-fifo": ("metrics.json", "fifo"), "run-report-fifo": ("report.html", "fifo"),
                                 "run-report-dir": ("report.html", "dir")}.items():
        copy = base / name
        shutil.copytree(w["finished"], copy, ignore=shutil.ignore_patterns("store.sqlite*"))
        (copy / target).unlink()
        os.mkfifo(copy / target) if kind == "fifo" else (copy / target).mkdir()
        w[name] = copy
    long_line = "x" * 100_001
    w["long-line"] = base / "long.txt"
    w["long-line"].write_text(f"short\n{long_line}\nshort\n", encoding="utf-8")
    bomb = base / "bomb"
    bomb.mkdir()
    with zipfile.ZipFile(bomb / "sheet-a1.xlsx", "w", compression=zipfile.ZIP_DEFLATED) as book:
        book.writestr("xl/worksheets/sheet1.xml", b"\0" * 60_000_000)  # 60 MB unpacked, ~60 kB packed
    w["bomb"] = bomb / "sheet-a1.xlsx"
    filled = pd.read_csv(w["filled"], dtype=str, keep_default_na=False)
    long_cell = base / "long-cell"
    long_cell.mkdir()
    filled.assign(context="c" * 40_000).to_csv(long_cell / "sheet-a1.csv", index=False)
    w["long-cell"] = long_cell / "sheet-a1.csv"
    (base / "long-jsonl").mkdir()
    w["long-jsonl"] = base / "long-jsonl" / "sheet-a1.jsonl"
    w["long-jsonl"].write_text(json.dumps({"id": "x", "annotator": "a1", "text": "t" * 50_000}) + "\n")
    formula = base / "formula"
    formula.mkdir()
    filled.assign(annotator='=HYPERLINK("http://evil.example/","a1")').to_csv(formula / "labels.csv", index=False)
    w["formula-annotator"] = formula / "labels.csv"
    filled.assign(id="@SUM(1+1)").to_csv(formula / "sheet-a1.csv", index=False)
    w["formula-id"] = formula / "sheet-a1.csv"
    items = pd.read_csv(w["items"], dtype=str, keep_default_na=False)
    items.assign(id=["=1+1"] + list(items["id"].iloc[1:])).to_csv(formula / "items.csv", index=False)
    w["formula-items"] = formula / "items.csv"
    items.assign(group=list(items["group"].iloc[:-1]) + ["+cmd|' /C calc'!A0"]).to_csv(formula / "items-group.csv",
                                                                                    index=False)
    w["formula-items-group"] = formula / "items-group.csv"
    shipped = pd.read_csv(Path(nlgbias.__file__).parent / "data" / "regard" / "regard.csv").head(5)
    w["regard-bad-3"] = base / "regard-bad-3.csv"
    shipped.assign(regard_3=["positive", "great", "neutral", "negative", ""]).to_csv(w["regard-bad-3"], index=False)
    w["regard-bad-4"] = base / "regard-bad-4.csv"
    shipped.assign(regard_4=["positive", "neutral", "neutral", "Positive", "other"]).to_csv(w["regard-bad-4"],
                                                                                           index=False)
    w["exit-plugin"] = base / "exits.py"
    w["exit-plugin"].write_text("import sys\nsys.exit(0)\n")
    w["exit-plugin-message"] = base / "exits_message.py"
    w["exit-plugin-message"].write_text("raise SystemExit('bye')\n")
    return w


def kinds(shared: dict) -> dict[str, int]:
    """The file type of every special path (a FIFO stays a FIFO, a device a device)."""
    base = shared["base"] / "r3a"
    return {str(p): stat.S_IFMT(os.lstat(p).st_mode) for p in sorted(base.rglob("*"))}


F = "{finished}"
SCORE = ["score", "--scorer", "vader"]
RUN = ["run", "sheng2019", "--model", "fake", "--samples", "1", "--scorer", "vader", "--quiet"]
SERVER_RUN = ["run", "sheng2019", "--samples", "1", "--scorer", "vader", "--quiet", "--out", "{base}/r3a-server"]

# (case id, arguments with {placeholders} from the world, words the one Error line must contain)
CASES = [
    # 1. an output that exists and is not a regular file: refused, never replaced
    ("score-output-fifo", SCORE + ["--input", "{texts}", "--output", "{fifo}"],
     "--output {fifo}: is a FIFO (named pipe), not a regular file; give a file name"),
    ("score-output-char-device", SCORE + ["--input", "{texts}", "--output", "{chardev}"],
     "--output {chardev}: is a character device, not a regular file"),
    ("score-output-link-to-fifo", SCORE + ["--input", "{texts}", "--output", "{fifo-link}"],
     "--output {fifo-link}: is a FIFO (named pipe), not a regular file"),
    ("names-suite-out-fifo", ["names-suite", "{names}", "--out", "{fifo}"],
     "--out {fifo}: is a FIFO (named pipe), not a regular file"),
    ("names-suite-out-char-device", ["names-suite", "{names}", "--out", "{chardev}"],
     "--out {chardev}: is a character device, not a regular file"),
    ("run-out-holds-a-fifo", RUN + ["--out", "{run-fifo}"],
     "--out {run-fifo}: {run-fifo}/metrics.json is a FIFO (named pipe), not a regular file"),
    ("run-out-output-is-a-folder", RUN + ["--out", "{run-report-dir}"],
     "{run-report-dir}/report.html: is a folder, not a regular file, so nlgbias does not write over it"),
    ("report-rerender-over-a-fifo", ["report", "{run-report-fifo}"],
     "{run-report-fifo}/report.html: is a FIFO (named pipe), not a regular file, so nlgbias does not write over it"),
    ("report-out-holds-a-fifo", ["report", F, "--out", "{dir-with-fifo}"],
     "{dir-with-fifo}/sheet-a1.csv is a FIFO (named pipe), not a regular file"),
    ("annotate-sample-out-holds-a-fifo", ["annotate", "sample", F, "--out", "{dir-with-fifo}"],
     "--out {dir-with-fifo}: {dir-with-fifo}/sheet-a1.csv is a FIFO"),
    ("annotate-import-out-holds-a-fifo", ["annotate", "import", "{filled}", "--items", "{items}", "--out",
                                          "{dir-with-fifo}", "--no-classifier-check"],
     "--out {dir-with-fifo}: {dir-with-fifo}/sheet-a1.csv is a FIFO"),
    ("ablate-out-holds-a-fifo", ["ablate", "--model", "fake", "--samples", "1", "--out", "{dir-with-fifo}"],
     "--out {dir-with-fifo}: {dir-with-fifo}/sheet-a1.csv is a FIFO"),
    ("train-regard-out-holds-a-fifo", ["train-regard", "--out", "{dir-with-fifo}", "--epochs", "1"],
     "--out {dir-with-fifo}: {dir-with-fifo}/sheet-a1.csv is a FIFO"),
    ("check-scorer-out-holds-a-fifo", ["check-scorer", "vader", "--out", "{dir-with-fifo}"],
     "--out {dir-with-fifo}: {dir-with-fifo}/sheet-a1.csv is a FIFO"),
    # 6. inputs that are not regular files: said so (before: "file not found"), never read
    ("score-input-fifo", SCORE + ["--input", "{fifo}", "--output", "{base}/r3a-o.jsonl"],
     "--input {fifo}: is a FIFO (named pipe), not a regular file; give a file"),
    ("score-input-dev-zero", SCORE + ["--input", "/dev/zero", "--output", "{base}/r3a-o.jsonl"],
     "--input /dev/zero: is a character device, not a regular file"),
    ("names-suite-input-fifo", ["names-suite", "{fifo}", "--out", "{base}/r3a-n.yaml"],
     "{fifo}: is a FIFO (named pipe), not a regular file"),
    ("annotate-import-sheet-fifo", ["annotate", "import", "{fifo}", "--items", "{items}", "--out", "{base}/r3a-imp"],
     "{fifo}: is a FIFO (named pipe), not a regular file"),
    ("annotate-import-items-dev-zero", ["annotate", "import", "{filled}", "--items", "/dev/zero", "--out",
                                        "{base}/r3a-imp"], "--items /dev/zero: is a character device"),
    ("train-regard-data-fifo", ["train-regard", "--data", "{fifo}", "--out", "{base}/r3a-tr"],
     "--data {fifo}: is a FIFO (named pipe), not a regular file"),
    ("train-regard-extra-data-dev-zero", ["train-regard", "--extra-data", "/dev/zero", "--out", "{base}/r3a-tr"],
     "--extra-data /dev/zero: is a character device"),
    ("run-suite-fifo", ["run", "{fifo}", "--model", "fake", "--out", "{base}/r3a-run"],
     "suite {fifo}: is a FIFO (named pipe), not a regular file"),
    ("report-metrics-fifo", ["report", "{run-fifo}"], "{run-fifo}/metrics.json: is a FIFO (named pipe)"),
    ("plan-from-metrics-fifo", ["plan", "--mde", "5", "--from", "{run-fifo}"],
     "{run-fifo}/metrics.json: is a FIFO (named pipe)"),
    # 6. sizes that hung: a 100,001-character line, an .xlsx that unpacks to 60 MB, a 40,000-character cell
    ("score-input-long-line", SCORE + ["--input", "{long-line}", "--output", "{base}/r3a-o.jsonl"],
     "--input {long-line}:2: a line of 100,001 characters; at most 100,000 per line"),
    ("annotate-import-xlsx-bomb", ["annotate", "import", "{bomb}", "--items", "{items}", "--out", "{base}/r3a-imp"],
     "{bomb}: unpacks to 60 MB, more than the 50 MB"),
    ("annotate-import-long-cell", ["annotate", "import", "{long-cell}", "--items", "{items}", "--out",
                                   "{base}/r3a-imp"], "{long-cell}:2: a cell of 40,000 characters; at most 32,767"),
    ("annotate-import-long-jsonl-value", ["annotate", "import", "{long-jsonl}", "--items", "{items}", "--out",
                                          "{base}/r3a-imp"], "{long-jsonl}:1: a value of 50,000 characters"),
    # 6. rows dropped without a word, formulas copied into CSV
    ("train-regard-unknown-regard-3", ["train-regard", "--data", "{regard-bad-3}", "--out", "{base}/r3a-tr"],
     "{regard-bad-3}:3: regard_3 label 'great' is not one of negative, neutral, positive"),
    ("train-regard-extra-unknown-regard-4", ["train-regard", "--extra-data", "{regard-bad-4}", "--out",
                                             "{base}/r3a-tr"],
     "{regard-bad-4}:5: regard_4 label 'Positive' is not one of negative, neutral, positive, other"),
    ("annotate-import-formula-annotator", ["annotate", "import", "{formula-annotator}", "--items", "{items}",
                                           "--out", "{base}/r3a-imp"],
     "{formula-annotator}:2: annotator '=HYPERLINK(\"http://evil.example/\",\"a1\")' starts with '=' like a "
     "spreadsheet formula"),
    ("annotate-import-formula-id", ["annotate", "import", "{formula-id}", "--items", "{items}", "--out",
                                    "{base}/r3a-imp"], "{formula-id}:2: id '@SUM(1+1)' starts with '@'"),
    ("annotate-import-formula-items-id", ["annotate", "import", "{filled}", "--items", "{formula-items}", "--out",
                                          "{base}/r3a-imp"], "{formula-items}:2: id '=1+1' starts with '='"),
    ("annotate-import-formula-items-group", ["annotate", "import", "{filled}", "--items", "{formula-items-group}",
                                            "--out", "{base}/r3a-imp"], "group \"+cmd|' /C calc'!A0\" starts with '+'"),
    # 6. a plugin that exits while being imported
    ("plugin-sys-exit-0", ["scorers", "--plugin", "{exit-plugin}"],
     "--plugin {exit-plugin}: importing it failed (it called sys.exit(0) while being imported)"),
    ("plugin-system-exit-message-run", RUN + ["--plugin", "{exit-plugin-message}", "--out", "{base}/r3a-run"],
     "importing it failed (it called sys.exit('bye') while being imported)"),
    # 5. a key in a server URL's query string or fragment
    ("run-model-url-query", ["run", "sheng2019", "--model", f"openai:m@{SECRET_URL}", "--out", "{base}/r3a-run"],
     "--model openai:m@http://127.0.0.1:9/v1?***: http://127.0.0.1:9/v1?***: " + QUERY),
    ("run-model-url-fragment", ["run", "sheng2019", "--model", "openai:m@http://127.0.0.1:9/v1#SECRET", "--out",
                                "{base}/r3a-run"], "http://127.0.0.1:9/v1#***: " + QUERY),
    ("run-model-url-empty-query", ["run", "sheng2019", "--model", "openai:m@http://127.0.0.1:9/v1?", "--out",
                                   "{base}/r3a-run"], QUERY),
    ("run-api-base-query", ["run", "sheng2019", "--model", "openai:m", "--api-base", SECRET_URL, "--out",
                            "{base}/r3a-run"], "--api-base: http://127.0.0.1:9/v1?***: " + QUERY),
    ("run-api-base-list-fragment", ["run", "sheng2019", "--model", "openai:m", "--api-base",
                                    "http://127.0.0.1:8/v1,http://127.0.0.1:9/v1#SECRET", "--out", "{base}/r3a-run"],
     "http://127.0.0.1:9/v1#***: " + QUERY),
    ("run-model-url-query-and-userinfo", ["run", "sheng2019", "--model",
                                          "openai:m@http://u:SECRET@127.0.0.1:9/v1?k=SECRET", "--out", "{base}/r3a-run"],
     "http://***@127.0.0.1:9/v1?***: " + QUERY),
    ("ablate-model-url-query", ["ablate", "--model", f"openai:m@{SECRET_URL}", "--samples", "1", "--out",
                                "{base}/r3a-abl"], QUERY),
]


@pytest.mark.parametrize("args, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_gets_one_line_and_changes_nothing(special, capsys, args, expected):
    if any("{chardev}" in a for a in args) and special["has-chardev"] is None:
        pytest.skip("this machine does not let the test make a device node")
    before, types = snapshot(special["base"]), kinds(special)

    def too_long(*_):
        raise TimeoutError("the command hung (reading a FIFO?)")

    previous = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(120)
    try:
        code, out, err = call(capsys, [fill(a, special) for a in args])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and "Traceback" not in out
    assert "SECRET" not in err + out
    assert code == 2, (code, err)
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    assert fill(expected, special) in lines[0]
    assert snapshot(special["base"]) == before
    assert kinds(special) == types  # no FIFO, device or folder became a regular file
    assert not any(special["base"].glob("r3a-*"))  # no output file or folder was created


def test_the_table_has_distinct_cases():
    assert len({c[0] for c in CASES}) == len(CASES) >= 40


# -- 1. the shared atomic write, from Python ---------------------------------------------------

def test_the_atomic_write_refuses_a_device_a_fifo_and_a_folder_and_writes_nothing(tmp_path):
    targets = {"fifo": tmp_path / "pipe", "folder": tmp_path / "folder"}
    os.mkfifo(targets["fifo"])
    targets["folder"].mkdir()
    if make_char_device(tmp_path / "full"):
        targets["device"] = tmp_path / "full"
    for target in targets.values():
        kind = stat.S_IFMT(os.lstat(target).st_mode)
        with pytest.raises(StoreError, match="not a regular file, so nlgbias does not write over it"):
            write_text(target, "scores\n")
        assert stat.S_IFMT(os.lstat(target).st_mode) == kind  # before: replaced by a regular file
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(t.name for t in targets.values())  # no temp file
    write_text(tmp_path / "plain.txt", "ok\n")  # a regular file is still written as before
    assert (tmp_path / "plain.txt").read_text() == "ok\n"


# -- 4. a 200 reply without text is retried like an HTTP 500 -----------------------------------

class EmptyRepliesServer(FakeServer):
    """tests/fakeserver.py with three more script entries: ``("empty",)`` answers ``{"choices": []}``,
    ``("null_text",)`` answers ``choices[0].text: null`` and ``("no_choices",)`` answers ``{}``, all HTTP 200."""

    REPLIES = {"empty": {"choices": []}, "null_text": {"choices": [{"text": None, "index": 0}]}, "no_choices": {}}

    def handle(self, handler, action, body) -> None:
        if action[0] not in self.REPLIES:
            return super().handle(handler, action, body)
        payload = json.dumps(self.REPLIES[action[0]]).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)


def server_run(capsys, url, out, *extra):
    return call(capsys, ["run", "sheng2019", "--model", f"openai:served@{url}", "--samples", "2", "--scorer", "vader",
                         "--n-boot", "100", "--quiet", "--out", out, *extra])


@pytest.mark.parametrize("faults", [[("empty",), ("empty",)], [("null_text",), ("no_choices",)]],
                         ids=["empty-choices-twice", "null-text-then-no-choices"])
def test_replies_without_text_are_retried_and_counted_in_the_manifest(capsys, tmp_path, faults):
    out = tmp_path / "o"
    with EmptyRepliesServer([("ok",)] * 10 + faults) as server:
        code, _, err = server_run(capsys, server.url, out, "--max-retries", "5", "--concurrency", "1")
    assert code == 0, err  # before: the run stopped at the first reply without text
    assert len(server.requests) == 120 + 2 and len(stored(out)) == 120
    (model,) = json.loads((out / "manifest.json").read_text())["models"]
    assert [(s["answered"], s["empty_replies"]) for s in model["servers"]] == [(120, 2)]


def test_replies_without_text_for_good_stop_with_one_line_and_keep_what_was_answered(capsys, tmp_path):
    out = tmp_path / "o"
    with EmptyRepliesServer([("ok",)] * 30 + [("empty",)] * 1000) as server:
        code, out_text, err = server_run(capsys, server.url, out, "--max-retries", "2", "--concurrency", "1")
    assert code == 2 and "Traceback" not in err + out_text
    assert err.strip() == (f"Error: endpoint {server.url}/completions: gave up after 3 attempts; last error: "
                           "returned no text (choices is empty)")
    assert len(server.answered) == 30 and len(stored(out)) == 30  # every answer kept
    assert not (out / "manifest.json").exists()


# -- 5. keys in a URL's query string or fragment -----------------------------------------------

def secret_anywhere(folder: Path) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and b"SECRET" in p.read_bytes()]


@pytest.mark.parametrize("how", ["model-query", "model-fragment", "api-base", "env"])
def test_a_key_in_a_query_string_or_fragment_reaches_no_server_message_or_file(capsys, tmp_path, monkeypatch, how):
    out = tmp_path / "o"
    with FakeServer() as server:
        model = {"model-query": f"openai:m@{server.url}?api-key=SECRET",
                 "model-fragment": f"openai:m@{server.url}#SECRET"}.get(how, "openai:m")
        extra = ["--api-base", f"{server.url}?key=SECRET"] if how == "api-base" else []
        if how == "env":
            monkeypatch.setenv("NLGBIAS_API_BASE", f"{server.url}#SECRET")
        code, stdout, err = call(capsys, ["run", "sheng2019", "--model", model, *extra, "--samples", "1", "--out", out])
        assert code == 2 and QUERY in err and len(err.strip().splitlines()) == 1
        assert "SECRET" not in stdout + err
        assert server.requests == []  # refused before any request
    assert not out.exists() and not secret_anywhere(tmp_path)  # nor any store or progress file


def test_the_library_refuses_it_without_the_key(tmp_path):
    with pytest.raises(InputError) as caught:
        nlgbias.run("sheng2019", models=[f"openai:m@{SECRET_URL}"], samples=1, quiet=True, out=tmp_path / "o")
    assert QUERY in str(caught.value) and "SECRET" not in str(caught.value)
    assert not (tmp_path / "o").exists()


def test_redact_hides_queries_and_fragments_but_keeps_the_sentence():
    from nlgbias.urls import redact

    assert redact(f"--model openai:m@{SECRET_URL}: down; http://h/v1#SECRET, http://h/v1") == (
        "--model openai:m@http://127.0.0.1:9/v1?***: down; http://h/v1#*** http://h/v1")


# -- 6. a folder another run holds ---------------------------------------------------------------

HOLD = """
import sys
from nlgbias.store.lock import hold_folder
with hold_folder(sys.argv[1], command=["nlgbias", "run", "sheng2019", "--out", sys.argv[1]]):
    print("holding", flush=True)
    sys.stdin.readline()
"""


def test_commands_that_read_a_held_run_folder_refuse_naming_the_holder(special, capsys, tmp_path):
    held = tmp_path / "held"
    shutil.copytree(special["finished"], held, ignore=shutil.ignore_patterns("store.sqlite*"))
    other = tmp_path / "other"
    shutil.copytree(special["finished"], other, ignore=shutil.ignore_patterns("store.sqlite*"))
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(held)], env=ENV, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        line = (f"Error: {held} is in use by run pid {holder.pid} (nlgbias run sheng2019 --out {held}); wait for it "
                f"to finish, then rerun this command")
        for args in (["report", other, held, "--out", tmp_path / "both"],
                     ["annotate", "sample", held, "--out", tmp_path / "sheets"],
                     ["plan", "--mde", "5", "--from", held]):
            code, out, err = call(capsys, args)
            assert (code, err.strip()) == (2, line), args
            assert "Traceback" not in out + err
        assert not (tmp_path / "both").exists() and not (tmp_path / "sheets").exists()
    finally:
        holder.communicate("go\n", timeout=30)
    code, _, err = call(capsys, ["plan", "--mde", "5", "--from", held])  # free again: read as before
    assert code == 0, err
