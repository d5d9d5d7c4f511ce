"""Options shared by several commands."""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Iterable
from typing import Any

import click
from click.core import ParameterSource

from synprep.cli.fields import field_option, section_values, with_field_options
from synprep.errors import ConfigError
from synprep.parallel import BACKENDS, usable_cpus
from synprep.parse.base import ParserSpec, backend_class, plugin_options
from synprep.parse.config import ParseConfig
from synprep.parse.registry import parser_names
from synprep.shards.config import ShardConfig
from synprep.text.config import TextConfig

log = logging.getLogger("synprep")


def split_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Click callback of ``--split``: a valid split name (``[A-Za-z0-9_-]+``) before any file is touched."""
    from synprep.lock import check_split_name

    if value is None:
        return value
    try:
        return check_split_name(value)
    except ConfigError as e:
        raise click.BadParameter(str(e), ctx=ctx, param=param) from None


def jobs_options(f):
    """``-j/--jobs``, ``--backend``, ``--scheduler`` (see :mod:`synprep.parallel`)."""

    @click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
                  help="Worker processes.")
    @click.option("--backend", type=click.Choice(BACKENDS), default="loky", show_default=True,
                  help="joblib backend: loky (one machine) or dask (a dask.distributed cluster).")
    @click.option("--scheduler", default=None, metavar="ADDRESS",
                  help="dask scheduler address for --backend dask (tcp://host:8786, or tls://host:8786 with the "
                       "--tls-* files). The cluster must be trusted: work travels as pickles.")
    @click.option("--tls-ca-file", default=None, metavar="FILE", help="CA certificate of a tls:// dask cluster.")
    @click.option("--tls-cert", default=None, metavar="FILE", help="Client certificate for a tls:// dask cluster.")
    @click.option("--tls-key", default=None, metavar="FILE", help="Client private key for a tls:// dask cluster.")
    @functools.wraps(f)
    def wrapper(*args, tls_ca_file=None, tls_cert=None, tls_key=None, **kwargs):
        from synprep.parallel import set_tls

        check_jobs_options(kwargs["backend"])
        if (tls_ca_file or tls_cert or tls_key) and not str(kwargs.get("scheduler") or "").startswith("tls://"):
            raise ConfigError("--tls-ca-file/--tls-cert/--tls-key need --backend dask --scheduler tls://HOST:PORT")
        set_tls(tls_ca_file, tls_cert, tls_key)
        return f(*args, **kwargs)

    return wrapper


def given_options(names: Iterable[str]) -> list[str]:
    """The options among ``names`` (parameter names) that the user set (command line or environment),
    as they are spelled on the command line (``--stanza-dir``; an option with an older spelling too:
    ``--spacy-label-map/--label-map``), in the command's order."""
    ctx = click.get_current_context()
    wanted = set(names)
    out = []
    for p in ctx.command.params:
        if p.name in wanted and ctx.get_parameter_source(p.name) not in (None, ParameterSource.DEFAULT):
            long = [o for o in p.opts if o.startswith("--")] if isinstance(p, click.Option) else []
            out.append("/".join(long) if len(long) > 1 else max(p.opts, key=len) if isinstance(p, click.Option)
                       else p.name or "")
    return out


def refuse_unused(names: Iterable[str], why: str) -> None:
    """An option that has no effect in this mode is an error, never silently ignored (README).

    Args:
        names: parameter names that have no effect here.
        why: the mode, in words ("with --parser conllu").

    Raises:
        ConfigError: one of them was given (exit status 2), naming it.
    """
    given = given_options(names)
    if given:
        raise ConfigError(f"{', '.join(given)} {'has' if len(given) == 1 else 'have'} no effect {why}: leave "
                          f"{'it' if len(given) == 1 else 'them'} out")


def backend_params() -> dict[str, str]:
    """Click parameter → parser backend, for every backend's own option: its folder settings'
    (:func:`backend_fields`: ``stanza_package`` → ``stanza``) and its
    :attr:`~synprep.parse.base.ParserBackend.Options`' (``corenlp_endpoint`` → ``corenlp``)."""
    out = {field_option(f).name or "": backend for backend, f in backend_fields()}
    out.update({o.param: o.backend for o in plugin_options()})
    return out


def backend_fields() -> list[tuple[str, dataclasses.Field]]:
    """``(backend, field)`` for each :class:`~synprep.parse.config.ParseConfig` field that a backend reads (metadata
    ``spec`` among its :attr:`~synprep.parse.base.ParserBackend.options`), in registry and field order."""
    return [(name, f) for name in parser_names() for f in dataclasses.fields(ParseConfig)
            if f.metadata.get("spec") in backend_class(name).options]


def refuse_other_backends_options(parser_name: str) -> None:
    """The options of the backends other than ``--parser parser_name`` have no effect: an error when given."""
    refuse_unused([p for p, b in backend_params().items() if b != parser_name], f"with --parser {parser_name}")


def backend_plugin_options(f):
    """Every registered parser backend's own options, with one rule: ``--NAME-FIELD`` (``--stanza-package``,
    ``--corenlp-endpoint``, ``--spacy-model``), plus an older spelling where one exists (``--timeout``,
    ``--label-map``): per backend, those of its :attr:`~synprep.parse.base.ParserBackend.Options`, then its folder
    settings, generated from their :class:`~synprep.parse.config.ParseConfig` fields. Put :func:`backend_options`
    (or :func:`parse_section`) below it to receive them.
    """
    fields_ = backend_fields()
    for name in reversed(parser_names()):
        f = with_field_options(ParseConfig, only=[g.name for backend, g in fields_ if backend == name])(f)
        for o in reversed([o for o in plugin_options() if o.backend == name]):
            f = click.option(*o.flags, o.param, default=o.default, type=o.type, metavar=o.metavar,
                             show_default=o.default is not None, help=o.help)(f)
    return f


#: the name the commands import (it held --spacy-model and --label-map before every backend's options
#: were generated)
spacy_options = backend_plugin_options


def backend_options(f):
    """Hand the command every backend's own option (:func:`backend_plugin_options`) as one keyword,
    ``backend_opts``: :class:`~synprep.parse.base.ParserSpec` keyword → value, so that
    ``ParserSpec(**backend_opts, ...)`` takes them, whichever backends exist. An option whose field has
    no ParserSpec field of its own travels in ``plugin_options`` (when given).

    Put it right above the command's ``def`` (below every ``click.option``).
    """

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        kwargs["backend_opts"] = _backend_values(kwargs)
        return f(*args, **kwargs)

    return wrapper


def _backend_values(params: dict[str, Any], parser: str | None = None) -> dict[str, Any]:
    """The backends' own options among the command's ``params`` (taken out of it), by
    :class:`~synprep.parse.base.ParserSpec` keyword (its folder settings: ``package``, ...; its runtime fields:
    ``dir``, ...); those of a backend's :attr:`~synprep.parse.base.ParserBackend.Options` without a ParserSpec
    field in ``plugin_options`` when given (only ``parser``'s, unless None)."""
    ctx = click.get_current_context()
    opts: dict[str, Any] = {f.metadata["spec"]: params.pop(field_option(f).name) for _, f in backend_fields()
                            if field_option(f).name in params}
    plugin = []
    for o in plugin_options():
        if o.param not in params:
            continue
        value = params.pop(o.param)
        if o.spec is not None:
            opts[o.spec] = value
        elif ctx.get_parameter_source(o.param) not in (None, ParameterSource.DEFAULT) and parser in (None, o.backend):
            plugin.append((o.param, value))
    if plugin:
        opts["plugin_options"] = tuple(plugin)
    return opts


def parse_section(f):
    """Hand the command its parse section whole: the :class:`~synprep.parse.config.ParseConfig` of the parse
    options it was given (``--parser``, the section's generated options, the backends' folder options, the
    chosen backend's plugin options) as one keyword, ``parse_config``, and the backends' runtime options
    (``--stanza-dir``, ``--corenlp-endpoint``, ``--corenlp-timeout``) as ``parser_runtime``
    (:class:`~synprep.parse.base.ParserSpec` keyword → value). Put it right above the command's ``def``.

    Raises:
        ConfigError: a value the section refuses.
    """

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        values = section_values(ParseConfig, kwargs)
        opts = _backend_values(kwargs, values.get("parser"))
        runtime = {f.name for f in dataclasses.fields(ParserSpec) if f.metadata.get("runtime")}
        kwargs["parser_runtime"] = {k: v for k, v in opts.items() if k in runtime}
        kwargs["parse_config"] = ParseConfig(**values, parser_options=opts.get("plugin_options", ()))
        return f(*args, **kwargs)

    return wrapper


def check_jobs_options(backend: str) -> None:
    """``--scheduler`` only means something with ``--backend dask``."""
    if backend != "dask":
        refuse_unused(["scheduler"], "without --backend dask")


def parser_jobs(device: str, jobs: int, backend: str = "loky", scheduler: str | None = None) -> int:
    """The parser's worker count: with ``--device cuda`` and no ``--jobs``, ``gpu_workers_per_device`` (8) per
    visible GPU, at most one per core (several processes keep a GPU busy: docs/benchmarks.md, benchmarks/gpu_suite.py figure parse_workers).

    Reads the current click context (was ``--jobs`` on the command line?); workers beyond the GPUs share
    them, at most ``gpu_workers_per_device`` per GPU on this machine (loky): a larger ``--jobs`` is capped
    for the whole command, logged (one pool size for the parse and the stages around it: loky resizes its
    pool when the size changes, and the parse workers it stops would load their models again).

    Raises:
        ConfigError: ``--device cuda`` and torch sees no GPU.
    """
    if device != "cuda":
        return jobs
    import torch

    n_gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n_gpus == 0:
        raise ConfigError("--device cuda but torch sees no GPU")
    from synprep.parse.pipelining import gpu_parse_jobs, gpu_workers_per_device

    if click.get_current_context().get_parameter_source("jobs") == ParameterSource.DEFAULT:
        return max(n_gpus, min(gpu_workers_per_device() * n_gpus, usable_cpus()))
    return gpu_parse_jobs(jobs, "cuda", backend, scheduler)


def input_option(name: str = "--input", help: str = "Input file (default: stdin).") -> Callable[[Any], Any]:
    return click.option("-i", name, "input_path", default="-", show_default=False, metavar="FILE", help=help)


def output_option(name: str = "--output", help: str = "Output file (default: stdout).") -> Callable[[Any], Any]:
    return click.option("-o", name, "output_path", default="-", show_default=False, metavar="FILE", help=help)


#: ``--shard-size`` of ``pipeline``, ``annotate`` and ``shard``
shard_size_option = with_field_options(ShardConfig, only=("shard_size",))
#: ``--ldd-threshold`` of the parser stage and of ``shard``
ldd_threshold_option = with_field_options(ParseConfig, only=("ldd_threshold",))
#: ``--lowercase`` of the commands that read a parse beside BPE text
lowercase_option = click.option(
    "--lowercase", is_flag=True,
    help="The BPE text was lowercased after parsing (the parse has the cased words): compare lowercased.")


def stanza_options(f):
    """Options of the parser stage shared by ``parse``, ``pipeline``, ``annotate`` and ``shard``.

    ``--device``, ``--batch-size``, ``--no-ssplit``, ``--max-words``, ``--ldd-threshold``, ``--cache``,
    ``--no-cache`` (docs/parse.md); the backends' own options (``--stanza-dir``, ...) are
    :func:`backend_plugin_options`.
    """

    @with_field_options(ParseConfig, only=("device",))
    @with_field_options(ParseConfig, only=("batch_size",))
    @with_field_options(ParseConfig, only=("ssplit", "max_words", "ldd_threshold"))
    @click.option("--cache", "cache_path", default=None, metavar="PATH",
                  help="Parse cache (sqlite). Default: $SYNPREP_CACHE or ~/.cache/synprep/parse.sqlite.")
    @click.option("--no-cache", is_flag=True, help="Neither read nor write the parse cache.")
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)

    return wrapper


def parser_choice(extra: tuple[str, ...] = ()):
    """``--parser``, generated from :class:`~synprep.parse.config.ParseConfig`'s ``parser``, its choices the
    registered backends (:data:`synprep.parse.registry.PARSER_BACKENDS`) and ``extra`` (``conllu`` where the
    parses may be imported)."""
    return with_field_options(ParseConfig, only=("parser",), choices={"parser": parser_names() + extra})


#: ``--tokenizer`` of the commands that make words from raw text
tokenizer_option = with_field_options(TextConfig, only=("tokenizer",))
