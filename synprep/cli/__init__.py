"""The ``synprep`` command line: a thin click layer over the library.

Subcommands are loaded lazily (``synprep tokenize`` never imports torch or stanza). Each
stage's commands live in their own module under :mod:`synprep.cli`; add a command by adding it
to :data:`COMMANDS`.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import signal
import sys
import threading

import click

from synprep import __version__
from synprep.errors import SynprepError, message
from synprep.registry import Registry

#: command name -> "module:attribute" of its click command
COMMANDS: Registry[click.Command] = Registry("command", {
    # text preparation
    "tokenize": "synprep.cli.text:tokenize_cmd",
    "clean": "synprep.cli.text:clean_cmd",
    "bpe": "synprep.cli.text:bpe_group",
    "spm": "synprep.cli.subword:spm_group",
    "iwslt14": "synprep.cli.recipes:iwslt14_cmd",
    # parsing
    "parse": "synprep.cli.parse:parse_cmd",
    "models": "synprep.cli.parse:models_group",
    "trees": "synprep.cli.trees:trees_group",
    # syntax features
    "align": "synprep.cli.features:align_cmd",
    "distance": "synprep.cli.features:distance_cmd",
    "mask": "synprep.cli.features:mask_cmd",
    "parents": "synprep.cli.features:parents_cmd",
    "relations": "synprep.cli.features:relations_cmd",
    "ldd": "synprep.cli.features:ldd_cmd",
    # shards
    "shard": "synprep.cli.shards:shard_cmd",
    "check": "synprep.cli.shards:check_cmd",
    "show": "synprep.cli.shards:show_cmd",
    "export": "synprep.cli.export:export_cmd",
    "info": "synprep.cli.info:info_cmd",
    "report": "synprep.cli.report:report_cmd",
    # whole pipeline
    "pipeline": "synprep.cli.pipeline:pipeline_cmd",
    "annotate": "synprep.cli.pipeline:annotate_cmd",
    # model
    "train": "synprep.cli.train:train_cmd",
    "translate": "synprep.cli.train:translate_cmd",
    "evaluate": "synprep.cli.train:evaluate_cmd",
    "average": "synprep.cli.train:average_cmd",
    "compare": "synprep.cli.train:compare_cmd",
})


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._available()))

    def _available(self) -> dict[str, str]:
        out = {}
        for name, target in COMMANDS.items():
            module = target.split(":")[0]
            if importlib.util.find_spec(module) is not None:
                out[name] = target
        return out

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None:
            return cmd
        if cmd_name not in COMMANDS:
            return None
        try:
            cmd = COMMANDS.load(cmd_name)
        except ModuleNotFoundError as e:  # a command module left out of this installation
            if e.name == COMMANDS[cmd_name].split(":")[0]:
                return None
            raise
        _add_log_options(cmd)
        return cmd


def _add_log_options(cmd: click.Command) -> None:
    """Accept ``-v``/``-q`` after the subcommand too (``synprep pipeline ... -v``), on every subcommand."""
    if getattr(cmd, "_synprep_log_options", False):
        return
    cmd._synprep_log_options = True  # type: ignore[attr-defined]
    names = {opt for p in cmd.params for opt in getattr(p, "opts", [])}
    if not names & {"-v", "--verbose", "-q", "--quiet"}:
        cmd.params.extend(_log_options())
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            _add_log_options(sub)


def _log_options() -> list[click.Option]:
    return [
        click.Option(["-v", "--verbose", "sub_verbose"], count=True, expose_value=False, is_eager=True,
                     callback=lambda ctx, p, v: _more_log(verbose=v), help="As `synprep -v`."),
        click.Option(["-q", "--quiet", "sub_quiet"], is_flag=True, expose_value=False, is_eager=True,
                     callback=lambda ctx, p, v: _more_log(quiet=v), help="As `synprep -q`."),
    ]


#: the -v count and -q flag given so far, before and after the subcommand
_LOG = {"verbose": 0, "quiet": False}


def _more_log(verbose: int = 0, quiet: bool = False) -> None:
    _LOG["verbose"] += verbose
    _LOG["quiet"] = bool(_LOG["quiet"] or quiet)
    if verbose or quiet:
        _set_log_level()


def _set_log_level() -> None:
    """synprep's own loggers at INFO (-v/-vv: DEBUG, -q: ERROR); every other library's at WARNING.

    Only the ``synprep`` logger gets the chosen level: a library's INFO lines must not reach the user's
    stderr, as torch's FakeTensor cache statistics did (logged at exit when a SIGTERM landed inside
    ``import torch``, before torch set its loggers to WARNING: after "synprep: terminated (SIGTERM)")."""
    level = logging.ERROR if _LOG["quiet"] else (logging.DEBUG if _LOG["verbose"] > 1 else logging.INFO)
    logging.getLogger().setLevel(max(level, logging.WARNING))
    logging.getLogger("synprep").setLevel(level)
    for noisy in ("stanza", "distributed", "urllib3"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="synprep")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
@click.option("-q", "--quiet", is_flag=True, help="Only errors on stderr.")
def cli(verbose: int, quiet: bool) -> None:
    """Syntax-annotated training data for syntax-aware NMT (see README).

    -v/-q may also follow the subcommand (synprep pipeline ... -v).
    """
    _LOG.update(verbose=verbose, quiet=quiet)
    logging.basicConfig(format="synprep: %(message)s", stream=sys.stderr)
    _set_log_level()


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread: the command stops as on Ctrl-C (atomic writes are
    abandoned, worker pools shut down, locks released; running it again resumes), exit 143."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated()


def _terminated() -> None:
    click.echo("synprep: terminated (SIGTERM)", err=True)
    sys.exit(143)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning :class:`SynprepError` into ``synprep: error: ...`` (exit 2).

    SIGTERM stops a command like Ctrl-C (:class:`Terminated`, exit 143); a nesting too deep for a
    reader (``RecursionError``) is a one-line error (exit 2).
    """
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        _run(argv)
        return
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        _run(argv)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)  # called in-process (tests, scripts): leave theirs in place


def _run(argv: list[str] | None) -> None:
    try:
        cli.main(args=argv, prog_name="synprep", standalone_mode=False)
    except SynprepError as e:  # exit 2: bad input or options; 1: an EnvironmentProblem (synprep.errors)
        click.echo(f"synprep: error: {message(e)}", err=True)
        sys.exit(e.exit_status)
    except click.exceptions.Abort as e:
        if isinstance(e.__cause__, Terminated):  # click turns KeyboardInterrupt into Abort
            _terminated()
        click.echo("synprep: aborted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except BrokenPipeError:
        # downstream closed the pipe (| head): not an error
        sys.stderr.close()
        sys.exit(0)
    except OSError as e:
        # a full disk (ENOSPC), a permission problem, ...: name the file, no traceback
        where = f"{e.filename}: " if e.filename else ""
        click.echo(f"synprep: error: {where}{e.strerror or e}", err=True)
        sys.exit(1)
    except RecursionError:  # a last resort: readers bound their nesting themselves (docs/hardening.md)
        click.echo("synprep: error: the input nests too deeply to be read (Python's recursion limit)", err=True)
        sys.exit(2)
    except Terminated:
        _terminated()
    except KeyboardInterrupt:
        click.echo("synprep: interrupted", err=True)
        sys.exit(130)
