"""Run by mkdocs-gen-files at every docs build: the configuration reference (reference/config.md) from the
dataclasses themselves (defaults, bounds, command-line flags; meanings from their docstrings and field
comments), and a check that docs/benchmarks.md is what `python benchmarks/report.py` makes of
benchmarks/results/."""

from __future__ import annotations

import dataclasses
import inspect
import io
import re
import runpy
import tokenize
from pathlib import Path

import click
import mkdocs_gen_files

from synprep import config as data_config
from synprep.cli.bounds import AboveFloat
from synprep.cli.pipeline import annotate_cmd, pipeline_cmd
from synprep.cli.train import train_cmd
from synprep.train import schema
from synprep.train.config import LIMITS
from synprep.train.sources import source_options

ROOT = Path(__file__).resolve().parent.parent


def cell(text: object) -> str:
    """A table cell: Sphinx roles (``:mod:`x```) as code, no line break, ``|`` escaped."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", str(text))
    text = text.replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("|", "\\|").replace("\n", " ").strip()


def code(value: object) -> str:
    return "—" if value in ("", None) else f"`{value!r}`" if isinstance(value, str) else f"`{value}`"


def attributes(cls: type) -> dict[str, str]:
    """Name → description from the class docstring's ``Attributes:`` section (``a, b:`` entries shared)."""
    out: dict[str, str] = {}
    names: list[str] = []
    doc = inspect.cleandoc(cls.__doc__ or "")
    section = doc.split("Attributes:", 1)[1] if "Attributes:" in doc else ""
    for line in section.splitlines()[1:]:
        if line and not line.startswith(" "):
            break
        m = re.match(r"    ([\w, ]+): (.*)", line)
        if m:
            names = [n.strip() for n in m.group(1).split(",")]
            for n in names:
                out[n] = m.group(2)
        elif line.strip():
            for n in names:
                out[n] += " " + line.strip()
    return out


def click_range(param: click.Parameter) -> str:
    t = param.type
    if isinstance(t, AboveFloat):
        t = t.inner
    if isinstance(t, click.Choice):
        return " \\| ".join(f"`{c}`" for c in t.choices)
    if isinstance(t, (click.IntRange, click.FloatRange)):
        lo = "" if t.min is None else f"{t.min} {'<' if t.min_open else '≤'} "
        hi = "" if t.max is None else f" {'<' if t.max_open else '≤'} {t.max}"
        return f"{lo}x{hi}"
    return ""


def data_config_page() -> str:
    params = {p.name: p for cmd in (pipeline_cmd, annotate_cmd) for p in cmd.params}
    flags = {saved: (param, negated) for param, saved, negated in data_config.option_fields()}
    meaning = {**attributes(data_config.DataConfig)}
    for section in data_config.SECTIONS.values():
        meaning.update(attributes(section))
    rows = ["| field (`pipeline.json`) | section | default | bounds | flag | meaning |", "|---|---|---|---|---|---|"]
    for saved, (section, f) in data_config._FIELDS.items():
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        param, negated = flags.get(saved, (None, False))
        p = params.get(param) if param else None
        flag = "—" if p is None else f"`{'/'.join([p.opts[-1], *p.secondary_opts[-1:]])}`"
        rows.append(f"| `{saved}` | {section or '—'} | {code(default)} | {click_range(p) if p else ''} | {flag} "
                    f"| {cell(meaning.get(f.name, ''))} |")
    return "\n".join(rows)


def field_comments() -> tuple[dict[str, str], dict[str, str]]:
    """TrainConfig field → its comment (on its line, else the comment lines just above, else the source its
    block cites), and field → the
    block (``model``, ``syntax`` …) it sits in, read from synprep/train/schema.py's source."""
    source = Path(schema.__file__).read_text(encoding="utf-8")
    body = source.split("class TrainConfig", 1)[1].split("def __post_init__", 1)[0]
    comments: dict[str, str] = {}
    blocks: dict[str, str] = {}
    sources: dict[str, str] = {}
    above: list[str] = []
    block = ""
    for line in body.splitlines():
        stripped = line.strip()
        m = re.match(r"(\w+): [^=]+=", stripped)
        if stripped.startswith("# ---"):
            block, above = re.sub(r"[-#\s]+", " ", stripped.split("(")[0]).strip(), []
            cite = re.search(r"\((.*)\)", stripped)
            sources[block] = cite.group(1) if cite else ""
        elif stripped.startswith("#"):
            above.append(stripped.lstrip("# "))
        elif m:
            tokens = tokenize.generate_tokens(io.StringIO(stripped + "\n").readline)
            trailing = [re.sub(r"^#\s*(type: ignore\S*\s*#?\s*)?", "", t.string) for t in tokens
                        if t.type == tokenize.COMMENT]
            comments[m.group(1)] = " ".join(trailing) or " ".join(above) or (
                f"(see {sources[block]})" if sources.get(block) else "")
            blocks[m.group(1)] = block
            above = []
        else:
            above = []
    return comments, blocks


def train_config_page() -> str:
    comments, blocks = field_comments()
    options = {o.key: o for o in source_options()}
    flags = {p.name: p.opts[-1] for p in train_cmd.params}
    flags["max_epochs"] = flags.pop("epochs", "--epochs")
    choices = {"syntax": schema.SYNTAX_MODES, "syntax_source": schema.SYNTAX_SOURCES,
               "batch_order": schema.BATCH_ORDERS, "attention_backend": schema.ATTENTION_BACKENDS}
    rows = ["| field (`config.json`, `--set`) | block | default | bounds | flag | meaning |",
            "|---|---|---|---|---|---|"]
    for f in dataclasses.fields(schema.TrainConfig):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        if f.name in schema.GATED_PAPER_DEFAULTS:
            shown = f"the sources' papers (gated: `{schema.GATED_PAPER_DEFAULTS[f.name]}`)"
        else:
            shown = code(default)
        if f.name in options:
            opt = options[f.name]
            meaning, block = f"`{opt.source}`: {opt.field.metadata.get('help', '')}", "syntax source"
            opt_choices = opt.field.metadata.get("choices")
            if opt_choices:
                choices[f.name] = opt_choices
        else:
            meaning, block = f.metadata.get("help") or comments.get(f.name, ""), blocks.get(f.name, "")
        meaning = re.sub(r"\s*\(?issue \d+[^);]*\)?;?", "", meaning)
        low, high = LIMITS.get(f.name, (None, None))
        bounds = (" \\| ".join(f"`{c}`" for c in choices[f.name]) if f.name in choices else
                  "" if low is None and high is None else
                  f"{'' if low is None else f'{low} ≤ '}x{'' if high is None else f' ≤ {high}'}")
        flag = f"`{flags[f.name]}`" if f.name in flags else "`--set`"
        rows.append(f"| `{f.name}` | {block} | {shown} | {bounds} | {flag} | {cell(meaning)} |")
    return "\n".join(rows)


PAGE = """# Configuration fields

Generated from the code when the site is built: every field, its default, its bounds and the option
that sets it. Meanings come from the dataclasses' docstrings and field comments.

## Data: `DataConfig` (`OUT/pipeline.json`)

`synprep.config.DataConfig`: every setting that determines an output folder. `synprep pipeline` and
`synprep annotate` read their options into it; it is saved flat as `OUT/pipeline.json` (one key per field)
and inherited by later splits and resumes: a field given again with another value is refused, naming it.
`synprep pipeline --config FILE` starts from a saved one. "—" in the flag column: set through the
configuration file only (or, for `mode`, by the command). A parser backend's own options are saved in
`parser_options` ([Extend synprep](../extend.md)).

{data}

## Training: `TrainConfig` (`RUN/config.json`)

`synprep.train.config.TrainConfig`: every hyperparameter of a run. A preset (`--preset`), a file
(`--config`), a named system (`--system`) and `--set KEY=VALUE` (the value parsed as JSON) set them, in
that order; the flags listed are shortcuts. Values are type-checked and bounded on load. A field whose
default names the sources' papers is resolved from the syntax sources in use ([The model](../model.md)).
Fields that may change on `--resume`: {resume}.

{train}
"""

with mkdocs_gen_files.open("reference/config.md", "w") as out:
    out.write(PAGE.format(data=data_config_page(), train=train_config_page(),
                          resume=", ".join(f"`{k}`" for k in sorted(schema.RESUME_OVERRIDABLE))))

report = runpy.run_path(str(ROOT / "benchmarks" / "report.py"))
if report["render"](ROOT / "benchmarks" / "results") != (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8"):
    raise SystemExit("docs/benchmarks.md is not benchmarks/report.py's output: run "
                     "`python benchmarks/report.py > docs/benchmarks.md`")
