"""Run by tests/test_export_fairseq.py with the fairseq venv's Python (not collected by pytest).

Loads an export with fairseq's own task machinery (``--user-dir DEST/synprep_fairseq --task
syntax_translation``) and writes what fairseq reads as JSON: every item's source/target ids and
syntax fields, and one collated batch of all items.

    python tests/fairseq_read.py DEST SRC TGT SPLIT OUT.json
"""

import json
import sys

from fairseq import options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

dest, src, tgt, split, out = sys.argv[1:6]
parser = options.get_training_parser()
args = options.parse_args_and_arch(parser, [dest, "--user-dir", f"{dest}/synprep_fairseq", "--task",
                                            "syntax_translation", "-s", src, "-t", tgt, "--arch", "transformer"])
cfg = convert_namespace_to_omegaconf(args)
task = tasks.setup_task(cfg.task)
task.load_dataset(split)
ds = task.dataset(split)
items = [{"source": ds[i]["source"].tolist(), "target": ds[i]["target"].tolist(),
          "syntax": {k: v.tolist() for k, v in ds[i]["syntax"].items()}} for i in range(len(ds))]
batch = ds.collater([ds[i] for i in range(len(ds))])
json.dump({"items": items, "dict_size": len(task.src_dict), "pad": task.src_dict.pad(), "eos": task.src_dict.eos(),
           "batch": {"id": batch["id"].tolist(), "src_tokens": batch["net_input"]["src_tokens"].tolist(),
                     "syntax": {k: v.tolist() for k, v in batch["syntax"].items()},
                     "dtypes": {k: str(v.dtype) for k, v in batch["syntax"].items()}}},
          open(out, "w"))
