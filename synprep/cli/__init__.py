"""The ``synprep`` command line: a thin click layer over the library.

Subcommands are loaded lazily (``synprep tokenize`` never imports torch or stanza). Each
stage's commands live in their own module under :mod:`synprep.cli`; add a command by adding it
to :data:`COMMANDS`.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys

import click

from synprep import __version__
from synprep.errors import SynprepError

#: command name -> "module:attribute" of its click command
COMMANDS: dict[str, str] = {
    # text preparation
    "tokenize": "synprep.cli.text:tokenize_cmd",
    "clean": "synprep.cli.text:clean_cmd",
    "bpe": "synprep.cli.text:bpe_group",
    "spm": "synprep.cli.subword:spm_group",
    "iwslt14": "synprep.cli.recipes:iwslt14_cmd",
    # parsing
    "parse": "synprep.cli.parse:parse_cmd",
    "models": "synprep.cli.parse:models_group",
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
    # whole pipeline
    "pipeline": "synprep.cli.pipeline:pipeline_cmd",
    "annotate": "synprep.cli.pipeline:annotate_cmd",
    # model
    "train": "synprep.cli.train:train_cmd",
    "translate": "synprep.cli.train:translate_cmd",
    "evaluate": "synprep.cli.train:evaluate_cmd",
}


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
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attr = target.split(":")
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name == module:
                return None
            raise
        return getattr(mod, attr, None)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="synprep")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
@click.option("-q", "--quiet", is_flag=True, help="Only errors on stderr.")
def cli(verbose: int, quiet: bool) -> None:
    """Syntax-annotated training data for syntax-aware NMT (see README)."""
    level = logging.ERROR if quiet else (logging.DEBUG if verbose > 1 else logging.INFO)
    logging.basicConfig(level=level, format="synprep: %(message)s", stream=sys.stderr)
    for noisy in ("stanza", "distributed", "urllib3"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning :class:`SynprepError` into ``synprep: error: ...`` (exit 2)."""
    try:
        cli.main(args=argv, prog_name="synprep", standalone_mode=False)
    except SynprepError as e:
        click.echo(f"synprep: error: {e}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
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
    except KeyboardInterrupt:
        click.echo("synprep: interrupted", err=True)
        sys.exit(130)
