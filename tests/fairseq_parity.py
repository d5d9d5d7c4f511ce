"""Run by tests/test_fairseq_model.py with the fairseq venv's Python (not collected by pytest).

Builds fairseq's ``--arch synprep_gated_transformer_iwslt_de_en`` from each synprep checkpoint given
(``--synprep-checkpoint``), runs it in eval mode on one batch of every pair of the export's ``train``
split as fairseq's task collates it (left-padded source, the syntax in ``net_input``), and saves
with ``torch.save``, per checkpoint: the pair ids in the batch's order, the encoder output and its
padding mask (the encoder's right-aligned layout), every gated layer's gates, and the log-probability
of every target token under teacher forcing.

Also saves, under ``"configs"``, the synprep configuration (``TrainConfig.to_dict()``) that the model
options resolve to for a few command lines (:data:`OPTIONS`), and the error of a refused one.

    python tests/fairseq_parity.py DEST SRC TGT OUT.pt CHECKPOINT...
"""

import sys

import torch
from fairseq import options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

#: name → model options
OPTIONS = {
    "iwslt": ["--arch", "synprep_gated_transformer_iwslt_de_en"],
    "plain": ["--arch", "synprep_gated_transformer"],
    "pascal": ["--arch", "synprep_gated_transformer_iwslt_de_en", "--synprep-preset", "tiny", "--synprep-system", "pascal",
               "--encoder-layers", "3", "--dropout", "0.2", "--synprep-set", "pascal_sigma=2.0 syntax_heads=[0,1]"],
    "refused": ["--arch", "synprep_gated_transformer_iwslt_de_en", "--synprep-checkpoint", "CK", "--encoder-layers", "3"],
}


def config(dest, src, tgt, model_args):
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [
        dest, "--user-dir", f"{dest}/synprep_fairseq", "--task", "syntax_translation", "-s", src, "-t", tgt, *model_args])
    return convert_namespace_to_omegaconf(args)


dest, src, tgt, out, *checkpoints = sys.argv[1:]
results = {}
for path in checkpoints:
    cfg = config(dest, src, tgt, ["--arch", "synprep_gated_transformer_iwslt_de_en", "--synprep-checkpoint", path])
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train")
    model = task.build_model(cfg.model).eval()
    ds = task.dataset("train")
    batch = ds.collater([ds[i] for i in range(len(ds))])
    net_input = batch["net_input"]
    with torch.no_grad():
        enc = model.encoder(net_input["src_tokens"], net_input["src_lengths"], syntax=net_input["syntax"])["enc"]
        logits, _ = model(**net_input)
        lp = model.get_normalized_probs((logits, None), log_probs=True)
        target_lp = lp.gather(2, batch["target"][:, :, None])[:, :, 0]
    results[path] = {"id": batch["id"], "x": enc.x, "pad": enc.pad, "gates": {str(k): g for k, g in enc.gates.items()},
                     "target": batch["target"], "target_lp": target_lp}
configs = {}
for name, model_args in OPTIONS.items():
    model_cfg = config(dest, src, tgt, [checkpoints[0] if a == "CK" else a for a in model_args]).model
    try:
        configs[name] = sys.modules["synprep_fairseq.model"].synprep_config(model_cfg).to_dict()
    except ValueError as e:
        configs[name] = {"error": str(e)}
results["configs"] = configs
torch.save(results, out)
