"""Batched decoding with contrastive (instructive) decoding: MultiCSR stage 1 (§3.1, Eq. 1-2).

Two streams run side by side, each with its own KV cache: the prompts under their instruction, and the
same inputs under the noisy (opposite) instruction. At every step both streams see the same prefix
y_<t (the token chosen is fed to both), and the next token is drawn from

    l_t - omega * l_hat_t            (§3.1; Instructive Decoding, Kim et al. 2024)

(omega 0.3 in the paper, App. C). Without noisy prompts it is plain decoding. Greedy (argmax) or
sampled (temperature, top-p: transformers' logits warpers). Causal LMs take left-padded prompts with
position ids counted over real tokens (as ``generate`` computes them); encoder-decoders (T5) run their
encoder once and decode from the decoder start token.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import torch

from ..models.positions import position_ids


@dataclass
class DecodeSettings:
    max_new_tokens: int = 48
    omega: float = 0.3  # smoothing coefficient of Eq. 2's contrast (App. C, Figure 6)
    sample: bool = False  # False: greedy (the paper's example of Eq. 1)
    temperature: float = 1.0
    top_p: float = 1.0


def contrastive_logits(logits: torch.Tensor, noisy: torch.Tensor | None, omega: float) -> torch.Tensor:
    """The logits the next token is drawn from: ``l - omega * l_noisy`` (MultiCSR §3.1), or ``l`` alone."""
    return logits if noisy is None else logits - omega * noisy


class Stream:
    """One batch of prompts through the model, one token at a time, with its KV cache."""

    def __init__(self, model: Any, kind: str, enc: dict[str, torch.Tensor]):
        self.model, self.kind = model, kind
        # transformers 5.2x renamed the forward's `past_key_values` to `cache` (the old name warns on every step)
        self.cache_kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        self.mask = enc["attention_mask"]
        if kind == "seq2seq":
            self.encoded = model.get_encoder()(input_ids=enc["input_ids"], attention_mask=self.mask, return_dict=True)
            start = torch.full((self.mask.shape[0], 1), model.config.decoder_start_token_id, dtype=torch.long,
                               device=self.mask.device)
            out = model(encoder_outputs=self.encoded, attention_mask=self.mask, decoder_input_ids=start, use_cache=True)
        else:
            # left padding: real tokens are counted from 0 (padding never attended), as generate() and encoding do
            out = model(input_ids=enc["input_ids"], attention_mask=self.mask, position_ids=position_ids(self.mask),
                        use_cache=True)
        self.past = _cache_of(out)
        self.logits = out.logits[:, -1, :].float()

    def advance(self, tokens: torch.Tensor) -> None:
        """Feed the chosen token of every row; ``logits`` become the next step's."""
        step = tokens[:, None]
        if self.kind == "seq2seq":
            out = self.model(encoder_outputs=self.encoded, attention_mask=self.mask, decoder_input_ids=step,
                             **{self.cache_kw: self.past}, use_cache=True)
        else:
            self.mask = torch.cat([self.mask, self.mask.new_ones((self.mask.shape[0], 1))], dim=1)
            positions = self.mask.long().sum(-1, keepdim=True) - 1
            out = self.model(input_ids=step, attention_mask=self.mask, position_ids=positions,
                             **{self.cache_kw: self.past}, use_cache=True)
        self.past = _cache_of(out)
        self.logits = out.logits[:, -1, :].float()


def _cache_of(out: Any) -> Any:
    """The key/value cache a forward returned: ``cache`` in newer transformers, ``past_key_values`` before."""
    return out["cache"] if "cache" in out else out.past_key_values


def stop_ids(model: Any, tokenizer: Any) -> list[int]:
    """Token ids that end an answer: the generation config's EOS id(s) and the tokenizer's."""
    ids = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = [ids] if isinstance(ids, int) else list(ids or [])
    if tokenizer.eos_token_id is not None:
        ids.append(tokenizer.eos_token_id)
    return sorted(set(ids))


def _pick(logits: torch.Tensor, settings: DecodeSettings, generator: torch.Generator | None) -> torch.Tensor:
    if not settings.sample:
        return logits.argmax(dim=-1)
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopPLogitsWarper

    scores = logits
    if settings.temperature != 1.0:
        scores = TemperatureLogitsWarper(settings.temperature)(None, scores)
    if settings.top_p < 1.0:
        scores = TopPLogitsWarper(settings.top_p)(None, scores)
    return torch.multinomial(torch.softmax(scores, dim=-1), 1, generator=generator).squeeze(1)


@torch.inference_mode()
def decode(model: Any, kind: str, tokenizer: Any, prompts: list[str], noisy: list[str] | None,
           settings: DecodeSettings, generator: torch.Generator | None = None,
           add_special_tokens: bool | None = None) -> tuple[list[list[int]], int]:
    """New token ids of each prompt (up to and without the stop token) and how many tokens were generated.

    With ``noisy`` (one per prompt), each token comes from ``l - omega * l_noisy``; the noisy stream is fed
    the same chosen tokens, so both condition on the same prefix (Eq. 2). ``add_special_tokens`` (default:
    for encoder-decoders only) adds the tokenizer's own (a BOS, T5's EOS); a chat template brings its own."""
    if noisy is not None and len(noisy) != len(prompts):
        raise ValueError(f"{len(noisy)} noisy prompts for {len(prompts)} prompts")
    device = next(model.parameters()).device

    def tokenize(texts: list[str]) -> dict[str, torch.Tensor]:
        special = kind == "seq2seq" if add_special_tokens is None else add_special_tokens
        enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=special)
        return {k: v.to(device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}

    main = Stream(model, kind, tokenize(prompts))
    other = Stream(model, kind, tokenize(noisy)) if noisy is not None else None
    stops = torch.tensor(stop_ids(model, tokenizer), device=device)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else int(stops[0])
    done = torch.zeros(len(prompts), dtype=torch.bool, device=device)
    out: list[list[int]] = [[] for _ in prompts]
    generated = 0
    for _ in range(settings.max_new_tokens):
        logits = contrastive_logits(main.logits, other.logits if other is not None else None, settings.omega)
        tokens = _pick(logits, settings, generator)
        tokens = torch.where(done, torch.full_like(tokens, pad), tokens)
        ended = torch.isin(tokens, stops) & ~done
        for i in torch.nonzero(~done & ~ended).flatten().tolist():
            out[i].append(int(tokens[i]))
        generated += int((~done).sum())
        done |= ended
        if bool(done.all()):
            break
        main.advance(tokens)
        if other is not None:
            other.advance(tokens)
    return out, generated


def clean(text: str) -> str:
    """The generated sentence: its first non-empty line, without surrounding quotes or a leading label."""
    line = next((x.strip() for x in text.splitlines() if x.strip()), "")
    for label in ("Output:", "Answer:", "Sentence:"):
        if line.lower().startswith(label.lower()):
            line = line[len(label):].strip()
    return line.strip().strip('"\u201c\u201d').strip()
