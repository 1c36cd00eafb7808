"""A long text in a template with words after it (BeLLM's) is cut before it goes into the template, as AnglE's
tokenizer does for the BeLLM authors, so the template's end survives: right truncation of the prompted string read
the vector at a word of the sentence instead of the prompt's last token."""

from __future__ import annotations

from transformers import AutoTokenizer

from embench.models.families import PROMPTS, apply_prompt
from embench.models.prompt_fit import prompted_within

LONG = " ".join(["a man is playing a large guitar on the stage"] * 12)


def test_the_template_s_end_survives_and_the_text_fills_the_rest(minilm_path):
    tok = AutoTokenizer.from_pretrained(minilm_path)
    prompt = PROMPTS["bellm-code"]
    short = "a dog runs."
    got = prompted_within(tok, prompt, [LONG, short], 40)
    assert got[1] == apply_prompt(prompt, [short])[0]  # a text that fits is left as it is
    ids = tok(got[0])["input_ids"]
    tail = tok(apply_prompt(prompt, [""])[0])["input_ids"][-4:]  # the template's last tokens, then [SEP]
    assert len(ids) <= 40 and ids[-4:] == tail
    assert len(ids) >= 38  # the text keeps every token the length leaves it
    assert got[0].startswith("The representative word for sentence a man is playing")
    cut = tok(apply_prompt(prompt, [LONG])[0], truncation=True, max_length=40)["input_ids"]
    assert cut[-4:] != tail  # what right truncation of the prompted string gave


def test_a_prefix_template_and_no_template_leave_the_texts_as_they_are(minilm_path):
    tok = AutoTokenizer.from_pretrained(minilm_path)
    assert prompted_within(tok, "query: {text}", [LONG], 16) == ["query: " + LONG]
    assert prompted_within(tok, "", [LONG], 16) == [LONG]


def test_a_decoder_tokenizer_keeps_the_last_token(tiny_llama_dir):
    tok = AutoTokenizer.from_pretrained(tiny_llama_dir)
    prompt = 'This sentence : "{text}" means in one word:"'
    got = prompted_within(tok, prompt, [LONG], 30)[0]
    ids = tok(got)["input_ids"]
    assert len(ids) <= 30 and got.endswith('" means in one word:"')


def test_the_training_tokenisation_fits_only_the_rows_at_the_length(minilm_path):
    from embench.models.fast_tokens import token_ids
    from embench.models.prompt_fit import prompted_token_ids

    tok = AutoTokenizer.from_pretrained(minilm_path)
    prompt, texts = PROMPTS["bellm-code"], [LONG, "a dog runs.", LONG[:90]]
    assert prompted_token_ids(tok, prompt, texts, 40) == token_ids(tok, prompted_within(tok, prompt, texts, 40), 40)
    assert prompted_token_ids(tok, "", texts, 40) == token_ids(tok, texts, 40)


def test_evaluation_tokenises_a_prompted_text_as_training_does(tiny_llama_dir):
    """``load_model(..., prompt="prompteol", max_length=16).pretokenize`` cut a long text's prompted string from the
    right, so last-token pooling read a word of the sentence (268 of STS-B test's texts under bellm-code at 32), while
    training kept the template's end. Evaluation now cuts the text too; the setting is in the cache key and the
    record's identity, and an unprompted (or prefix-prompted) model keeps its token ids and keys."""
    import embench
    from embench.core.identity_fields import OPTIONAL_FIELDS
    from embench.models.fast_tokens import token_ids
    from embench.models.prompt_fit import prompted_token_ids

    texts = [LONG, "a dog runs."]
    enc = embench.load_model(tiny_llama_dir, prompt="prompteol", max_length=16, device="cpu")
    ids = enc.pretokenize(texts)["input_ids"]
    assert ids == prompted_token_ids(enc.tokenizer, PROMPTS["prompteol"], texts, 16)["input_ids"]
    assert enc.tokenizer.decode(ids[0]).endswith('" means in one word : " [SEP]') and len(ids[0]) == 16
    assert enc.settings.to_dict()["prompt_truncation"] == "text" and "prompt_truncation" in OPTIONAL_FIELDS
    for plain in (embench.load_model(tiny_llama_dir, max_length=16, device="cpu"),
                  embench.load_model(tiny_llama_dir, prompt="query: {text}", max_length=16, device="cpu")):
        assert "prompt_truncation" not in plain.settings.to_dict()  # the cache key and records of before
        assert plain.pretokenize(texts) == token_ids(plain.tokenizer, plain._prepare(texts), 16)
