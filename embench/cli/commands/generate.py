"""``embench generate``: LLM-generated training triplets (MultiCSR stages 1 and 2).

* ``generate triplets --llm MODEL --premises FILE|snli --out triplets.csv``: an entailment and a
  contradiction per premise, with contrastive decoding against the opposite instruction (§3.1).
* ``generate curate --llm MODEL --triplets triplets.csv``: the LLM scores each pair 0-5 and the keep rule
  (the paper's alpha/beta/gamma or the authors' code) selects the training triplets (§3.2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..options import SEED_MAX, DataOpt, DeviceOpt

Opt = typer.Option
generate_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)

GENERATION_BATCH = 16  # prompts decoded together (x2 hypotheses, x2 streams with contrastive decoding)


@generate_app.command("triplets")
def triplets(
    llm: Annotated[str, Opt("--llm", help="The generating LLM: a causal LM folder, alias, hub id or .gguf file, or an encoder-decoder (Flan-T5).")],
    premises: Annotated[str, Opt("--premises", help="A text file with one premise per line, or snli (the data root's SNLI premises).")],
    out: Annotated[Path, Opt("--out", "-o", help="The triplet CSV (sent0,sent1,hard_neg,...); an existing one is resumed.")],
    limit: Annotated[int | None, Opt(min=1, help="Only the first N premises.")] = None,
    contrastive: Annotated[bool, Opt("--contrastive/--no-contrastive", help="Contrastive decoding against the opposite instruction (MultiCSR §3.1).")] = True,
    omega: Annotated[float, Opt(help="omega of l - omega * l_noisy (the paper's 0.3).")] = 0.3,
    sample: Annotated[bool, Opt("--do-sample/--greedy", help="Sample the next token (temperature, top-p) or take the argmax (default).")] = False,
    temperature: Annotated[float | None, Opt(help="Sampling temperature (default 1).")] = None,
    top_p: Annotated[float, Opt(help="Sampling: nucleus probability mass (1 = off).")] = 1.0,
    max_new_tokens: Annotated[int, Opt(help="Tokens per generated sentence at most.")] = 48,
    seed: Annotated[int | None, Opt(help="Seed of the prompt draws and of sampling (default 0).", min=0, max=SEED_MAX)] = None,
    prompt_entailment: Annotated[list[str] | None, Opt("--prompt-entailment", help="Your entailment template with {premise} (repeatable: one is drawn per premise); default: the paper's App. A prompts.")] = None,
    prompt_contradiction: Annotated[list[str] | None, Opt("--prompt-contradiction", help="Your contradiction template with {premise} (repeatable).")] = None,
    chat: Annotated[bool | None, Opt("--chat/--no-chat", help="Wrap prompts in the tokenizer's chat template (default: when it has one).")] = None,
    overwrite: Annotated[bool, Opt("--overwrite", help="Start again instead of resuming an existing --out.")] = False,
    batch_size: Annotated[int, Opt(help="Premises decoded together.")] = GENERATION_BATCH,
    device: DeviceOpt = None,
    data: DataOpt = None,
    quiet: Annotated[bool, Opt("--quiet", "-q", help="No progress output on stderr.")] = False,
) -> None:
    """Generate (premise, entailment, contradiction) triplets with an LLM (MultiCSR stage 1)."""
    from ...generate import generate_triplets

    result = generate_triplets(llm, premises, out, data=str(data) if data else None, limit=limit, batch_size=batch_size,
                               contrastive=contrastive, omega=omega, sample=sample,
                               temperature=1.0 if temperature is None else temperature, top_p=top_p,
                               max_new_tokens=max_new_tokens, seed=seed or 0, prompt_entailment=prompt_entailment,
                               prompt_contradiction=prompt_contradiction, chat=chat, device=device, overwrite=overwrite,
                               progress=not quiet, warn=_warn)
    resumed = f" ({result.already} already there)" if result.already else ""
    speed = (f"; {result.seconds:.1f} s, {result.seconds_per_triplet:.2f} s per triplet, "
             f"{result.tokens / max(result.seconds, 1e-9):.1f} tokens/s" if result.written else "")
    _say(f"wrote {result.written} triplets to {result.out}{resumed}{speed}")


@generate_app.command("curate")
def curate(
    llm: Annotated[str, Opt("--llm", help="The scoring LLM (MultiCSR: the generating one).")],
    triplets: Annotated[Path, Opt("--triplets", help="A triplet CSV (sent0,sent1,hard_neg), e.g. from 'generate triplets'.")],
    out: Annotated[Path | None, Opt("--out", "-o", help="The kept triplets (default: <triplets>.kept.csv); scores, summary and figure beside it.")] = None,
    rule: Annotated[str, Opt(help="paper (a >= alpha, b <= beta, a >= b + gamma) or code (the authors' filter: swaps roles when the contradiction scores higher).")] = "paper",
    alpha: Annotated[float, Opt(help="paper rule: lowest entailment score kept (3); code rule: its positive line.")] = 3.0,
    beta: Annotated[float, Opt(help="paper rule: highest contradiction score kept (3); code rule: its negative line.")] = 3.0,
    gamma: Annotated[float | None, Opt(help="paper rule: the margin a - b at least (default 1); the code rule has none.")] = None,
    limit: Annotated[int | None, Opt(min=1, help="Only the first N triplets.")] = None,
    scores: Annotated[Path | None, Opt("--scores", help="The answers file, read and extended (default: <out stem>.scores.csv); another --rule reuses it.")] = None,
    chat: Annotated[bool | None, Opt("--chat/--no-chat", help="Wrap prompts in the tokenizer's chat template (default: when it has one).")] = None,
    max_new_tokens: Annotated[int, Opt(help="Tokens of each scoring answer at most.")] = 8,
    answer_prefix: Annotated[str, Opt(help="Text that starts the model's answer, e.g. 'Score:' (not the paper's; for small models that restate the sentences).")] = "",
    batch_size: Annotated[int, Opt(help="Scoring prompts decoded together.")] = GENERATION_BATCH,
    device: DeviceOpt = None,
    quiet: Annotated[bool, Opt("--quiet", "-q", help="No progress output on stderr.")] = False,
) -> None:
    """Score each generated pair 0-5 with the LLM and keep the triplets the rule accepts (MultiCSR stage 2)."""
    from ...generate import curate_triplets

    result = curate_triplets(llm, triplets, out, rule=rule, alpha=alpha, beta=beta, gamma=gamma, limit=limit, chat=chat,
                             max_new_tokens=max_new_tokens, batch_size=batch_size, device=device, answer_prefix=answer_prefix,
                             scores=scores, progress=not quiet)
    reasons = ", ".join(f"{k} {v}" for k, v in result.dropped.items()) or "none"
    _say(f"kept {result.kept} of {result.total} triplets ({rule} rule) in {result.out}; dropped: {reasons}")
    for f in result.files:
        _say(f"wrote {f}")


def _warn(message: str) -> None:
    from ..output import message_console

    message_console().print(f"warning: {message}", style="yellow", highlight=False, markup=False, soft_wrap=True)


def _say(message: str) -> None:
    from ..output import message_console

    message_console(stderr=False).print(message, highlight=False, markup=False, soft_wrap=True)
