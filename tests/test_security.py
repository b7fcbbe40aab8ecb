"""User strings that become file names, and credentials in server URLs.  Counted in docs/reliability.md.

Every file a command writes lies in its output folder, whatever the names it is given (``../``,
absolute paths, NUL, very long names); a key in a URL reaches no message, file, manifest or store.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import nlgbias
from fakeserver import FakeServer
from nlgbias.cli import main
from nlgbias.errors import InputError

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(nlgbias.__file__).parents[1]),
                                                    os.environ.get("PYTHONPATH", "")])}
SAFE_FILE = r"^[A-Za-z0-9][A-Za-z0-9._=,-]*$"


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


def call(capsys, *args):
    with pytest.raises(SystemExit) as caught:
        main([str(a) for a in args])
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return caught.value.code, out, err


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "run"
    nlgbias.run("sheng2019", models=["fake"], samples=1, scorers=["vader"], n_boot=100, out=out, quiet=True)
    return out


# --- annotator names --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["../../evil", "../evil", "/tmp/nlgbias-evil", "a/../../b", "a\0b", "x" * 300, "..",
                                  ".", "", "a b", "a\nb", "..\\evil"],
                         ids=["up-two", "up-one", "absolute", "inside-up", "nul", "long", "dot-dot", "dot", "empty",
                              "space", "newline", "backslash"])
def test_an_annotator_name_that_is_no_plain_file_name_is_refused_before_anything_is_written(tmp_path, finished, name):
    from nlgbias.annotation import sample_run
    from nlgbias.annotation.sheets import export_sheets

    out = tmp_path / "deep" / "er" / "ann"
    before = files_under(tmp_path)
    with pytest.raises(InputError, match=r"^annotators .*: a name here becomes a file name \(sheet-NAME\.csv\); use "
                                         r"letters, digits"):
        sample_run(finished, out, annotators=["a1", name])
    items = pd.DataFrame({"id": ["i1"], "context": ["c"], "text": ["XYZ was kind."]})
    with pytest.raises(InputError, match="a name here becomes a file name"):
        export_sheets(items, out, annotators=[name])
    assert files_under(tmp_path) == before and not out.exists()
    assert not Path("/tmp/nlgbias-evil").exists()


def test_annotator_names_of_letters_of_any_script_are_kept(tmp_path, finished):
    from nlgbias.annotation import sample_run

    items, paths = sample_run(finished, tmp_path / "ann", annotators=["Zoë", "李", "a.b-c_d"])
    assert sorted(p.name for p in paths) == sorted(["items.csv", "sheet-Zoë.csv", "sheet-李.csv", "sheet-a.b-c_d.csv",
                                                    "guidelines.html"])
    assert all(p.parent == tmp_path / "ann" for p in paths)


# --- names inside outputs: model display names, suite contexts, export names ------------------

def test_model_and_context_names_never_leave_the_run_folder(tmp_path):
    """Display names, contexts and groups named like paths appear in the files, never as file names."""
    suite = tmp_path / "s.yaml"
    suite.write_text("suite: traversal\ngroups:\n"
                     "  - {id: a, text: The A, attributes: {axis: g}}\n  - {id: b, text: The B, attributes: {axis: g}}\n"
                     "templates:\n  - {id: t, context: '../../evil', text: '{group} was'}\n"
                     "  - {id: u, context: '/tmp/nlgbias-evil', text: '{group} is'}\n", encoding="utf-8")
    long_name = "fake:" + "x" * 300
    models = ["fake:../../evil", "fake:/tmp/nlgbias-evil", long_name]
    out = tmp_path / "runs" / "o"
    nlgbias.run(str(suite), models=models, samples=2, scorers=["vader"], n_boot=100, out=out, quiet=True)
    from nlgbias.analyses import report_sections
    from nlgbias.cli import performed_analyses
    from nlgbias.report.export import export_run

    written = export_run(out, ["latex", "markdown", "svg"], sections=report_sections(performed_analyses(out)))
    assert written and all(out / "export" in p.parents for p in written)
    files = files_under(tmp_path)
    assert files == {suite} | files_under(out)  # nothing outside the run folder
    assert all(pd.Series([p.name for p in files_under(out)]).str.match(SAFE_FILE)), sorted(p.name for p in files)
    assert set(pd.read_csv(out / "models.csv")["model"]) == set(models)  # the names are kept as content
    assert not Path("/tmp/nlgbias-evil").exists()


def test_a_run_refuses_a_model_name_with_a_nul_character(tmp_path):
    with pytest.raises(nlgbias.NlgbiasError, match=r"contains a control character"):
        nlgbias.run("sheng2019", models=["fake:a\0b"], samples=1, scorers=["vader"], out=tmp_path / "o", quiet=True)
    assert not (tmp_path / "o").exists()


# --- credentials in URLs ------------------------------------------------------------------------

def secret_free(folder: Path) -> bool:
    return all(b"SECRET" not in p.read_bytes() for p in files_under(folder))


@pytest.mark.parametrize("where", ["model", "api-base", "environment"])
def test_a_key_in_a_server_url_reaches_no_message_file_or_store(tmp_path, where):
    out = tmp_path / "o"
    with FakeServer() as server:
        url = server.url.replace("http://", "http://user:SECRET@")
        args = ["run", "sheng2019", "--samples", "1", "--scorer", "vader", "--quiet", "--out", str(out)]
        env = dict(ENV)
        if where == "model":
            args += ["--model", f"openai:m@{url}"]
        elif where == "api-base":
            args += ["--model", "openai:m", "--api-base", url]
        else:
            args += ["--model", "openai:m"]
            env["NLGBIAS_API_BASE"] = url
        done = subprocess.run([sys.executable, "-m", "nlgbias", *args], env=env, capture_output=True, text=True)
        assert not server.requests  # refused before anything is asked
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "the URL holds credentials (user:password@)" in lines[0] and "--api-key-env" in lines[0]
    assert "SECRET" not in done.stderr + done.stdout
    assert "http://***@127.0.0.1:" in lines[0]
    assert not out.exists() and secret_free(tmp_path)


def test_the_library_refuses_credentials_without_repeating_them(tmp_path):
    with pytest.raises(InputError) as caught:
        nlgbias.run("sheng2019", models=["openai:m@https://key-only-SECRET@127.0.0.1:9/v1"], out=tmp_path / "o")
    assert "SECRET" not in str(caught.value) and "the URL holds credentials" in str(caught.value)
    assert "api_key_env=" in str(caught.value)  # Python words from Python
    assert not (tmp_path / "o").exists()


def test_a_key_given_the_right_way_is_sent_and_never_written(tmp_path, capsys):
    """The way the message points to: the key in an environment variable, sent only as a header."""
    out = tmp_path / "o"
    with FakeServer() as server:
        os.environ["NLGBIAS_TEST_KEY"] = "SECRET-KEY"
        try:
            code, _, err = call(capsys, "run", "sheng2019", "--model", f"openai:m@{server.url}", "--samples", "1",
                                "--scorer", "vader", "--n-boot", "100", "--api-key-env", "NLGBIAS_TEST_KEY", "--quiet",
                                "--out", out)
        finally:
            del os.environ["NLGBIAS_TEST_KEY"]
        assert code == 0, err
        assert server.headers and all(h.get("Authorization") == "Bearer SECRET-KEY" for h in server.headers)
    assert secret_free(tmp_path)


def test_redact_hides_credentials_in_any_text():
    from nlgbias.urls import redact

    assert redact("a http://u:p@h:1/v1 and https://k@h2/x, ftp://x:y@z") == "a http://***@h:1/v1 and https://***@h2/x, ftp://***@z"
    assert redact("openai:m@http://h:1/v1 user@example.org") == "openai:m@http://h:1/v1 user@example.org"
