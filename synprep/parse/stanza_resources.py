"""stanza's model files for a parser spec, found the way ``stanza.Pipeline`` finds them, and the parser identity.

Cheap: no model is loaded (:func:`resolve_resources` reads ``resources.json`` and stanza's default
configuration; :func:`stanza_identity` hashes the model files). The download hint names the command that
fetches missing models.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass

from synprep.errors import ConfigError
from synprep.langcode import iso_code, wrong_code_message
from synprep.parse.base import PARSE_SCHEMA, ParserSpec, identity_digest, identity_fields
from synprep.parse.stanza_hints import missing_dir_message, quiet_stanza
from synprep.signature import package_version

#: the processors synprep asks for; lemma is the identity (the depparse models were trained on it)
BASE_PROCESSORS = ("tokenize", "pos", "lemma", "depparse")
#: processors whose model files make up the parser identity
MODEL_PROCESSORS = ("pos", "depparse", "constituency")


@dataclass(frozen=True)
class StanzaResources:
    """Where a spec's models are, resolved the way ``stanza.Pipeline`` resolves them.

    Attributes:
        dir: the resource directory.
        lang: the language code after stanza's aliasing.
        package: the package name asked for (``default`` when none was).
        processors: the processors to load, in pipeline order.
        files: ``(config key, path)`` of every model file those processors read.
    """

    dir: str
    lang: str
    package: str
    processors: tuple[str, ...]
    files: tuple[tuple[str, str], ...]

    @property
    def has_constituency(self) -> bool:
        return "constituency" in self.processors


def download_hint(lang: str, model_dir: str, package: str | None, default_dir: str) -> str:
    """The command that fetches ``lang``'s models, and how to parse with them afterwards.

    Downloading goes into ``model_dir`` only when it can be written and is stanza's own (absent, or its
    ``resources.json`` has stanza's top-level ``url``): a folder made by hand (the offline ``synprep``
    package) would lose its ``resources.json``. Then the models go to ``default_dir`` (stanza's own
    folder), and the hint says to parse without ``--stanza-dir``. ``package`` is kept only when stanza
    publishes it for ``lang`` (stanza's ``resources.json`` lists every published package): a hand-made
    folder's package names are its own, and the download is then stanza's default package.
    """
    try:
        with open(os.path.join(model_dir, "resources.json"), encoding="utf-8") as f:
            resources = json.load(f)
        stanzas = isinstance(resources, dict) and "url" in resources
    except FileNotFoundError:
        resources, stanzas = {}, True
    except (OSError, ValueError):
        resources, stanzas = {}, False
    entry = resources.get(lang) if stanzas else None
    if isinstance(entry, dict) and "alias" in entry:
        entry = resources.get(entry["alias"])
    published = stanzas and (not resources or isinstance(entry, dict) and any(
        isinstance(v, dict) and package in v for v in entry.values()))
    existing = model_dir if os.path.isdir(model_dir) else os.path.dirname(os.path.abspath(model_dir))
    here = stanzas and os.access(existing, os.W_OK)
    target = model_dir if here else default_dir
    if not here and os.path.abspath(model_dir) == os.path.abspath(default_dir):
        target = "DIR"  # stanza's own folder cannot be written: one the user can
    cmd = f"synprep models download {lang}" + (f" --dir {target}" if target != default_dir else "")
    after = []
    if package and published:
        cmd += f" --package {package}"
    elif package:
        whose = ("a package of that folder, not one stanza publishes" if not stanzas
                 else f"stanza publishes no package {package!r} for {lang}")
        after.append(f"without --stanza-package {package} ({whose}: the download is stanza's default {lang} package)")
    if target == "DIR":
        after.insert(0, "with --stanza-dir DIR, a folder you can write")
    elif target != model_dir:
        after.insert(0, f"without --stanza-dir (stanza's folder {target})")
    why = "" if here else "; " + model_dir + (" was not filled by stanza's download" if not stanzas
                                               else " cannot be written")
    return f"run: {cmd}" + (f", then parse {' and '.join(after)}" if after else "") + why


def resolve_resources(spec: ParserSpec) -> StanzaResources:
    """Resolve a spec's model files without loading any model (cheap; used for the identity).

    Raises:
        ConfigError: no ``resources.json`` in the directory, the language or package is unknown
            there, or a pos/depparse model file is missing (the message says how to download).
    """
    from stanza.pipeline.core import (
        add_dependencies,
        build_default_config,
        maintain_processor_list,
        process_pipeline_parameters,
    )
    from stanza.resources.common import DEFAULT_MODEL_DIR, load_resources_json

    model_dir = str(spec.dir) if spec.dir else DEFAULT_MODEL_DIR
    package = spec.package or "default"
    if spec.dir and not os.path.isdir(model_dir):
        raise ConfigError(missing_dir_message(model_dir, spec.lang))
    hint = download_hint(spec.lang, model_dir, spec.package, DEFAULT_MODEL_DIR)
    if not os.path.isfile(os.path.join(model_dir, "resources.json")):
        raise ConfigError(f"no stanza resources in {model_dir} (resources.json missing); {hint}")

    def config_for(processors: str) -> tuple[str, dict]:
        lang, mdir, pkg, procs = process_pipeline_parameters(spec.lang, model_dir, package, processors)
        resources = load_resources_json(mdir)
        if lang in resources and "alias" in resources[lang]:
            lang = resources[lang]["alias"]
        if lang not in resources:
            wrong = wrong_code_message(spec.lang)  # -s ger: name the code, never a download of 'ger'
            if wrong is not None:
                raise ConfigError(wrong)
            if iso_code(spec.lang) is None:
                raise ConfigError(f"{spec.lang!r} is not a language code: give its ISO 639-1 code (de, en, ja, ...)")
            raise ConfigError(f"stanza resources in {model_dir} have no language {spec.lang!r}; {hint}")
        with quiet_stanza():  # its "Can not find pos: X ... Ignoring it." per processor: our error says it once
            load_list = maintain_processor_list(resources, lang, pkg, procs, maybe_add_mwt=False)
        load_list = add_dependencies(resources, lang, load_list)
        return lang, build_default_config(resources, lang, mdir, load_list)

    want = list(BASE_PROCESSORS)
    attempts = [want + ["constituency"], want] if spec.constituency else [want]
    for k, procs_try in enumerate(attempts):
        try:
            lang, config = config_for(",".join(procs_try))
            break
        except ConfigError:
            raise
        except Exception as e:  # stanza raises assorted errors for unknown packages/processors
            if k + 1 < len(attempts):
                continue  # no constituency for this language/package: go on without it
            raise ConfigError(f"stanza cannot resolve {spec.lang}/{package} in {model_dir}: {e}; {hint}") from None
    for proc in ("pos", "depparse"):
        path = config.get(f"{proc}_model_path")
        if not path or not os.path.isfile(path):
            where = f" at {path}" if path else f" in {model_dir}"
            raise ConfigError(f"no stanza {proc} model for {spec.lang}/{package}{where}; {hint}")
    procs = list(want)
    if spec.constituency and os.path.isfile(str(config.get("constituency_model_path", ""))):
        procs.append("constituency")
    files = []
    seen = set()
    for proc in MODEL_PROCESSORS:
        if proc not in procs:
            continue
        for key, value in sorted(config.items()):
            if key.startswith(proc + "_") and key.endswith("_path") and isinstance(value, str) and os.path.isfile(value):
                if value not in seen:
                    seen.add(value)
                    files.append((key, value))
    return StanzaResources(model_dir, lang, package, tuple(procs), tuple(files))


@functools.lru_cache(maxsize=64)
def _file_hash(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()[:16]


def file_hash(path: str) -> str:
    """First 16 hex digits of a file's sha256 (memoized per process on path, size and mtime)."""
    st = os.stat(path)
    return _file_hash(os.path.realpath(path), st.st_size, st.st_mtime_ns)


def stanza_identity(spec: ParserSpec) -> str:
    """The parser identity string: the cache key prefix and the signature's parser field.

    ``stanza|VERSION|lang=..|package=..|processors=pos,depparse[,constituency]|ldd=THRESHOLD|
    KEY=SHA ...`` with the sha256 (16 hex digits) of every model file read (pos, depparse,
    constituency and their pretrained vectors / charlms). Two specs with equal identities give
    identical parses. The device kind is appended by :func:`synprep.parse.run.parser_identity`
    (``|device=cuda``; CPU and GPU scores differ slightly).

    Raises:
        ConfigError: see :func:`resolve_resources`.
    """
    res = resolve_resources(spec)
    parts = [
        "stanza",
        package_version("stanza"),
        f"lang={res.lang}",
        f"package={res.package}",
        "processors=" + ",".join(p for p in res.processors if p in MODEL_PROCESSORS),
        f"ldd={spec.ldd_threshold!r}",
        f"schema={PARSE_SCHEMA}",
    ]
    parts += [f"{key}={file_hash(path)}" for key, path in res.files]
    return "|".join(parts)


def stanza_short_identity(identity: str) -> str:
    """Compact form of a stanza identity for the signature line: ``stanza-1.15.0/synprep/en+const#1a2b3c4d``
    (the digest covers the whole identity). Any backend's: :func:`synprep.parse.run.short_identity`.
    """
    fields, kv = identity_fields(identity)
    digest = identity_digest(identity)
    const = "+const" if "constituency" in kv.get("processors", "") else ""
    device = f"@{kv['device']}" if "device" in kv else ""  # a GPU parse: stanza-1.15.0/synprep/de@cuda#...
    return f"{fields[0]}-{fields[1]}/{kv.get('package', '?')}/{kv.get('lang', '?')}{const}{device}#{digest}"
