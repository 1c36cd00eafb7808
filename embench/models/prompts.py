"""A model's own prompts: sentence-transformers' ``prompts`` and ``default_prompt_name``, a catalogue row's
prompts per side, and which of them a text gets.

sentence-transformers (``SentenceTransformer.encode``, v3 to v6) prepends a prompt to the text
(``prompt + text``); ``prompt_name`` picks one of ``config_sentence_transformers.json``'s ``prompts``, and
``default_prompt_name`` applies when none is named. A ``Pooling`` module saved with ``include_prompt: false``
leaves the prompt's tokens out of the pooled vector (the length of the prompt tokenised alone, less a
trailing special token: ``Transformer._get_prompt_length``). embench applies them the same way: a prompt
becomes the template ``prompt{text}`` (the ``--prompt`` templates' form) and the excluded tokens leave the
attention mask the pooler reads.

Retrieval and reranking tasks ask for a side (query or document) through the MTEB bridge; the prompt is
found in mteb's order (``mteb.models.abs_encoder.get_prompt_name``): task-side, task, task type-side, task
type, then the side's own names (``query``; ``document``, ``passage``, ``corpus`` as
``SentenceTransformer.encode_document`` tries them). A side the model has no prompt for gets the text as it
is, as ``encode_query``/``encode_document`` give it; a symmetric task with no prompt of its own keeps the
default prompt, as ``encode`` does. Instruction models (``instruction = "Instruct: {instruction}\\nQuery: "``
in a catalogue row, mteb's ``InstructSentenceTransformerModel``) put the task's instruction in the template
for queries and symmetric tasks; documents get none.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..core.errors import EmbenchError
from ..core.paths import within
from ..core.registry import nearest
from .st_folder import read_json

_TEMPLATE = string.Formatter()  # a template's parts: the literal text before its first field is its prefix
SIDE_NAMES = {"query": ("query",), "document": ("document", "passage", "corpus")}


@dataclass
class PromptSet:
    """The named prompts of one model (plain prefixes), its default, and whether pooling leaves them out."""

    prompts: dict[str, str] = field(default_factory=dict)
    default: str | None = None
    exclude_from_pooling: bool = False  # sentence-transformers' Pooling(include_prompt=False)
    instruction: str | None = None  # an instruction model's template with {instruction} (queries, symmetric tasks)
    fixed: bool = False  # --prompt or --prompt-name given: every text gets that prompt, whatever the side
    where: str = "the model"  # named in errors: the file the prompts came from

    def named(self) -> dict[str, str]:
        """The prompts with text (sentence-transformers saves empty ``query``/``document`` entries)."""
        return {k: v for k, v in self.prompts.items() if v}

    def get(self, name: str) -> str:
        """The text of prompt ``name``; an unknown name lists the model's."""
        if name not in self.prompts:
            known = sorted(self.named()) or ["(none: the model declares no prompts)"]
            close = nearest(name, list(self.prompts))
            hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
            raise EmbenchError(f"--prompt-name {name!r}: {self.where} has no prompt of that name.{hint} Its prompts: {', '.join(known)}")
        return self.prompts[name]

    def choose(self, side: str | None = None, task: str | None = None, task_type: str | None = None,
               instruction: str | None = None) -> tuple[str, str] | None:
        """(name, prefix) for a request, ``("", "")`` for the text as it is, or None for the encoder as loaded."""
        if self.fixed:
            return None
        if self.instruction is not None and side != "document":
            if instruction:
                return "instruction", self.instruction.replace("{instruction}", instruction)
            return ("", "") if side else None
        if side is not None and side not in SIDE_NAMES:
            raise EmbenchError(f"unknown prompt side {side!r}; the sides are {', '.join(SIDE_NAMES)}")
        names = [f"{task}-{side}" if task and side else None, task, f"{task_type}-{side}" if task_type and side else None,
                 task_type, *SIDE_NAMES.get(side or "", ())]
        found = next((n for n in names if n and self.prompts.get(n)), None)
        if found is not None:
            return found, self.prompts[found]
        return ("", "") if side else None

    def encoder_for(self, encoder: Any, request: dict[str, str | None]) -> Any:
        """``encoder`` (an ``HFEncoder`` holding this set) under the prompt ``request`` asks for: the same weights,
        another template and cache key (``encoder`` itself when its prompt has that text already)."""
        chosen = self.choose(**request)
        if chosen is None:
            return encoder
        name, prefix = chosen
        if template_of(prefix, encoder.settings.lowercase) == encoder.settings.prompt:  # the same text: the same vectors
            return encoder
        other = encoder.view(encoder.settings.layer, encoder.settings.pooling, bool(encoder.settings.extra.get("final_norm")))
        apply_named(other.settings, self, name, prefix, encoder.tokenizer)
        other.load_spec = None  # a process of its own would load the default prompt
        return other


class PromptViews:
    """``with_prompt`` for :class:`~embench.models.encoder.HFEncoder`: what ``model.encode(prompt_name=, prompt=)``
    (:mod:`embench.encoding.st_arguments`) encodes with, as sentence-transformers applies a prompt given at the call."""

    def with_prompt(self, name: str | None, prefix: str) -> Any:
        """This encoder with ``prefix`` before every text in place of its own prompt (``name``: the model's prompt it
        is, None for one given as text), its tokens left out of pooling where the model's Pooling leaves prompts out
        (for a prompt given as text too, as sentence-transformers counts them); itself when that is its prompt."""
        me: Any = self
        prompts = me.prompt_set or PromptSet(exclude_from_pooling=not _folder_pools_prompts(Path(str(me.source))))
        other = me.view(me.settings.layer, me.settings.pooling, bool(me.settings.extra.get("final_norm")))
        apply_named(other.settings, prompts, name, prefix, me.tokenizer)
        excluded = [s.extra.get("prompt_tokens_excluded") for s in (me.settings, other.settings)]
        if other.settings.prompt == me.settings.prompt and excluded[0] == excluded[1]:  # the same vectors: one cache
            return me
        other.load_spec = None  # a process of its own would load the default prompt
        return other


def _folder_pools_prompts(folder: Path) -> bool:
    """Whether a folder's Pooling keeps a prompt's tokens (``include_prompt``; True for what is no sentence-transformers
    folder): read here for a model without prompts of its own, whose prompt set would have said it."""
    return not (folder / "modules.json").is_file() or _pooling_includes_prompt(folder)


def template_of(prefix: str, lowercase: bool = False) -> str:
    """A plain prefix as a ``{text}`` template (its own braces doubled, so ``str.format`` keeps them); lower-cased
    for a ``do_lower_case`` folder, whose tokenizer sentence-transformers makes lower-case the prompt with the text."""
    prefix = prefix.lower() if lowercase else prefix
    return prefix.replace("{", "{{").replace("}", "}}") + "{text}" if prefix else ""


def read_prompt_set(folder: Path) -> PromptSet | None:
    """The prompts of a sentence-transformers folder (``config_sentence_transformers.json``) and its Pooling
    module's ``include_prompt``; None when it declares none. A malformed entry is an error naming the file."""
    cfg_file = folder / "config_sentence_transformers.json"
    cfg = read_json(cfg_file) if cfg_file.is_file() else {}
    prompts = (cfg.get("prompts") or {}) if isinstance(cfg, dict) else {}
    default = cfg.get("default_prompt_name") if isinstance(cfg, dict) else None
    if not isinstance(prompts, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in prompts.items()):
        raise EmbenchError(f"{cfg_file}: 'prompts' must map prompt names to texts, got {prompts!r}")
    if default is not None and (not isinstance(default, str) or default not in prompts):
        raise EmbenchError(f"{cfg_file}: default_prompt_name {default!r} is not one of its prompts ({', '.join(prompts) or 'none'})")
    if not any(prompts.values()):
        return None
    return PromptSet(dict(prompts), default, not _pooling_includes_prompt(folder), where=str(cfg_file))


def _pooling_includes_prompt(folder: Path) -> bool:
    modules = read_json(folder / "modules.json") if (folder / "modules.json").is_file() else []
    for m in modules if isinstance(modules, list) else []:
        if isinstance(m, dict) and str(m.get("type", "")).endswith("Pooling"):
            cfg_file = within(folder, str(m.get("path", "")), f"{folder / 'modules.json'}: the Pooling path") / "config.json"
            cfg = read_json(cfg_file) if cfg_file.is_file() else {}
            return bool(cfg.get("include_prompt", True)) if isinstance(cfg, dict) else True
    return True


def with_row(found: PromptSet | None, row: Any) -> PromptSet | None:
    """A catalogue row's prompts in place of the folder's, as mteb's ``model_prompts`` replace a model's own set whole
    (``_resolve_model_prompts``: a folder prompt the row lacks is not used). The folder's default stays the default
    where the row has a prompt of its name (sentence-transformers then finds no text for it: no prompt)."""
    if row is None or not (row.prompts or row.instruction):
        return found
    base = found or PromptSet(where=f"the catalogue row of {row.name}")
    prompts = dict(row.prompts) if row.prompts else base.prompts  # a row of an instruction template alone keeps them
    default = row.default_prompt or (base.default if base.default in prompts else None)
    return PromptSet(prompts, default, base.exclude_from_pooling,
                     row.instruction or base.instruction, where=f"{base.where} and the catalogue row of {row.name}")


def prompt_token_count(tokenizer: Any, prefix: str, lowercase: bool, max_length: int) -> int:
    """Tokens of ``prefix`` tokenised alone, less a trailing special token (sentence-transformers'
    ``Transformer._get_prompt_length``): the leading tokens ``include_prompt=False`` leaves out of pooling."""
    ids = tokenizer(prefix.lower() if lowercase else prefix, truncation=True, max_length=max_length)["input_ids"]
    return len(ids) - (1 if ids and ids[-1] in set(getattr(tokenizer, "all_special_ids", ())) else 0)


def exclude_prompt_tokens(mask: torch.Tensor, count: int) -> torch.Tensor:
    """``mask`` with each row's first ``count`` real tokens zeroed, after any left padding (sentence-transformers'
    ``Pooling._exclude_prompt_from_mask``); a copy: the forward pass keeps attending to the prompt."""
    first = mask.to(torch.int32).argmax(dim=1, keepdim=True)  # left padding: the first real token's position
    positions = torch.arange(mask.shape[1], device=mask.device).unsqueeze(0)
    return mask.masked_fill(positions < first + count, 0)


def apply_named(settings: Any, prompts: PromptSet | None, name: str | None, prefix: str, tokenizer: Any) -> None:
    """Put prompt ``name`` (text ``prefix``; "" for none) in encoder ``settings``: the template, and in ``extra``
    (cache key, record) its name and, where pooling leaves it out, its token count."""
    settings.prompt = template_of(prefix, settings.lowercase)
    for key in ("prompt_name", "prompt_tokens_excluded"):
        settings.extra.pop(key, None)
    if name:
        settings.extra["prompt_name"] = name
    if prefix and prompts is not None and prompts.exclude_from_pooling:
        settings.extra["prompt_tokens_excluded"] = prompt_token_count(tokenizer, prefix, settings.lowercase, settings.max_length)


def exclude_template_prefix(settings: Any, prompts: PromptSet | None, folder: Path | None, tokenizer: Any) -> None:
    """A ``--prompt`` template on a folder whose Pooling leaves prompts out (``include_prompt: false``): the tokens of
    its text before ``{text}`` are left out of pooling, as sentence-transformers leaves out ``encode(prompt=PREFIX)``'s
    (``PREFIX{text}`` gives its vectors). Text after ``{text}``, which sentence-transformers has no form for, is pooled
    with the sentence. The template once kept every token, though ``model.encode(prompt=PREFIX)`` left them out."""
    excluded = prompts.exclude_from_pooling if prompts is not None else (
        folder is not None and not _folder_pools_prompts(folder))
    prefix = next(iter(_TEMPLATE.parse(settings.prompt)), ("",))[0] if settings.prompt and excluded else ""
    if prefix:
        settings.extra["prompt_tokens_excluded"] = prompt_token_count(tokenizer, prefix, settings.lowercase, settings.max_length)


def attach_prompts(settings: Any, prompts: PromptSet | None, prompt: str | None, prompt_name: str | None,
                   tokenizer: Any, model: str, folder: Path | None = None) -> PromptSet | None:
    """Settle the prompt every text gets: ``prompt_name`` (one of the model's), else a ``prompt`` template the
    user gave (already in ``settings``; its prefix left out of pooling where the ``folder``'s Pooling leaves prompts
    out), else the model's default prompt; either choice given fixes it for every side and task. Returns the prompt
    set a side or task may pick from later."""
    if prompt is not None and prompt_name is not None:
        raise EmbenchError("give --prompt (a template) or --prompt-name (one of the model's prompts), not both")
    if prompt_name is not None and prompts is None:
        raise EmbenchError(f"--prompt-name {prompt_name!r}: {model} declares no prompts (config_sentence_transformers.json "
                           "'prompts', or a catalogue row: embench list models); give a template with --prompt instead")
    if prompt is not None:
        exclude_template_prefix(settings, prompts, folder, tokenizer)
    if prompts is None:
        return None
    # the prompts a side or task may take: part of the record's identity (a retrieval score depends on them)
    settings.extra["prompts"] = {**prompts.named(), **({"instruction": prompts.instruction} if prompts.instruction else {})}
    name = prompt_name if prompt_name is not None else None if prompt is not None else prompts.default
    if name is not None:
        apply_named(settings, prompts, name, prompts.get(name), tokenizer)
    prompts.fixed = prompt is not None or prompt_name is not None
    return prompts
