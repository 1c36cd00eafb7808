"""Model families: one entry says how a kind of checkpoint is prompted, pooled, padded and loaded.

The model of this file is mteb's ``ModelMeta(loader=partial(..., instruction_template=...,
pooling_method="lasttoken", torch_dtype=...))`` (``mteb/models/e5_instruct.py``): everything that
differs between families lives in one row, not in ``if model_type == ...`` branches.

| family | detected by | pooling | padding | dtype (GPU) | attention |
|---|---|---|---|---|---|
| ``sentence-transformers`` | ``modules.json`` in the folder (of an encoder) | the folder's own | right | fp32 | model default |
| ``causal-lm`` | a decoder config (Llama, Mistral, Qwen, ...; in a sentence-transformers folder too) | ``last_token`` (a sentence-transformers folder's own) | left | bf16 | sdpa |
| ``gguf`` | a ``.gguf`` file | ``last_token`` | left | bf16 | model default |
| ``encoder`` | anything else (BERT, RoBERTa, MPNet, ...) | ``cls`` (SimCSE's) | right | fp32 | model default |

A family's ``patch`` hook receives the loaded model and may change it (BeLLM's bidirectional last
layers will be one); it runs before any text is encoded, and a failure names the family and the
model. New families register with ``FAMILIES.add(name, Family(...))`` or a lazy
``"package.module:attr"`` entry, and are chosen explicitly with ``load_model(..., family=NAME)``.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.code_identity import outside_code
from ..core.errors import EmbenchError
from ..core.plugins import instance_of
from ..core.registry import Registry

DECODER_TYPES = {"llama", "mistral", "qwen2", "qwen3", "gpt2", "gpt_neox", "phi", "phi3", "gemma", "gemma2", "gemma3_text",
                 "opt", "falcon", "smollm3", "olmo", "olmo2"}
FIRST_TOKEN_POOLERS = ("cls", "cls_before_pooler")
Patch = Callable[[Any], Any]  # (loaded model) -> the model to use (usually the same object, changed in place)


@dataclass(frozen=True)
class Family:
    """How one kind of checkpoint is prompted, pooled, padded and loaded."""

    name: str
    description: str
    pooling: str | None = None  # default pooler when the checkpoint names none
    prompt: str = ""  # default prompt template (with {text}); empty = the text as it is
    padding_side: str = "right"
    gpu_dtype: str = "fp32"  # default inference dtype on a GPU (CPU inference is fp32)
    attn_implementation: str | None = None  # passed to from_pretrained when set
    patch: Patch | str | None = None  # hook on the loaded model, or a lazy "module:attr" path
    causal: bool = False  # causal attention: the first token sees nothing of the text

    def training_pooling(self, asked: str) -> str:
        """The pooler to train with: first-token poolers (a method's default for encoders, e.g.
        SimCSE's [CLS]) see nothing of the text in a causal model, which then takes its family's."""
        return self.pooling if self.causal and self.pooling and asked in FIRST_TOKEN_POOLERS else asked

    def default_dtype(self, device: str) -> str:
        return self.gpu_dtype if device.startswith("cuda") else "fp32"

    def load_kwargs(self) -> dict[str, Any]:
        return {"attn_implementation": self.attn_implementation} if self.attn_implementation else {}

    def apply_patch(self, model: Any, model_name: str) -> Any:
        """Run the family's hook on ``model``; any failure names the family and the model."""
        if self.patch is None:
            return model
        from ..core.registry import import_path, is_lazy

        hook = import_path(self.patch) if is_lazy(self.patch) else self.patch
        try:
            patched = hook(model)
        except Exception as e:
            raise EmbenchError(
                f"model family {self.name!r}: its patch hook failed on {model_name} ({type(e).__name__}: {e}); "
                "nothing was encoded or stored"
            ) from e
        return model if patched is None else patched


FAMILIES: Registry[Family] = Registry("model family", plugins="embench.families",
                                     expects=instance_of("embench.models.families:Family", "an embench.models.families.Family"))
FAMILIES.add("encoder", Family("encoder", "BERT-like bidirectional encoders (BERT, RoBERTa, MPNet, MiniLM, ...)", pooling="cls"))
FAMILIES.add("sentence-transformers", Family("sentence-transformers",
                                             "sentence-transformers folders: their own pooling, Dense, Normalize"))
FAMILIES.add("causal-lm", Family("causal-lm", "decoder LLMs (Llama, Mistral, Qwen, ...): last token, left padding, bf16 on GPUs",
                                 pooling="last_token", padding_side="left", gpu_dtype="bf16", attn_implementation="sdpa",
                                 causal=True),
             "llm", "decoder")
FAMILIES.add("gguf", Family("gguf", "GGUF files of decoder LLMs (dequantised by transformers on load)",
                            pooling="last_token", padding_side="left", gpu_dtype="bf16", causal=True))


def num_layers(cfg: Any) -> int:
    """The number of transformer layers a model config declares."""
    for attr in ("num_hidden_layers", "n_layer", "num_layers"):
        n = getattr(cfg, attr, None)
        if isinstance(n, int):
            return n
    text_cfg = getattr(cfg, "text_config", None)
    if text_cfg is not None and isinstance(getattr(text_cfg, "num_hidden_layers", None), int):
        return text_cfg.num_hidden_layers
    raise EmbenchError(f"cannot tell how many layers a {type(cfg).__name__} model has")


def is_decoder(config: Any) -> bool:
    return getattr(config, "model_type", "") in DECODER_TYPES or bool(getattr(config, "is_decoder", False))


def detect(config: Any, folder: Path | None = None, gguf_file: str | None = None, st_folder: bool = False) -> Family:
    """The family of a checkpoint: GGUF file, decoder LLM, sentence-transformers folder, else encoder.

    A sentence-transformers folder of a decoder (e5-mistral, gte-Qwen2, one embench trained from a Llama) is a
    causal LM (left padding, bf16 on a GPU, the bidirectional options); the folder's own pooling, Dense, Normalize,
    prompts and maximum length are read from it whatever its family (the loader's ``st_cfg``)."""
    if gguf_file:
        return FAMILIES.get("gguf")
    if is_decoder(config):
        return FAMILIES.get("causal-lm")
    if st_folder:
        return FAMILIES.get("sentence-transformers")
    return FAMILIES.get("encoder")


# Named prompt templates (``--prompt NAME``); the template itself is what the cache key and records hold.
PROMPTS = {
    # BeLLM (Li & Li, 2024, Sec. 3.2): the last token predicts the sentence's "representative word"
    "bellm": 'The representative word for {text} is:"',
    # the BeLLM authors' training script (4AI/BeLLM train.py, --prompt_template's default) and eval_sts.py
    "bellm-code": 'The representative word for sentence {text} is:"',
    # the BeLLM authors' evaluation (4AI/BeLLM eval_sts.py): that prompt, each sentence ending in "." first
    "bellm-eval": 'The representative word for sentence {text:period} is:"',
    # PromptEOL (Jiang et al., 2023), which BeLLM builds on
    "prompteol": 'This sentence : "{text}" means in one word:"',
    "none": "",  # the text as it is
}


def end_with_period(text: str) -> str:
    """``{text:period}``: the sentence ending in "." as the BeLLM authors' evaluation writes it (4AI/BeLLM
    eval_sts.py, after PromptEOL's): "." appended unless it ends in . ? " or ', and a final "?" made "."."""
    if text and text[-1] not in ".?\"'":
        text += "."
    return text[:-1] + "." if text.endswith("?") else text


class _PromptFormatter(string.Formatter):
    """``str.format`` with one form of the text besides ``{text}``: ``{text:period}`` (:func:`end_with_period`)."""

    def format_field(self, value: Any, format_spec: str) -> Any:
        return end_with_period(value) if format_spec == "period" else super().format_field(value, format_spec)


_FORMAT = _PromptFormatter()
_MARK = "\x00embench-text\x00"  # a trial sentence no template holds: where it shows up, the text goes


def family_identity(fam: Family, config: Any, gguf: bool, st_folder: bool) -> dict[str, str]:
    """``{"family": name}`` where the family gives other vectors than its settings say: it patches the model, or it is
    forced over the checkpoint's own with another padding side or attention (a BERT as ``causal-lm``: left padding
    moves its absolute positions). Part of the cache key and of a record's identity; nothing for the family's own."""
    own = detect(config, gguf_file="gguf" if gguf else None, st_folder=st_folder)
    changed = (fam.padding_side, fam.attn_implementation) != (own.padding_side, own.attn_implementation)
    if fam.patch is None and not changed:
        return {}
    # a plug-in's (or a run-time family's patch from outside embench): its origin and code too, so that an edited hook
    # re-encodes (core/code_identity.py); keyed by name alone it was served the old hook's vectors. embench's keep the name
    code = outside_code(fam.patch if fam.patch is not None else fam, FAMILIES.plugin(fam.name) if fam.name in FAMILIES else None)
    return {"family": f"{fam.name} ({code})" if code else fam.name}


def resolve_prompt(prompt: str | None) -> str | None:
    """A named template (``bellm``, ``prompteol``, ``none``) as its text; any other value unchanged."""
    return PROMPTS.get(prompt.strip().lower(), prompt) if isinstance(prompt, str) else prompt


def check_prompt(prompt: str | None, option: str = "--prompt") -> str:
    """A prompt template (or the name of one) must say where the text goes: ``{text}`` (twice is allowed: echo
    embeddings repeat the sentence); returns the template.
    ``{text}`` alone changes no text: it is no prompt, as ``none`` is (one cache key and record, not two)."""
    prompt = resolve_prompt(prompt)
    if not prompt or prompt == "{text}":
        return ""
    if "{text}" not in prompt and "{text:period}" not in prompt:
        raise EmbenchError(
            f"{option} {prompt!r} has no {{text}}: write where the sentence goes, e.g. "
            "'This sentence : \"{text}\" means in one word:\"', or name a template: " + ", ".join(PROMPTS)
        )
    try:
        trial = _FORMAT.format(prompt, text=_MARK)
    except (KeyError, IndexError, ValueError) as e:
        raise EmbenchError(f"{option} {prompt!r}: only {{text}} may stand in braces (double other braces: {{{{ }}}}) ({e})") from None
    if _MARK not in trial:  # '{{text}}' is the literal '{text}': every sentence would be encoded as one constant string
        raise EmbenchError(f"{option} {prompt!r} has no {{text}} that takes the sentence ({{{{text}}}} is the literal "
                           "text '{text}'): write {text} in single braces")
    return prompt


def apply_prompt(prompt: str, texts: list[str]) -> list[str]:
    return [_FORMAT.format(prompt, text=t) for t in texts] if prompt else list(texts)
