"""``synprep info``: what this installation would produce output with.

The versions of synprep and of every library that determines output (the sources of the signature
line: sacremoses for tokenization, subword-nmt for BPE, stanza for parsing, nltk for trees, h5py and
numpy for shards, torch for training, sacrebleu for BLEU) and of the optional ones, the parse
cache's path and size, the GPUs torch sees, and which parsers and models are installed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from synprep.signature import package_version

#: distributions whose versions determine output (tokens, BPE, parses, trees, shards, models, scores)
OUTPUT_LIBRARIES = ("sacremoses", "subword-nmt", "stanza", "nltk", "conllu", "numpy", "h5py", "torch",
                    "sacrebleu", "sentencepiece", "tokenizers", "spacy")
#: optional distributions (pip extras, synprep/extras.py)
OPTIONAL_LIBRARIES = ("matplotlib", "pyarrow", "datasets", "dask", "mkdocs", "treetools")


def _size(path: Path) -> int | None:
    return path.stat().st_size if path.is_file() else None


def _stanza_models() -> dict[str, Any]:
    """Languages and packages in stanza's resource directory ($STANZA_RESOURCES_DIR or stanza's default)."""
    if package_version("stanza") == "?":
        return {"installed": False}
    from stanza.resources.common import DEFAULT_MODEL_DIR

    folder = Path(os.environ.get("STANZA_RESOURCES_DIR") or DEFAULT_MODEL_DIR)
    langs = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    return {"installed": True, "version": package_version("stanza"), "resources": str(folder), "languages": langs}


def _corenlp() -> dict[str, Any]:
    home = os.environ.get("CORENLP_HOME")
    jars = sorted(p.name for p in Path(home).glob("stanford-corenlp-*.jar")) if home and Path(home).is_dir() else []
    return {"installed": bool(jars) and shutil.which("java") is not None, "CORENLP_HOME": home,
            "jars": jars, "java": shutil.which("java")}


def _spacy() -> dict[str, Any]:
    if package_version("spacy") == "?":
        return {"installed": False}
    import spacy.util

    return {"installed": True, "version": package_version("spacy"),
            "pipelines": sorted(spacy.util.get_installed_models())}


#: parser name → what is installed for it (parsers not listed here are reported by name only)
PARSER_PROBES = {"stanza": _stanza_models, "corenlp": _corenlp, "spacy": _spacy}


def _gpus() -> list[dict[str, Any]]:
    import torch

    if not torch.cuda.is_available():
        return []
    return [{"index": i, "name": torch.cuda.get_device_name(i),
             "memory_gib": round(torch.cuda.get_device_properties(i).total_memory / 2**30, 1)}
            for i in range(torch.cuda.device_count())]


def collect() -> dict[str, Any]:
    """Everything ``synprep info`` reports, as JSON-ready values."""
    import synprep
    from synprep.parse.base import PARSERS
    from synprep.parse.cache import default_cache_path

    cache = default_cache_path()
    parsers = {name: PARSER_PROBES.get(name, lambda: {"installed": None})() for name in PARSERS}
    if "spacy" not in parsers and package_version("spacy") != "?":
        parsers["spacy"] = _spacy()
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
