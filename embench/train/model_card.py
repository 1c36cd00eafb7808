"""The model card (``README.md``) of a kept checkpoint, from what the run itself knows.

Everything in it comes from the run: the recipe and the table and script it follows (``RECIPES``), the
method and its paper, the training data (a file's name and sha256; a keyword of the data root as such)
and the examples' fingerprint, the options, the kept step, the scores the trainer's evaluation gave at
that step, and the embench version and commit. The front matter is Hugging Face's model-card metadata
(``huggingface_hub.ModelCardData``), so the hub shows the folder as a sentence-transformers model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.atomic import write_text
from .score_text import is_analysis_metric, score_text

# the papers behind the methods: title, authors, and where to find it (as the paper notes record them)
PAPERS = {
    "simcse": ("SimCSE: Simple Contrastive Learning of Sentence Embeddings", "Tianyu Gao, Xingcheng Yao, Danqi Chen",
               "EMNLP 2021, https://arxiv.org/abs/2104.08821 (code: https://github.com/princeton-nlp/SimCSE)"),
    "crop": ("Cropping outperforms dropout as an augmentation strategy for self-supervised training of text embeddings",
             "Rita González-Márquez, Philipp Berens, Dmitry Kobak",
             "https://openreview.net/forum?id=gVRsIh9a7W (code: https://github.com/berenslab/text-embed-augm)"),
    "multicsr": ("Large Language Models can Contrastively Refine their Generation for Better Sentence Representation "
                 "Learning", "Huiming Wang, Zhaodonghui Li, Liying Cheng, De Wen Soh, Lidong Bing",
                 "code: https://github.com/Circle-Ming/MultiCSR"),
    "jtcse": ("JTCSE: Joint Tensor-Modulus Constraints and Cross-Attention for Unsupervised Contrastive Learning of "
              "Sentence Embeddings", "Tianyu Zong, Hongzhu Yi, Bingkang Shi, Yuanxiang Wang, Jungang Xu",
              "https://arxiv.org/abs/2505.02366 (code: https://github.com/tianyuzong/JTCSE)"),
    "bellm": ("BeLLM: Backward Dependency Enhanced Large Language Model for Sentence Embeddings", "Xianming Li, Jing Li",
              "code: https://github.com/4AI/BeLLM"),
}
METHOD_PAPERS = {"unsup-simcse": ("simcse",), "sup-simcse": ("simcse",), "crop": ("crop",), "dropout": ("crop",),
                 "jtcse": ("jtcse",), "distill": ("jtcse",), "bellm": ("bellm",)}
RECIPE_PAPERS = {"multicsr": ("multicsr", "simcse"), "multicsr-code": ("multicsr", "simcse")}
# the options a reader of the card needs to repeat the run, in this order (all of them: embench_training.json)
SHOWN = ("batch_size", "grad_accumulation", "lr", "optimizer", "lr_schedule", "warmup_ratio", "warmup_steps", "epochs",
         "max_steps", "max_length", "max_examples", "seed", "precision", "prompt", "lora_r", "freeze_layers")


def write_model_card(folder: Path, *, final: Path, meta: dict[str, Any], pooling: str, max_length: int,
                     st_modules: list[str] | None, why_not_st: str | None, prompt_prefix: str | None,
                     adapter_of: str | None = None) -> Path:
    """Write ``folder/README.md``; ``final`` is where the folder will live (its usage lines name it). ``adapter_of``: the
    folder is a LoRA adapter on that base (BeLLM's kept checkpoint), whose card replaces peft's blank template."""
    from huggingface_hub import ModelCardData

    from ..evaluation.provenance import software

    # embench's writers build X.tmp and rename it to X: the lines that name the folder name X
    final = _where(Path(*(part.removesuffix(".tmp") for part in Path(final).parts)))
    sw = software()
    method = str(meta.get("method") or "")
    data = ModelCardData(library_name="sentence-transformers" if st_modules else "transformers",
                         pipeline_tag="sentence-similarity" if st_modules else "feature-extraction",
                         base_model=_hub_id(meta.get("base_model")),
                         tags=["embench", "sentence-embeddings", *(["sentence-transformers"] if st_modules else []),
                               *([method] if method else [])])
    commit = f" (commit {sw['embench_commit']})" if sw.get("embench_commit") else ""
    lines = [f"# {final.name}: {method or 'an embench model'}", "",
             f"A sentence-embedding model trained with embench {sw['embench']}{commit}: `embench train --method {method}"
             + (f" --recipe {meta['recipe']}" if meta.get("recipe") else "") + f"` from `{portable(meta.get('base_model'))}`"
             + (" (its configuration, randomly initialised)" if meta.get("from_scratch") else "") + ".", ""]
    lines += _recipe(meta, method) + _training(meta, pooling, max_length) + _evaluation(meta, final)
    lines += (_adapter_usage(final, adapter_of) if adapter_of else _usage(final, meta, st_modules, why_not_st, prompt_prefix))
    lines += _citation(meta, method)
    text = "---\n" + data.to_yaml() + "\n---\n\n" + "\n".join(lines).rstrip() + "\n"
    path = Path(folder) / "README.md"
    write_text(path, text)  # atomically: a full disk leaves no torn card
    return path


def portable(name: Any) -> Any:
    """A local model folder or data file by its own name, a hub id or data keyword as it is: the card travels with
    the folder, where ``/tmp/x/tiny-bert`` names nothing (``embench_training.json`` keeps the paths the run was given)."""
    if isinstance(name, (list, tuple)):
        return [portable(n) for n in name]
    if not isinstance(name, str) or not name:
        return name
    path = Path(name).expanduser()
    local = path.is_absolute() or name.startswith((".", "~")) or path.exists()
    return (path.resolve().name or name) if local else name


def _where(final: Path) -> Path:
    """How the card's usage lines name the folder: as given when relative (``runs/sel/best``), else a placeholder
    (``path/to/best``), not the machine's path."""
    return final if not final.is_absolute() and ".." not in final.parts else Path("path/to") / final.name


def _hub_id(name: Any) -> str | None:
    """The base model as a hub id for the front matter (a local folder is named in the text only)."""
    from ..models.aliases import HUB_IDS

    if not isinstance(name, str) or not name or Path(name).expanduser().exists():
        return HUB_IDS.get(name) if isinstance(name, str) else None
    return HUB_IDS.get(name, name)


def _recipe(meta: dict[str, Any], method: str) -> list[str]:
    from .methods import METHODS
    from .recipes import RECIPES

    out = ["## Recipe", ""]
    recipe = meta.get("recipe")
    if recipe:
        r = RECIPES.get(recipe)
        out += [f"- recipe `{r.name}`: {r.description}", f"- follows: {r.cites}"] + _recipe_table(r, meta)
    else:
        out.append("- no recipe: the method's defaults and the run's own options (below)")
    if method and method in METHODS:
        out.append(f"- method `{method}`: {METHODS.description(method)}")
    return [*out, ""]


def _recipe_table(recipe: Any, meta: dict[str, Any]) -> list[str]:
    """Each option the recipe sets: this run's value beside the recipe's and where the recipe's comes from
    (a run that departs from its recipe says where, not only that it named one)."""
    if not recipe.sources:
        return []
    cfg = meta.get("config") or {}
    run = {**cfg, **(cfg.get("method_options") or {})}
    run.update({k: portable(run.get(k)) for k in ("model", "data")})  # a local folder or file by its name
    rows = ["", "| option | this run | the recipe's | source |", "|---|---|---|---|"]
    for option, value in recipe.values.items():
        rows.append(f"| `{option}` | {_cell(run.get(option))} | {_cell(value)} | {_cell(recipe.sources[option], code=False)} |")
    return rows


def _cell(value: Any, code: bool = True) -> str:
    """A value in a markdown table cell: its pipes escaped, in code font unless it is prose; none is a dash (crop's
    recipe names no model: ``None`` read as a model's name)."""
    if value is None:
        return "—"
    text = str(value).replace("|", "\\|").replace("\n", " ")
    return f"`{text}`" if code else text


def _papers(recipe: str | None, method: str) -> tuple[str, ...]:
    return RECIPE_PAPERS.get(recipe or "", ()) or METHOD_PAPERS.get(method, ())


def _training(meta: dict[str, Any], pooling: str, max_length: int) -> list[str]:
    from ..data.root import file_sha256

    cfg = meta.get("config") or {}
    total = meta.get("total_steps")
    # a --save-every checkpoint is saved at its step, not kept as the best: "kept" would name the wrong step
    out = ["## Training", "", f"- {'saved' if meta.get('series') else 'kept'}: step {meta.get('step')}"
           + (f" of {total}" if total else "") + (f": {meta['selected']}" if meta.get("selected") else ""),
           f"- pooling: `{pooling}`; maximum length: {max_length} tokens"]
    options = {k: cfg[k] for k in SHOWN if cfg.get(k) not in (None, "", 0, False, [])}
    options.update({k: v for k, v in (cfg.get("method_options") or {}).items() if v not in (None, "", [], {})})
    if options:
        out.append("- options: " + ", ".join(f"{k}={v}" for k, v in options.items()))
    specs = meta.get("data") or []
    if specs:
        out += ["", "| training data | source | sha256 |", "|---|---|---|"]
        for spec in specs:
            p = Path(spec).expanduser()
            if p.is_file():  # by its name: the sha256 says which file it was
                out.append(f"| `{p.name}` | a file | `{file_sha256(p)}` |")
            else:  # corpora, snli, 20newsgroups: files of the data root, checked by `embench data check`
                out.append(f"| `{spec}` | the data root's `{spec}` files | (see `embench data check`) |")
    if meta.get("examples") is not None:
        out.append(f"\n{meta['examples']} training examples (sha256 of the examples in order, first 16 digits: "
                   f"`{meta.get('data_sha256')}`).")
    return [*out, ""]


def _evaluation(meta: dict[str, Any], final: Path) -> list[str]:
    scores = meta.get("scores") or {}
    if not scores:  # --eval-steps 0 (the last step kept), or a checkpoint of the --save-every series
        why = meta.get("selected") or "a checkpoint of the series, saved without an evaluation"
        return ["## Evaluation", "", f"No evaluation score at this step ({why}); `embench run --model {final}` "
                "evaluates it.", ""]
    chosen = f", the best on {meta['selected_on']}" if meta.get("selected_on") else ""
    analyses = (meta.get("config") or {}).get("eval_analyses") or []
    kept = "" if meta.get("series") else "the kept "
    gives = "the number `embench run` gives at the evaluation's maximum length"
    whose = ""
    if meta.get("twin_of"):  # a JTCSE tower: the run evaluates the twin (both towers summed), never a tower alone
        gives = f"the number `embench run --model {final.parent}` gives for the twin at the evaluation's maximum length"
        whose = (f" These are the twin's scores (this tower's vectors plus the other tower's, `{meta['twin_of']}`), "
                 f"not this tower's own: `embench run --model {final}` scores this tower alone.")
    out = ["## Evaluation", "", f"Scores of embench's evaluation at {kept}step {meta.get('step')}{chosen}, as the "
           f"training log prints them: a task's x100, {gives}; an analysis' as it is.{whose}", "", "| metric | score |", "|---|---|"]
    out += [f"| {name} | {score_text(float(v), is_analysis_metric(name, analyses))} |" for name, v in scores.items()
            if isinstance(v, (int, float))]
    return [*out, ""]


def _usage(final: Path, meta: dict[str, Any], st_modules: list[str] | None, why_not_st: str | None,
           prefix: str | None) -> list[str]:
    out = ["## Use", "", "```python"]
    if st_modules:
        out += ["from sentence_transformers import SentenceTransformer", "",
                f'model = SentenceTransformer("{final}")  # modules: {" -> ".join(st_modules)}']
        out.append("vectors = model.encode(texts)" + ("  # the training prompt is its default prompt" if prefix else ""))
    out += ["", "import embench", "", f'vectors = embench.load_model("{final}").encode(texts)'
            + ("  # this tower alone, with LayerNorms (the twin: the parent folder)" if meta.get("remove_layernorm") else ""),
            "```", ""]
    if not st_modules:
        # AutoModel runs every layer causally: bidirectional last layers are embench's to apply (max diff 0.2 otherwise)
        plain = ("use embench: transformers' `AutoModel` runs every layer causally, so its vectors are not these either"
                 if meta.get("bidirectional_last") else "use embench, or transformers' `AutoModel` with the pooling above")
        if meta.get("remove_layernorm"):  # loaded alone by anything (embench too), the tower gets LayerNorms back
            plain = (f"nothing that loads this folder alone gives the twin's member: `embench run --model "
                     f"{final.parent}` loads the twin, LayerNorms removed")
        out += [f"sentence-transformers cannot give this model's vectors: {why_not_st}. `SentenceTransformer(path)` "
                f"would load the folder with mean pooling; {plain}.", ""]
    out += ["The folder is a Hugging Face model folder (`AutoModel.from_pretrained` reads its root)"
            + (", a sentence-transformers folder (`modules.json`, `config_sentence_transformers.json`)" if st_modules else "")
            + " and an embench checkpoint (`embench_training.json`: everything the run was given).", ""]
    return out


def _adapter_usage(final: Path, base: str) -> list[str]:
    return ["## Use", "", "```python", "import embench", "",
            f'vectors = embench.load_model("{final}").encode(texts)  # the base, the adapter, prompt and attention', "```", "",
            f"The folder is a LoRA adapter (peft's `adapter_config.json` and `adapter_model.safetensors`) on `{portable(base)}`; "
            "`embench_adapter.json` names that base, the prompt, the pooling and the bidirectional last layers, so "
            f"`embench run --model {final}` (or `--model BASE --adapter {final}`) loads them all. peft's "
            "`PeftModel.from_pretrained(AutoModel.from_pretrained(BASE), path)` loads the weights, but transformers runs "
            "every layer causally, and sentence-transformers cannot load the folder.", ""]


def _citation(meta: dict[str, Any], method: str) -> list[str]:
    keys = _papers(meta.get("recipe"), method)
    if not keys:
        return []
    return ["## Citation", "", "The method's paper:" if len(keys) == 1 else "The method's papers:", "",
            *(f"- {PAPERS[k][1]}. {PAPERS[k][0]}. {PAPERS[k][2]}." for k in keys), ""]
