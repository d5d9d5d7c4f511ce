"""``synprep info``: what this installation would produce output with.

The versions of synprep and of every library that determines output (the sources of the signature
line: sacremoses for tokenization, subword-nmt for BPE, stanza for parsing, nltk for trees, h5py and
numpy for shards, torch for training, sacrebleu for BLEU) and of the optional ones, the parse
cache's path and size, the GPUs torch sees, and which parsers and models are installed (each parser
backend's :meth:`~synprep.parse.base.ParserBackend.probe`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import synprep
from synprep.signature import package_version

#: distributions whose versions determine output (tokens, BPE, parses, trees, shards, models, scores)
OUTPUT_LIBRARIES = ("sacremoses", "subword-nmt", "stanza", "nltk", "conllu", "numpy", "h5py", "torch",
                    "sacrebleu", "sentencepiece", "tokenizers", "spacy")
#: optional distributions (pip extras, synprep/extras.py)
OPTIONAL_LIBRARIES = ("matplotlib", "pyarrow", "datasets", "dask", "mkdocs", "treetools")


def _size(path: Path) -> int | None:
    return path.stat().st_size if path.is_file() else None


def _gpus() -> list[dict[str, Any]]:
    import torch

    if not torch.cuda.is_available():
        return []
    return [{"index": i, "name": torch.cuda.get_device_name(i),
             "memory_gib": round(torch.cuda.get_device_properties(i).total_memory / 2**30, 1)}
            for i in range(torch.cuda.device_count())]


def collect() -> dict[str, Any]:
    """Everything ``synprep info`` reports, as JSON-ready values."""
    # imported here: loads conllu and orjson, not needed to import this module
    from synprep.parse.base import backend_class
    from synprep.parse.cache import default_cache_path
    from synprep.parse.registry import parser_names

    cache = default_cache_path()
    parsers = {name: backend_class(name).probe() for name in parser_names()}
    return {
        "synprep": synprep.__version__,
        "libraries": {name: package_version(name) for name in OUTPUT_LIBRARIES},
        "optional": {name: package_version(name) for name in OPTIONAL_LIBRARIES},
        "parse_cache": {"path": str(cache), "bytes": _size(cache)},
        "gpus": _gpus(),
        "parsers": parsers,
    }


def format_info(info: dict[str, Any]) -> str:
    """The text ``synprep info`` prints (one ``key: value`` per line, ``?`` = not installed)."""
    out = [f"synprep {info['synprep']}", "libraries that determine output:"]
    out += [f"  {k}: {v}" for k, v in info["libraries"].items()]
    out += ["optional libraries (pip extras):"] + [f"  {k}: {v}" for k, v in info["optional"].items()]
    c = info["parse_cache"]
    size = "absent" if c["bytes"] is None else f"{c['bytes'] / 2**20:.1f} MiB"
    out += [f"parse cache: {c['path']} ({size})"]
    gpus = info["gpus"]
    out += ["GPUs: " + ("; ".join(f"{g['index']}: {g['name']} ({g['memory_gib']} GiB)" for g in gpus) or "none visible")]
    out += ["parsers:"]
    for name, p in info["parsers"].items():
        detail = {k: v for k, v in p.items() if k != "installed"}
        state = {True: "installed", False: "not installed", None: "?"}[p.get("installed")]
        out += [f"  {name}: {state}" + (f" {detail}" if detail else "")]
    return "\n".join(out) + "\n"
