"""The fairseq model plugin of ``export --format fairseq``: synprep's own model modules, copied into DEST.

``DEST/synprep_fairseq/`` (the ``--user-dir``) gets, besides the task (:mod:`synprep.export.fairseq_plugin`):

```
model.py                  --arch synprep_gated_transformer_iwslt_de_en, synprep_gated_transformer
                          (synprep/export/fairseq_arch.py)
vendor/synprep/…          the modules of synprep's model, unchanged: synprep.train.model and what it
                          imports (attention, gate, masks, every syntax source, the config and its presets)
```

There is one source of the maths: the fairseq model builds :class:`synprep.train.model.Seq2Seq` from the
copied modules, so its attention, masks and gate are synprep's, and a synprep checkpoint's weights load
into it. Which modules travel is derived from the imports of :data:`ROOTS` (an AST walk over
``synprep/``, lazy imports included); :func:`vendored_modules` refuses a module whose imports reach a
package other than the standard library, torch and numpy, so the plugin needs only fairseq, torch and
numpy.
"""

from __future__ import annotations

import ast
import shutil
import sys
from importlib import resources
from pathlib import Path

from synprep.textio import atomic_write

#: the plugin's model module (in DEST/synprep_fairseq)
MODEL_FILE = "model.py"
#: the folder of the copied synprep modules (in DEST/synprep_fairseq)
VENDOR_DIR = "vendor"
#: the modules the fairseq model imports; the rest are found from their imports
ROOTS = ("synprep.train.model", "synprep.train.config", "synprep.train.batch", "synprep.types",
         "synprep.train.sources.slr", "synprep.train.sources.pascal", "synprep.train.sources.ldd",
         "synprep.train.sources.ldd_parent", "synprep.train.sources.lisa", "synprep.train.sources.sla",
         "synprep.train.sources.set")
#: packages a copied module may import besides synprep's own (and the standard library)
ALLOWED = frozenset({"torch", "numpy"})
#: packages a copied module may import inside a function the model never calls (synprep.tree's tree builders)
LAZY_ALLOWED = frozenset({"nltk"})


def _package_root() -> Path:
    return Path(str(resources.files("synprep")))


def _module_file(root: Path, module: str) -> Path | None:
    rel = Path(*module.split(".")[1:])
    for cand in (root / rel / "__init__.py", (root / rel).with_suffix(".py")):
        if cand.is_file():
            return cand
    return None


def _imports(path: Path) -> list[tuple[str, bool]]:
    """Every ``import``/``from … import`` of ``path``: (module or module.name, whether it is lazy: inside a
    function or under ``if TYPE_CHECKING:``)."""
    out: list[tuple[str, bool]] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        if isinstance(node, ast.Import):
            out.extend((a.name, lazy) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, lazy))
            out.extend((f"{node.module}.{a.name}", lazy) for a in node.names)
        inner = lazy or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or (
            isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return out


def vendored_modules() -> dict[str, Path]:
    """synprep's modules the fairseq model needs: :data:`ROOTS`, their packages and everything they import.

    Returns:
        module name → its file in the installed synprep, sorted by name.

    Raises:
        RuntimeError: a module imports a package outside the standard library and :data:`ALLOWED`
            (the plugin would need more than fairseq, torch and numpy), other than a function's import of
            one of :data:`LAZY_ALLOWED`.
    """
    root = _package_root()
    found: dict[str, Path] = {}
    todo = list(ROOTS)
    while todo:
        mod = todo.pop()
        if mod in found:
            continue
        path = _module_file(root, mod)
        if path is None:  # ``from synprep.x import name``: a name, not a module
            continue
        found[mod] = path
        parts = mod.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        for name, lazy in _imports(path):
            top = name.split(".")[0]
            if top == "synprep":
                todo.append(name)
            elif top not in sys.stdlib_module_names | ALLOWED | {"__future__"} and not (lazy and top in LAZY_ALLOWED):
                raise RuntimeError(f"{path}: imports {name}, which the fairseq plugin cannot have")
    return dict(sorted(found.items()))


def write_model_plugin(plugin_dir: Path) -> None:
    """Write ``model.py`` and the copied synprep modules (with the presets) into ``plugin_dir``, replacing
    its ``vendor/`` (no module of an older synprep stays; a link there is removed, never followed)."""
    root = _package_root()
    vendor = plugin_dir / VENDOR_DIR
    if vendor.is_symlink():
        vendor.unlink()
    elif vendor.exists():
        shutil.rmtree(vendor)
    for path in vendored_modules().values():
        with atomic_write(vendor / "synprep" / path.relative_to(root), "wb") as f:
            f.write(path.read_bytes())
    presets = resources.files("synprep.presets")
    for res in presets.iterdir():
        if res.name.endswith((".json", ".py")):
            with atomic_write(vendor / "synprep" / "presets" / res.name, "wb") as f:
                f.write(res.read_bytes())
    arch = resources.files("synprep.export").joinpath("fairseq_arch.py").read_bytes()
    with atomic_write(plugin_dir / MODEL_FILE, "wb") as f:
        f.write(arch)
