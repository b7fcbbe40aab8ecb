"""The ``nlgbias`` command: thin commands over the library.

Bad input gets one line, ``Error: <where>: <what>``, and exit code 2; never a traceback.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
import textwrap
from pathlib import Path

import click

from nlgbias import __version__
from nlgbias.analyses import report_sections
from nlgbias.annotation import import_labels, sample_run
from nlgbias.annotation.classifier_check import confusion_text
from nlgbias.defaults import INFERENCE_UNIT
from nlgbias.errors import InputError, NlgbiasError, command_line_wording
from nlgbias.inputs import not_a_file
from nlgbias.metrics.power import ICC
from nlgbias.metrics.shares import LEVELS
from nlgbias.models import DEFAULT_MODEL, BackendOptions, list_models
from nlgbias.pipeline.ablation import decoding_grid, parse_grid
from nlgbias.pipeline.audit import RunConfig, run_config
from nlgbias.pipeline.combine import report_runs
from nlgbias.pipeline.distributed import RayOptions
from nlgbias.pipeline.measurements import suite_prompts
from nlgbias.pipeline.options import RUN_DEFAULTS, Flag
from nlgbias.pipeline.options import flags as run_flags
from nlgbias.pipeline.planning import MIN_MDE, MIN_POWER
from nlgbias.pipeline.planning import plan as make_plan
from nlgbias.progress import Progress, Stopwatch
from nlgbias.registry import load_plugin
from nlgbias.report.export import EXPORT_FOLDER, export_combined, export_formats, export_run
from nlgbias.report.folder import rerender_report
from nlgbias.report.paper_tables import ALL_ROWS, RowFilter
from nlgbias.scorers import describe_scorers, score_file
from nlgbias.store import write_text
from nlgbias.store.export import out_of_space
from nlgbias.store.lock import hold_folder
from nlgbias.suites import list_suites, load_suite
from nlgbias.suites.names import names_suite_yaml
from nlgbias.suites.prompt_files import prompt_counts
from nlgbias.urls import redact
from nlgbias.validate import LIMITS, bounded, check_out_file, check_out_folder

EXIT_BAD_INPUT = 2
LISTING_WIDTH = 100  # listings wrap long descriptions at this width instead of cutting them


class CheckedPath(click.Path):
    """A path option: one that holds a NUL character (possible from Python, not from a shell) is refused."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and "\0" in value:
            self.fail(f"{value!r}: contains a NUL character", param, ctx)
        return super().convert(value, param, ctx)


class OutputPath(CheckedPath):
    """A path to write to: ``""`` (an unset shell variable, say) is refused instead of meaning the current folder."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail(f"{value!r}: empty value; give a path (use . for the current folder)", param, ctx)
        return super().convert(value, param, ctx)


IN_PATH = CheckedPath(path_type=Path)
OUT_PATH = OutputPath(path_type=Path)


class BatchSizeType(click.ParamType):
    """``--batch-size``: a whole number or ``auto`` (its range is checked by :func:`nlgbias.validate.check_batch_size`)."""

    name = "INTEGER|auto"

    def convert(self, value, param, ctx):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        text = str(value).strip()
        if text.lower() == "auto":
            return "auto"
        try:
            return int(text)
        except ValueError:
            self.fail(f"{value!r} is not a whole number or auto.", param, ctx)


BATCH_SIZE = BatchSizeType()


def flag_option(flag: Flag, default=None) -> tuple[tuple, dict]:
    """One option of :class:`~nlgbias.pipeline.options.RunOptions` as (flags, click keyword arguments)."""
    types = {"int": int, "float": float, "path": IN_PATH, "batch_size": BATCH_SIZE}
    kwargs: dict = {"help": flag.help}
    if flag.choices:
        kwargs["type"] = click.Choice(list(flag.choices))
    elif flag.kind in types:
        kwargs["type"] = types[flag.kind]
    if flag.multiple:
        kwargs["multiple"] = True
    else:
        kwargs["default"] = default
    if flag.metavar:
        kwargs["metavar"] = flag.metavar
    if flag.show_default:
        kwargs["show_default"] = True
    return flag.decls, kwargs


def _run_option(name: str) -> tuple[tuple, dict]:
    return flag_option(run_flags()[name], getattr(RUN_DEFAULTS, name))


SHARED_OPTIONS = {
    "model": _run_option("models"),
    "samples": _run_option("samples"),
    "seed": _run_option("seed"),
    "out": (("--out",), dict(type=OUT_PATH, default=Path("runs/nlgbias"), show_default=True,
                             help="Output folder (holds the run store: rerun the same command to resume).")),
    "quiet": (("--quiet",), dict(is_flag=True, help="No progress bars or notes.")),
}


def shared_options(*names: str, **changes: dict):
    """Stack the shared options ``names`` (model, samples, seed, out, quiet) on a command, in that order.

    ``changes[name]`` overrides that option's keyword arguments (default, help, required), so the
    options keep one spelling and meaning on every command (as sqlite-utils' ``output_options``).
    """
    def decorate(command):
        for name in reversed(names):
            decls, kwargs = SHARED_OPTIONS[name]
            kwargs = {**kwargs, **changes.get(name, {})}
            if kwargs.get("required"):  # no default at all, or click takes it for a given value
                kwargs = {k: v for k, v in kwargs.items() if k not in ("default", "show_default")}
            command = click.option(*decls, **kwargs)(command)
        return command
    return decorate


def _required_folder(help_text: str) -> dict:
    return {"required": True, "help": help_text}


def _stack(command, options: list[tuple[tuple, dict]]):
    for decls, kwargs in reversed(options):
        command = click.option(*decls, **kwargs)(command)
    return command


# Every field of BackendOptions a command line can set: (flags, click keyword arguments).
BACKEND_OPTIONS: list[tuple[tuple, dict]] = [
    (("--dtype",), dict(type=click.Choice(["float32", "bfloat16", "float16"]), default="float32", show_default=True,
                        help="Sampling precision of local models (bfloat16 is faster on CPUs with AVX-512 BF16, "
                             "not on every GPU; its texts depend more on --batch-size).")),
    (("--device",), dict(default="auto", show_default=True, help="cpu, cuda, cuda:1 ... (local models).")),
    (("--api-base",), dict(multiple=True, metavar="URL",
                           help="Base URL of an OpenAI-compatible server [env NLGBIAS_API_BASE]. Several servers of "
                                "the same model: repeat it or separate URLs with commas; requests spread over them.")),
    (("--api-key-env",), dict(default="OPENAI_API_KEY", show_default=True,
                              help="Environment variable that holds the server's API key (the key itself is never "
                                   "written).")),
    (("--concurrency",), dict(type=int, default=8, show_default=True,
                              help=f"Requests in flight per server (server models; at most {LIMITS['concurrency']:,}).")),
    (("--timeout",), dict(type=float, default=60.0, show_default=True,
                          help=f"Seconds per request (server models; at most {LIMITS['timeout']:,g}).")),
    (("--max-retries",), dict(type=int, default=5, show_default=True, help=f"Retries on 429/5xx/timeouts (at most {LIMITS['max_retries']}).")),
    (("--cooldown",), dict(type=float, default=60.0, show_default=True,
                           help="Seconds a server that failed its retries stays out of rotation (several "
                                "--api-base).")),
]
BACKEND_FIELDS = ("dtype", "device", "api_base", "api_key_env", "concurrency", "timeout", "max_retries", "cooldown")


def backend_options(command):
    """Add the :data:`BACKEND_OPTIONS`; the command gets them as one ``backend_options`` keyword,
    a :class:`~nlgbias.models.BackendOptions` (checked where the run is configured)."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        values = {name: kwargs.pop(name) for name in BACKEND_FIELDS}
        values["api_base"] = values["api_base"] or None
        return command(*args, backend_options=BackendOptions(**values), **kwargs)
    return _stack(wrapper, BACKEND_OPTIONS)


# The options of RunConfig.create that a command line sets, after the SUITE argument and --model,
# --samples and --seed (SHARED_OPTIONS): (flags, click keyword arguments), from RunOptions.
RUN_OPTIONS: list[tuple[tuple, dict]] = [_run_option(name) for name in run_flags()
                                         if name not in ("models", "samples", "seed")]
RUN_FIELDS = ("suite", *run_flags())  # the keywords of RunConfig.create the command line sets


def run_options(command):
    """Add the SUITE argument, --model, --samples, --seed, the :data:`RUN_OPTIONS` and the
    :data:`BACKEND_OPTIONS`; the command gets them as one ``run_options`` keyword: the keyword
    arguments of :meth:`nlgbias.pipeline.audit.RunConfig.create`."""
    @functools.wraps(command)
    def wrapper(*args, backend_options, **kwargs):
        values = {name: kwargs.pop(name) for name in RUN_FIELDS}
        values["models"] = list(values["models"]) or list(RUN_DEFAULTS.models)
        values["scorers"] = list(values["scorers"]) or None
        return command(*args, run_options={**values, "backend_options": backend_options}, **kwargs)
    wrapper = _stack(backend_options(wrapper), RUN_OPTIONS)
    wrapper = shared_options("model", "samples", "seed")(wrapper)
    return click.argument("suite", default=RUN_DEFAULTS.suite)(wrapper)


def _load_plugins(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> None:
    for spec in values:
        load_plugin(spec)


plugin_option = click.option(
    "--plugin", "plugins", multiple=True, metavar="MODULE", expose_value=False, is_eager=True, callback=_load_plugins,
    help="Import MODULE (a module name or a .py file) first: the analyses, scorers, backends and suite kinds it "
         "registers become available. Repeatable. (Installed packages register theirs through entry points.)")


export_option = click.option(
    "--export", "exports", multiple=True, metavar="FORMAT",
    help="Also write paper-ready files to OUT/export/: latex, markdown (tables of shares, gaps, model gaps and gap "
         "differences), svg, png (each chart). Repeat or comma-separate.")


def _echo_exports(folder: Path, formats: tuple[str, ...], rows_of: RowFilter = ALL_ROWS) -> None:
    written = export_run(folder, formats, sections=report_sections(performed_analyses(folder)), rows_of=rows_of)
    click.echo(f"export: {len(written)} files in {folder / 'export'}")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="nlgbias")
def cli() -> None:
    """Measure social bias in what language models write.

    Prompts a model about demographic groups, scores what comes back, and reports where
    groups are treated differently, with confidence intervals and adjusted p-values.

    Example:

        \b
        nlgbias run sheng2019 --model smollm2-135m --samples 100 --seed 0 --out runs/demo
    """


@cli.command()
@run_options
@shared_options("out", "quiet")
@click.option("--force", is_flag=True, help="Start over when --out holds a run store truncated to 0 bytes.")
@click.option("--ray", "use_ray", is_flag=True,
              help="Generate and score on a pool of Ray actors in a local Ray instance (pip install 'nlgbias[ray]').")
@click.option("--ray-address", default=None, metavar="ADDR",
              help="Run on this Ray cluster instead (auto, or HOST:PORT of its head; run this on a node of the cluster).")
@click.option("--workers", type=int, default=None,
              help=f"Ray actors in the pool, at most {LIMITS['workers']:,} [default: as many as the cluster's CPUs "
                   f"(or GPUs) hold].")
@click.option("--worker-cpus", type=float, default=None,
              help=f"CPUs per Ray actor (also its torch threads; at most {LIMITS['worker_cpus']:g}). [default: 1]")
@click.option("--worker-gpus", type=float, default=None,
              help=f"GPUs per Ray actor; Ray places it on a GPU node (at most {LIMITS['worker_gpus']:g}). [default: 0]")
@export_option
@plugin_option
def run(run_options, out, quiet, force, exports, use_ray, ray_address, workers, worker_cpus, worker_gpus) -> None:
    """Run a probe SUITE (built-in name or YAML file) on one or more models.

    Writes samples.parquet/.jsonl, metrics.json and CSV tables, report.html and
    manifest.json to --out.  Rerunning the same command resumes an interrupted run and
    only rebuilds missing outputs of a finished one.

    Example:

        \b
        nlgbias run sheng2019 --model smollm2-135m --model gemma3-270m --samples 50 --out runs/two

    On a Ray cluster (after `ray start --head` here and `ray start --address HEAD:6379` on each node):

        \b
        nlgbias run sheng2019 --samples 1000 --ray-address auto --worker-cpus 4 --out runs/big

    With your own analyses, scorers, backends or suite kinds, add --plugin MODULE
    (docs/extending.md).
    """
    clock = Stopwatch()
    formats = export_formats(exports)  # a typo stops the run before it starts
    ray = ray_options(use_ray, ray_address, workers=workers, worker_cpus=worker_cpus, worker_gpus=worker_gpus)
    config = RunConfig.create(**run_options)
    result = run_config(config, out=out, quiet=quiet, command=["nlgbias", *sys.argv[1:]], clock=clock, force=force,
                        ray=ray)
    if not quiet:
        click.echo(f"report: {result.out / 'report.html'}")
    if formats:
        _echo_exports(result.out, formats)


def performed_analyses(folder: Path) -> list[str]:
    """The analyses a finished run performed, from its manifest (none if it cannot be read: re-rendering
    then says what is wrong with the folder)."""
    try:
        manifest = json.loads((Path(folder) / "manifest.json").read_text(encoding="utf-8"))
        names = manifest["statistics"]["analyses"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return []
    return [name for name in names if isinstance(name, str)] if isinstance(names, list) else []


def ray_options(use_ray: bool, address: str | None, **pool):
    """``--ray``/``--ray-address`` and the pool flags as :class:`~nlgbias.pipeline.distributed.RayOptions` (None: no Ray)."""

    given = {name: value for name, value in pool.items() if value is not None}
    if not use_ray and address is None:
        if given:
            name = next(iter(given))
            raise InputError(f"--{name.replace('_', '-')} {given[name]:g}: only with --ray or --ray-address")
        return None
    if use_ray and address is not None:
        raise InputError(f"--ray-address {address}: give --ray (a local Ray instance) or --ray-address, not both")
    options = RayOptions(address=address, **given)
    options.check()
    return options


@cli.command()
@click.option("--scorer", "scorer_name", required=True, help="vader, textblob, regard ...")
@click.option("--input", "input_path", required=True, type=IN_PATH,
              help="UTF-8 text file, one text per line (at most 100,000 characters a line).")
@click.option("--output", "output_path", required=True, type=OUT_PATH,
              help="JSONL file to write (not the --input file).")
@click.option("--mask", "masks", multiple=True, metavar="TEXT",
              help="Replace this group mention with XYZ before scoring (repeatable), e.g. --mask 'The woman'.")
@click.option("--classifier", type=IN_PATH, default=None,
              help="With --scorer regard: your own classifier (the --out folder of `nlgbias train-regard`).")
@plugin_option
def score(scorer_name, input_path, output_path, masks, classifier) -> None:
    """Score one text per line of --input; write {"text", "label", "score", "scores"} per line.

    The regard classifier expects the person a sentence is about written as XYZ, as in its
    training data; --mask does that for raw text.  Empty lines get label null.

    Example:

        \b
        nlgbias score --scorer regard --input sentences.txt --output scored.jsonl --mask "The woman"
    """

    counts = score_file(input_path, output_path, scorer=scorer_name, masks=masks, classifier=classifier)
    notes = [f"{counts['texts']} texts scored with {scorer_name}"]
    if not counts["texts"]:
        notes = [f"--input {input_path} is empty: 0 texts scored with {scorer_name}"]
    if counts["truncated"]:
        notes.append(f"{counts['truncated']} longer than the scorer's limit were cut")
    if counts["empty"]:
        notes.append(f"{counts['empty']} empty")
    click.echo("; ".join(notes) + f" -> {output_path}", err=True)


@cli.command()
def models() -> None:
    """List the embedded models, whether each is installed, and how to install the rest.

    Example:

        \b
        nlgbias models
    """

    rows = list_models()
    width = max(len(r["alias"]) for r in rows)
    for r in rows:
        status = "installed" if r["installed"] == "yes" else f"not installed: {r['install']}"
        click.echo(f"{r['alias']:<{width}}  {r['description']}  [{status}]")
    click.echo("\nAlso: a .gguf file, a transformers model folder, a hub id (org/name, needs a hub), "
               "or openai:NAME[@URL] for an OpenAI-compatible server.")


@cli.command()
@click.argument("suite", required=False)
@click.option("--mde", type=float, required=True,
              help=f"The gap to detect, in percentage points (e.g. 5; from {MIN_MDE:g} to 100).")
@click.option("--power", type=float, default=0.8, show_default=True,
              help=f"Chance of detecting a gap of --mde ({MIN_POWER:g} to 1).")
@click.option("--base-rate", type=float, default=0.2, show_default=True,
              help="The label share the gap starts from (0-1); ignored with --from.")
@shared_options("model", model={"help": "A model the run will compare (repeatable; only their number matters here: "
                                         "each pair adds model gaps). [default: one]"})
@click.option("--scorer", "scorers", multiple=True,
              help="The run's scorers, if not the suite's (repeatable; each multiplies the comparisons).")
@click.option("--from", "run_folder", type=IN_PATH, default=None,
              help="A finished run folder: use its observed base rate and intra-prompt correlation per comparison, "
                   "its models and its rate (for the expected time).")
@click.option("--icc", type=float, default=None,
              help=f"Intra-prompt correlation of a gap, 0 to 1 [default: the --from run's median, else {ICC:g}].")
@click.option("--prompts-per-group", type=int, default=None,
              help="Plan for this many prompts per group (bold can draw them; other suites need more templates) "
                   "[default: the suite's, or the run's].")
@click.option("--unit", type=click.Choice(list(LEVELS)), default=INFERENCE_UNIT, show_default=True,
              help="The unit of inference the run will use: prompt or sample, as for run.")
def plan(suite, mde, power, base_rate, models, scorers, run_folder, icc, prompts_per_group, unit) -> None:
    """Samples per prompt (or prompts per group) that SUITE (default sheng2019, or the --from run's) needs to
    detect a gap of --mde points.

    The level per comparison is the run's FDR (0.05) divided by the number of comparisons
    the run tests together (Bonferroni: conservative for its Benjamini-Hochberg adjustment);
    each --model adds the model gaps.  At prompt level (the default) prompts, not only samples,
    decide what a gap can show: where more samples of the same prompts cannot reach the gap, the
    plan says how many prompts per group would.

    Example:

        nlgbias plan sheng2019 --mde 5 --power 0.8 --base-rate 0.2
    """

    result = make_plan(suite, mde=mde, power=power, base_rate=base_rate, models=max(len(models), 1),
                       scorers=list(scorers) or None, run_folder=run_folder, flags=True, icc=icc,
                       prompts_per_group=prompts_per_group, unit=unit)
    click.echo(result.text())


@cli.command()
@click.argument("name", required=False)
@plugin_option
def suites(name) -> None:
    """List built-in suites, or show the description and prompts of one (a name or a YAML path).

    The description lines of one suite start with '#'; every other line is one prompt.

    Example:

        \b
        nlgbias suites sheng2019
    """


    if not name:
        for suite_name in list_suites():
            suite = load_suite(suite_name)
            head = f"{suite_name:<28} {len(suite_prompts(suite)):>5} prompts  "
            lines = textwrap.wrap(" ".join(suite.description.split()), width=LISTING_WIDTH - len(head)) or [""]
            click.echo(head + ("\n" + " " * len(head)).join(lines))
        return
    suite = load_suite(name)
    prompts = suite_prompts(suite)
    about = f"{suite.name} (version {suite.version}, {len(prompts)} prompts): {' '.join(suite.description.split())}"
    click.echo("\n".join(textwrap.wrap(about, width=LISTING_WIDTH, initial_indent="# ", subsequent_indent="# ")))
    if "prompt_file" in suite.probe:  # a sample of a prompt file (bold): what each group holds in all
        for row in prompt_counts(suite).itertuples():
            click.echo(f"# {row.group:<32} {row.context:<20} {row.prompts:>6} prompts")
    if "context" not in prompts.columns:  # prompts without a template context (pronoun suites)
        for row in prompts.itertuples():
            click.echo(f"{row.prompt_id:<48} {row.prompt}")
        return
    for row in prompts.itertuples():
        click.echo(f"{row.prompt_id:<32} {row.context:<12} {row.prompt}")


@cli.command()
@plugin_option
def scorers() -> None:
    """List scorers, what each measures and whether it can run here (nothing is loaded).

    Example:

        \b
        nlgbias scorers
    """


    for row in describe_scorers().itertuples():
        head = f"{row.name:<11}{'available' if row.available else 'not available':<15}"
        text = row.description + ("" if row.available else f" [{row.reason}]")
        lines = textwrap.wrap(text, width=LISTING_WIDTH - len(head), break_on_hyphens=False) or [""]
        click.echo(head + ("\n" + " " * len(head)).join(lines))


@cli.command()
@click.argument("runs", nargs=-1, required=True, type=IN_PATH)
@click.option("--out", type=OUT_PATH, default=None,
              help="Folder for a new report over the RUNs (outside every run folder): report.html, runs.csv, "
                   "manifest.json and the tables.")
@click.option("--min-n", type=int, default=None, help="Flag cells with fewer samples [default: each run's].")
@click.option("--confidence", type=float, default=None, help="Level of every CI, e.g. 0.99 [default: each run's].")
@click.option("--title", default=None, help="The report's heading.")
@export_option
@click.option("--export-scorer", "export_scorers", multiple=True, metavar="NAME",
              help="Exported tables keep this scorer's rows only (repeatable).")
@click.option("--export-context", "export_contexts", multiple=True, metavar="NAME",
              help="Exported tables keep this context's rows only (repeatable).")
@click.option("--export-significant", is_flag=True,
              help="Exported comparison tables keep the rows with adjusted p < 0.05 only (adjusted over all).")
@plugin_option
def report(runs, out, min_n, confidence, title, exports, export_scorers, export_contexts, export_significant) -> None:
    """Re-render RUN/report.html, or write one report over several RUNs to --out.

    With one RUN and no options, the run's report is rendered again from its metrics.json,
    samples and manifest.  With --out, the RUNs' analyses are computed again from their
    samples (nothing is generated or scored again), with --min-n and --confidence if given.
    Runs with the same suite, decoding, seed and scorer versions are analysed as one run with
    all their models (model gaps and gap differences across runs), also when their samples per
    prompt differ (each comparison uses its own cells' n); runs whose other settings differ
    become separate parts, shown side by side with their settings.

    Example:

        \b
        nlgbias report runs/demo
        nlgbias report runs/demo --export latex,markdown --export svg

    Two runs in one report, cells under 50 samples flagged, with LaTeX tables of the significant
    regard comparisons:

        \b
        nlgbias report runs/demo runs/other --out runs/both --min-n 50 --title "Two runs"
        nlgbias report runs/demo runs/other --out runs/both --export latex --export-scorer regard --export-significant
    """

    formats = export_formats(exports)
    rows_of = RowFilter(tuple(export_scorers), tuple(export_contexts), export_significant)
    if rows_of and not formats:
        flag = "--export-scorer" if export_scorers else "--export-context" if export_contexts else "--export-significant"
        raise InputError(f"{flag}: filters the rows of exported tables; give it with --export latex or markdown")
    if out is None:
        given = [name for name, value in (("--min-n", min_n), ("--confidence", confidence), ("--title", title))
                 if value is not None]
        if len(runs) > 1 or given:
            raise InputError(f"{given[0] if given else f'{len(runs)} runs'}: a new report needs --out DIR, a folder "
                             f"outside the run folders (a run's own report stays as the run wrote it)")
        # a run still writing the folder holds its lock: re-render once it has finished, not halfway
        lock = (hold_folder(runs[0], command=["nlgbias", *sys.argv[1:]], advice="wait for it to finish, then re-render")
                if runs[0].is_dir() else contextlib.nullcontext())  # a missing folder: the report says what is missing
        with lock:
            rerender_report(runs[0], sections=report_sections(performed_analyses(runs[0])))
            click.echo(f"report: {runs[0] / 'report.html'}")
            if formats:
                _echo_exports(runs[0], formats, rows_of=rows_of)
        return

    combined = report_runs(runs, out=out, min_n=min_n, confidence=confidence, title=title,
                           check=lambda c: rows_of.check(*(part.results for part in c.parts)))
    click.echo(f"{len(runs)} runs in {len(combined.parts)} part{'s' if len(combined.parts) > 1 else ''} "
               f"(settings side by side in {out / 'runs.csv'}); report: {out / 'report.html'}")
    if formats:
        written = export_combined(combined, out, formats, sections=report_sections(), rows_of=rows_of)
        where = out / EXPORT_FOLDER if len(combined.parts) == 1 else out / "part-N" / EXPORT_FOLDER
        click.echo(f"export: {len(written)} files in {where}")


@cli.group()
def annotate() -> None:
    """Build annotated data the way Sheng et al. did: sample, export sheets, import, agree.

    Example:

        \b
        nlgbias annotate sample runs/demo --out annotation --annotators a1,a2,a3
    """


@annotate.command("sample")
@click.argument("run_folder", type=IN_PATH)
@shared_options("out", "seed", out=_required_folder("Folder for items, sheets, guidelines."),
                seed={"help": "Sampling seed."})
@click.option("--k-positive", type=int, default=3, show_default=True, help="VADER-positive samples per cell.")
@click.option("--k-negative", type=int, default=3, show_default=True, help="VADER-negative samples per cell.")
@click.option("--k-neutral", type=int, default=0, show_default=True, help="VADER-neutral samples per cell.")
@click.option("--low-confidence", "k_low", type=int, default=None,
              help="Instead: up to N texts per cell that the regard classifier scored with max probability < 0.6.")
@click.option("--annotators", default="a1,a2,a3", show_default=True,
              help="Comma-separated annotator names (each names a sheet file: letters, digits, '-', '_', '.'; at most "
                   "64 characters).")
@click.option("--format", "fmt", type=click.Choice(["csv", "xlsx", "jsonl"]), default="csv", show_default=True,
              help="Sheet files: csv (UTF-8 with BOM, for any spreadsheet program), xlsx (drop-down label lists; "
                   "needs openpyxl) or jsonl.")
def annotate_sample(run_folder, out, seed, k_positive, k_negative, k_neutral, k_low, annotators, fmt) -> None:
    """Sample a run's generations per (model, template, group), mask them, write one sheet per annotator.

    Example:

        \b
        nlgbias annotate sample runs/demo --out annotation --k-positive 3 --k-negative 3

    Your model's hard cases (to check or retrain the regard classifier on them):

        \b
        nlgbias annotate sample runs/demo --out hard --low-confidence 10

    Excel workbooks with a drop-down list of the allowed labels (CSV sheets name them in notes):

        \b
        nlgbias annotate sample runs/demo --out annotation-xlsx --format xlsx
    """

    items, paths = sample_run(run_folder, out, k_positive=k_positive, k_negative=k_negative, k_neutral=k_neutral,
                              k_low=k_low, annotators=[a.strip() for a in annotators.split(",") if a.strip()],
                              fmt=fmt, seed=seed)
    click.echo(f"{len(items)} distinct masked texts; wrote {', '.join(p.name for p in paths)} to {out}")


@annotate.command("import")
@click.argument("sheets", nargs=-1, required=True, type=IN_PATH)
@click.option("--items", "items_path", type=IN_PATH, required=True, help="items.csv from `annotate sample`.")
@click.option("--out", type=OUT_PATH, required=True, help="Folder for labels, agreement, adjudication.")
@click.option("--ties", type=click.Choice(["drop", "mark"]), default="drop", show_default=True,
              help="What to do with items without a majority.")
@click.option("--allow-blank", is_flag=True,
              help="Accept partial sheets: skip (and count) rows without labels and ids a sheet lacks.")
@click.option("--no-classifier-check", "no_check", is_flag=True,
              help="Do not score the texts with the regard classifiers to compare them with the majority labels.")
def annotate_import(sheets, items_path, out, ties, allow_blank, no_check) -> None:
    """Check filled sheets; write labels, agreement figures, majority labels, correlations and regard.csv;
    check the shipped regard classifier against the majority labels.

    Sheets may be CSV (comma, semicolon or tab separated; UTF-8, Windows-1252 or UTF-16), xlsx
    or JSONL, as a spreadsheet program saved them. regard.csv is a training table: `nlgbias
    train-regard --extra-data OUT/regard.csv` adds it to the shipped data, `--data
    OUT/regard.csv` trains on it alone.

    Example:

        \b
        nlgbias annotate import annotation/sheet-a1.csv annotation/sheet-a2.csv annotation/sheet-a3.csv \\
            --items annotation/items.csv --out annotation/result

    Sheets that are not finished yet:

        \b
        nlgbias annotate import annotation/sheet-a1.csv annotation/sheet-a2.csv --allow-blank \\
            --items annotation/items.csv --out annotation/partial
    """

    for line in import_summary(import_labels(sheets, items_path=items_path, out=out, ties=ties,
                                             allow_blank=allow_blank, check_classifier=not no_check), ties=ties):
        click.echo(line)


def import_summary(summary: dict, *, ties: str) -> list[str]:
    """The lines ``annotate import`` prints for :func:`nlgbias.annotation.import_labels`'s summary."""

    lines = [f"{Path(s['file']).name} ({s['annotator']}): {s['labelled']} rows labelled, {s['blank']} blank rows "
             f"skipped, {s['missing']} exported ids missing" for s in summary["sheets"]]
    for column, f in summary["agreement"].items():
        lines.append(f"{column}: Fleiss kappa {f['fleiss_kappa_6']:.2f} (6 categories), {f['fleiss_kappa_3']:.2f} "
                     f"(3 original); Krippendorff alpha {f['krippendorff_alpha_ordinal_3']:.2f}; "
                     f"APIAA {f['apiaa']:.2f}; AMIAA {f['amiaa']:.2f}")
        pairs = [f"{pair} {c['kappa']:.2f} (n={c['n']})" for pair, c in f["cohen_kappa"].items()]
        lines.append(f"  Cohen's kappa per pair: {', '.join(pairs) or 'none (one annotator)'}")
    for t in summary["majority"]:
        other = f", {t['other']} with majority 'other' left out" if t["task"].endswith("3class") else ""
        lines.append(f"{t['task']}: {t['kept']} of {t['items']} items kept; {t['ties']} ties "
                     f"{'dropped' if ties == 'drop' else 'marked'}{other}")
    for c in summary["classifier"]:
        if "skipped" in c:
            lines.append(f"{c['scorer']} classifier not checked: {c['skipped']}")
            continue
        lines.append(f"{c['scorer']} classifier ({c['version']}) vs your {c['task']} majority labels: accuracy "
                     f"{c['accuracy']:.3f} ({c['correct']} of {c['n']} items)")
        lines.extend("  " + row for row in confusion_text(c))
    folder = Path(summary["files"][0]).parent
    lines.append(f"wrote {', '.join(Path(p).name for p in summary['files'])} to {folder} "
                 "(regard.csv is for train-regard --data or --extra-data)")
    return lines


@cli.command()
@click.argument("suite", default="kirk2021-identity")
@shared_options("model", "samples", "seed", "out", "quiet", samples={"default": 50, "help": "Samples per prompt and cell."},
                out=_required_folder("Folder; one run per grid cell inside."))
@click.option("--top-k", "top_k", default="10,50,100", show_default=True, help="Comma-separated top-k values (0 = off).")
@click.option("--temperature", default="0.7,1.0", show_default=True, help="Comma-separated temperatures (> 0).")
@backend_options
@plugin_option
def ablate(suite, models, samples, seed, out, quiet, top_k, temperature, backend_options) -> None:
    """Job diversity (distinct jobs, Gini) over a top-k x temperature grid (Kirk et al., App. C).

    Example:

        \b
        nlgbias ablate kirk2021-identity --top-k 10,50,0 --temperature 0.7,1.0 --samples 100 --out runs/ablation
    """

    bounded(samples, 1, "samples", unit=" per prompt")
    ks, ts = parse_grid(top_k, temperature)
    check_out_folder(out)
    table = decoding_grid(suite, models=list(models) or [DEFAULT_MODEL], top_k=ks, temperature=ts,
                          samples=samples, seed=seed, out=out, quiet=quiet, backend_options=backend_options)
    click.echo(table[["model", "gender", "top_k", "temperature", "n_calls", "n_jobs", "gini", "no_title_rate"]]
               .to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    click.echo(f"wrote {out / 'ablation.csv'}")


@cli.command("names-suite")
@click.argument("names_file", type=IN_PATH)
@click.option("--out", type=OUT_PATH, required=True, help="YAML file to write.")
@click.option("--name", "suite_name", default="my-names", show_default=True, help="Suite name.")
@click.option("--template", default="{group} works as a", show_default=True, help="Prompt template.")
def names_suite(names_file, out, suite_name, template) -> None:
    """Write an occupation suite of name prompts from a CSV with columns name, gender, continent.

    Names listed under several continents become one prompt (never counted twice) whose
    continent attribute lists them all.

    Example:

        \b
        nlgbias names-suite my_names.csv --out my-names.yaml && nlgbias run my-names.yaml --out runs/names
    """


    out = check_out_file(out)
    write_text(out, names_suite_yaml(names_file, name=suite_name, template=template))
    click.echo(f"wrote {out}")


@cli.command("train-regard")
@click.option("--data", "data_path", type=IN_PATH, default=None,
              help="Annotated data: a regard.csv like the one `annotate import` writes [default: the shipped dataset].")
@click.option("--extra-data", "extra_paths", multiple=True, type=IN_PATH,
              help="A regard.csv (from `annotate import`) whose items are added to the training split of --data "
                   "(repeatable); dev and test stay as they were.")
@shared_options("out", "seed", out=_required_folder("Folder for the trained classifier."),
                seed={"help": "Training seed."})
@click.option("--classes", type=click.Choice(["3", "4"]), default="3", show_default=True,
              help="3: negative/neutral/positive; 4: adds other (mixed, nonsense).")
@click.option("--epochs", type=int, default=None,
              help=f"Training epochs, at most {LIMITS['epochs']:,} [default: the shipped recipe's 4]; fewer for a "
                   f"quick check.")
@click.option("--holdout", type=float, default=0.2, show_default=True,
              help="Share of the --extra-data items held out (never trained on) to measure the classifier on "
                   "your own text; 0: train on all of them.")
@click.option("--soft", "soft_path", type=IN_PATH, default=None,
              help="Unannotated sentences with a teacher's probabilities (columns text, p_negative, p_neutral, "
                   "p_positive), learned beside the annotated ones (knowledge distillation; 3 classes) "
                   "[default: the shipped teacher labels when --data is not given].")
@click.option("--compare", is_flag=True, help="Also compare with the baselines over --seeds seeds (slow).")
@click.option("--seeds", type=int, default=5, show_default=True,
              help=f"Seeds for --compare (at most {LIMITS['seeds']}).")
def train_regard(data_path, extra_paths, out, seed, classes, epochs, holdout, soft_path, compare, seeds) -> None:
    """Rebuild the regard classifier from the annotated data, deterministically.

    With the shipped data and defaults, the adapter written to --out is byte-identical to the
    shipped one on the same machine setup (the command says whether it is, and which).

    Example:

        \b
        nlgbias train-regard --out build/regard --classes 3

    The shipped data plus your own annotations (the regard.csv of `nlgbias annotate import`):

        \b
        nlgbias train-regard --extra-data annotation/result/regard.csv --out build/regard-plus
    """


    from nlgbias.training import build_classifier  # torch: only when training
    from nlgbias.training.dataset import training_data
    from nlgbias.training.experiment import report_markdown, write_comparison

    bounded(seeds, 1, "seeds")
    if epochs is not None:
        bounded(epochs, 1, "epochs")
    for flag, path in [("--data", data_path), ("--soft", soft_path), *(("--extra-data", p) for p in extra_paths)]:
        if path is not None and not path.is_file():
            raise InputError(f"{flag} {path}: {not_a_file(path)}")
    if soft_path is not None and classes != "3":
        raise InputError("--soft: teacher labels are 3-class; use --classes 3")
    check_out_folder(out)  # before training (minutes), not after
    from nlgbias.training.dataset import load_soft
    from nlgbias.training.report import training_lines

    data = training_data(data_path, extra=extra_paths, holdout=holdout, seed=seed)
    soft = load_soft(soft_path, default=data_path is None and classes == "3")
    result = build_classifier(data, out, classes=int(classes), seed=seed, epochs=epochs, progress=Progress().bar,
                              soft=soft)
    for line in training_lines(result, data, classes=int(classes), extra_paths=extra_paths, out=out):
        click.echo(line)
    same = result["identical_to_shipped"]
    click.echo(f"adapter sha256 {result['adapter_sha256'][:16]}: "
               + (f"identical to the shipped classifier ({same})" if same else "differs from the shipped classifiers"))
    if compare:

        comparison = write_comparison(data, out, classes=int(classes), seeds=range(seeds),
                                      progress=lambda name, s: click.echo(f"  {name} seed {s} done", err=True))
        click.echo(report_markdown(comparison))


@cli.command("check-scorer")
@click.argument("scorer")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Folder for cases.csv, results.csv, summary.json and summary.md.")
@click.option("--half", type=click.Choice(["all", "test", "train"]), default="all", show_default=True,
              help="Cases from the test or the train half of the lexicons, or both (report the test half).")
@click.option("--max-per-type", type=int, default=None,
              help="At most this many cases per case type and half (a quick check) [default: all].")
def check_scorer_command(scorer, out, half, max_per_type) -> None:
    """Run the regard test suite on SCORER: pass rates per case type (MFT, INV, DIR) with 95% CIs.

    SCORER is a scorer name (regard, regard4, regard-v1, regard-v2, regard4-v1, vader, textblob) or a
    classifier folder written by `nlgbias train-regard`. Cases come from hand-written lexicons
    put into Sheng et al.'s ten templates; each lexicon is split in a train and a test half,
    and only the test half's figures measure a classifier trained on the train half.

    Example:

        \b
        nlgbias check-scorer regard --out runs/check-regard

    Your own classifier, test half only:

        \b
        nlgbias check-scorer build/regard --half test
    """
    from nlgbias.checklist import check_scorer

    result = check_scorer(scorer, half=half, out=out, max_per_type=max_per_type)
    click.echo(result.table())
    for t in result.targets:
        click.echo(f"target: {t['name']} {100 * t['value']:.1f}% (n={t['n']}, 95% CI {100 * t['ci_low']:.1f}-"
                   f"{100 * t['ci_high']:.1f}), {t['target']}: {'met' if t['met'] else 'not met'}")
    if out is not None:
        click.echo(f"wrote cases.csv, results.csv, summary.json, summary.md to {out}")


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI; bad input -> one ``Error:`` line and exit code 2."""
    try:
        with command_line_wording():
            cli.main(args=argv, prog_name="nlgbias", standalone_mode=False)
    except NlgbiasError as exc:
        click.echo(f"Error: {one_line(exc)}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except click.UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError" and exc.ctx is not None:
            click.echo(exc.ctx.get_help())
            sys.exit(0)
        hint = f" (see: nlgbias {exc.ctx.command.name} --help)" if exc.ctx and exc.ctx.command.name != "cli" else ""
        click.echo(f"Error: {exc.format_message()}{hint}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("\nInterrupted; what was finished is stored. Rerun the same command to resume.", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(1)
    except OSError as exc:  # the machine's state, not a bug: a full disk, a folder without write permission
        click.echo(f"Error: {one_line(os_error_text(exc))}", err=True)
        sys.exit(EXIT_BAD_INPUT)


def one_line(message) -> str:
    """A message as one line, with credentials of any URL in it hidden (:func:`nlgbias.urls.redact`)."""

    return redact(str(message).replace("\r\n", " ").replace("\n", " ").replace("\r", " "))


def os_error_text(exc: OSError) -> str:
    """``<file>: <what>`` for an operating-system error no command turned into a message of its own."""

    where = exc.filename if exc.filename is not None else "nlgbias"
    what = exc.strerror or str(exc)
    if out_of_space(exc):
        what = "disk full (no space left on device); free space and rerun the same command"
    return f"{where}: {what}"
