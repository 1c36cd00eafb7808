"""MultiCSR stages 1 and 2: contrastive decoding on a tiny random Llama, premises and resume, the curation rules."""

from __future__ import annotations

import csv
import json

import pytest
import torch

from embench.core.errors import EmbenchError
from embench.generate.decoding import DecodeSettings, Stream, contrastive_logits, decode
from embench.generate.premises import read_premise_file
from embench.generate.prompts import PromptSet, builtin, check_template
from embench.generate.rules import decide, keep_code, keep_paper, parse_score

# the decoding loop passes the key/value cache under the name the installed transformers takes: the deprecated
# `past_key_values` printed a FutureWarning on every generate run
pytestmark = pytest.mark.filterwarnings("error:`past_key_values` is deprecated:FutureWarning")


PROMPTS = ["a man plays a guitar on the stage tonight", "dogs run", "the cat sat on a mat with a hat"]
NOISY = ["nobody plays", "cats sleep on the sofa all day long", "x"]


@pytest.fixture(scope="module")
def tiny_llama_dir(tiny_model):
    from transformers import LlamaConfig, LlamaForCausalLM

    def make(vocab):
        # MiniLM's tokenizer: [SEP] (102) ends an answer, [PAD] (0) pads
        return LlamaForCausalLM(LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                            eos_token_id=102, pad_token_id=0, bos_token_id=101))

    return tiny_model("tiny-llama", make)


@pytest.fixture(scope="module")
def llama(tiny_llama_dir, one_thread):
    from transformers import AutoTokenizer, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tiny_llama_dir)
    tok.padding_side = "left"
    return LlamaForCausalLM.from_pretrained(tiny_llama_dir).eval(), tok


def _enc(tok, texts):
    return tok(texts, return_tensors="pt", padding=True, add_special_tokens=False, return_token_type_ids=False)


def test_combined_logits_of_one_step_are_l_minus_omega_l_noisy(llama):
    model, tok = llama
    with torch.inference_mode():
        main, other = Stream(model, "causal", _enc(tok, PROMPTS)), Stream(model, "causal", _enc(tok, NOISY))
        combined = contrastive_logits(main.logits, other.logits, 0.3)
        for i in range(len(PROMPTS)):  # each prompt alone, unpadded: the batch's left padding changes nothing
            logits = model(**_enc(tok, [PROMPTS[i]])).logits[0, -1]
            l_noisy = model(**_enc(tok, [NOISY[i]])).logits[0, -1]
            torch.testing.assert_close(combined[i], logits - 0.3 * l_noisy, atol=1e-4, rtol=1e-4)
    first, _ = decode(model, "causal", tok, PROMPTS, NOISY, DecodeSettings(max_new_tokens=1, omega=0.3))
    assert [x[0] for x in first if x] == [int(combined[i].argmax()) for i in range(3) if first[i]]


def test_omega_zero_gives_exactly_plain_greedy_generation(llama):
    model, tok = llama
    enc = _enc(tok, PROMPTS)
    ref = model.generate(**enc, max_new_tokens=10, do_sample=False, pad_token_id=0)[:, enc["input_ids"].shape[1]:]
    got, n = decode(model, "causal", tok, PROMPTS, NOISY, DecodeSettings(max_new_tokens=10, omega=0.0))
    for row, want in zip(got, ref.tolist(), strict=True):
        assert row == want[: len(row)] and (len(row) == 10 or want[len(row)] == 102)
    assert n == sum(len(r) + (len(r) < 10) for r in got)
    changed, _ = decode(model, "causal", tok, PROMPTS, NOISY, DecodeSettings(max_new_tokens=10, omega=0.5))
    assert changed != got  # the contrast does move the tokens


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_sampling_is_reproducible_from_its_seed(llama):
    model, tok = llama
    settings = DecodeSettings(max_new_tokens=6, omega=0.3, sample=True, temperature=2.0, top_p=0.9)
    def run(seed):
        return decode(model, "causal", tok, PROMPTS, NOISY, settings, torch.Generator().manual_seed(seed))[0]
    assert run(1) == run(1) and run(1) != run(2)


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_encoder_decoder_decoding_equals_generate(tiny_model, one_thread):
    from transformers import AutoTokenizer, T5Config, T5ForConditionalGeneration

    folder = tiny_model("tiny-t5", lambda vocab: T5ForConditionalGeneration(T5Config(
        vocab_size=vocab, d_model=32, d_ff=64, num_layers=2, num_heads=4, d_kv=8, decoder_start_token_id=0,
        pad_token_id=0, eos_token_id=102)))
    model, tok = T5ForConditionalGeneration.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)
    enc = tok(PROMPTS, return_tensors="pt", padding=True, return_token_type_ids=False)
    ref = model.generate(**enc, max_new_tokens=6, do_sample=False)[:, 1:].tolist()
    got, _ = decode(model, "seq2seq", tok, PROMPTS, NOISY, DecodeSettings(max_new_tokens=6, omega=0.0))
    assert [r[: len(g)] for r, g in zip(ref, got, strict=True)] == got


def test_a_template_must_say_where_the_premise_goes():
    with pytest.raises(EmbenchError, match=r"--prompt-entailment .* has no \{premise\}"):
        PromptSet(["Paraphrase this sentence."], None)
    with pytest.raises(EmbenchError, match="only"):
        check_template("{premise} and {other}", "--prompt-contradiction")
    assert len(builtin("entailment")) == 4 and all("{premise}" in t for t in builtin("contradiction"))
    prompts = PromptSet(seed=3)
    assert prompts.draw(17) == PromptSet(seed=3).draw(17)  # the same draw on every run and resume
    assert {PromptSet(seed=s).draw(1) for s in range(40)} > {(0, 0)}


def test_a_premise_file_with_an_empty_line_and_bad_bytes_names_them_and_keeps_the_rest(tmp_path):
    f = tmp_path / "premises.txt"
    f.write_bytes(b"A man plays.\n\n  \nCaf\xe9 bad bytes\nA dog runs.\n")
    premises, problems = read_premise_file(f)
    assert [(p.key, p.text) for p in premises] == [(1, "A man plays."), (5, "A dog runs.")]
    assert len(problems) == 3
    assert f"{f}:2: empty line" in problems[0] and f"{f}:4: not UTF-8 (byte 0xe9" in problems[2]
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(EmbenchError, match="no premise"):
        read_premise_file(empty)


def test_an_encoder_only_model_cannot_generate(tiny_bert_dir):
    from embench.models.language_model import load_language_model

    with pytest.raises(EmbenchError, match="encoder-only model .bert.: it cannot generate"):
        load_language_model(str(tiny_bert_dir), device="cpu")


def _rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


@pytest.mark.slow
def test_generation_resumes_after_a_partial_file_and_gives_what_one_run_gives(tiny_llama_dir, tmp_path, one_thread):
    from embench.generate import generate_triplets

    premises = tmp_path / "p.txt"
    premises.write_text("a man plays a guitar\n\nthe cat sleeps\ntwo dogs run in a park\na child reads\nrain falls\n")
    warned: list[str] = []
    opts = dict(batch_size=2, max_new_tokens=6, device="cpu", warn=warned.append)
    whole = generate_triplets(str(tiny_llama_dir), str(premises), tmp_path / "whole.csv", **opts)
    assert (whole.written, whole.already) == (5, 0) and any(":2: empty line" in w for w in warned)
    part = tmp_path / "part.csv"
    first = generate_triplets(str(tiny_llama_dir), str(premises), part, limit=3, **opts)
    assert first.written == 3
    text = part.read_text()
    part.write_text(text[: len(text) - 7])  # a kill in the middle of the third row
    again = generate_triplets(str(tiny_llama_dir), str(premises), part, **opts)
    assert (again.written, again.already) == (3, 2) and any("cut short" in w for w in warned)
    assert _rows(part) == _rows(tmp_path / "whole.csv")  # greedy: the resumed file is the one-run file
    assert _rows(part)[0][:3] == ["sent0", "sent1", "hard_neg"]
    done = generate_triplets(str(tiny_llama_dir), str(premises), part, **opts)
    assert (done.written, done.already) == (0, 5)
    meta = json.loads((tmp_path / "part.csv.json").read_text())
    assert meta["settings"]["omega"] == 0.3 and meta["totals"]["rows"] == 6  # 3 + the cut row and 2 more
    with pytest.raises(EmbenchError, match="other settings .*omega"):
        generate_triplets(str(tiny_llama_dir), str(premises), part, omega=0.5, **opts)
    from typer.testing import CliRunner

    from embench.cli.app import app

    cli = CliRunner().invoke(app, ["generate", "triplets", "--llm", str(tiny_llama_dir), "--premises", str(premises),
                                   "--out", str(tmp_path / "new" / "cli.csv"), "--limit", "2", "--max-new-tokens", "4", "-q"])
    assert cli.exit_code == 0, cli.output  # a folder that does not exist yet is made
    assert "wrote 2 triplets" in cli.output and len(_rows(tmp_path / "new" / "cli.csv")) == 3


@pytest.mark.slow  # imports the language-model stack
def test_a_resume_refuses_a_premise_file_edited_since_its_rows_were_written(tmp_path):
    """A resume skipped premises by line number alone: a line inserted at the top of the premises file had the new
    premise never generated and another generated twice ("wrote 2 triplets (3 already there)"), silently."""
    from embench.generate import generate_triplets
    from embench.generate.triplets import HEADER

    premises, out = tmp_path / "p.txt", tmp_path / "t.csv"
    lines = ["a man plays", "the cat sleeps", "dogs run", "rain falls"]
    premises.write_text("\n".join(lines) + "\n")
    with open(out, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows([HEADER, *([t, "e", "c", i, 0, 0] for i, t in enumerate(lines[:3], 1))])
    done = generate_triplets("no-such-llm", str(premises), out, limit=3)  # each row's premise where it was: none to do
    assert (done.written, done.already) == (0, 3)
    premises.write_text("a new first line\n" + premises.read_text())
    with pytest.raises(EmbenchError, match=r"p\.txt:1 is not the premise row 1 of .*t\.csv was made from \('a man plays'\)"):
        generate_triplets("no-such-llm", str(premises), out)  # refused before any model loads


# -- stage 2 -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("answer", "score"), [("4", 4.0), ("Score: 4.5/5", 4.5), (" 0.0", 0.0), ("5.0.", 5.0),
                                               ("I would say 3 out of 5", 3.0)])
def test_the_first_number_of_the_answer_is_its_score(answer, score):
    assert parse_score(answer) == (score, "")


@pytest.mark.parametrize(("answer", "why"), [("The sentence is similar", "no score"), ("", "no score"),
                                             ("7", "outside 0-5")])
def test_an_answer_without_a_score_in_0_5_is_unreadable(answer, why):
    value, reason = parse_score(answer)
    assert value is None and why in reason


@pytest.mark.parametrize(("answer", "score"), [("-1", None), ("Score: -2.5", None), ("Score:-1", None),
                                               ("sentence-2 scores 4", 2.0), ("5-1", 5.0)])
def test_a_negative_score_is_read_with_its_sign(answer, score):
    """The number's '-' was ignored: "-1" read as 1, and the paper rule kept a triplet scored -1. A hyphen after a
    word ("sentence-2") is no sign."""
    assert parse_score(answer)[0] == score


# (a, b) -> paper rule (alpha 3, beta 3, gamma 1), code rule (lines 3 and 3)
TABLE = [
    ((4.5, 0.0), ("kept", "kept")),
    ((5.0, 1.0), ("kept", "kept")),
    ((3.0, 2.0), ("kept", "kept")),
    ((3.0, 2.5), ("margin below gamma", "kept")),  # the code asks only a != b
    ((3.0, 3.0), ("margin below gamma", "equal scores")),
    ((2.0, 0.0), ("entailment below alpha", "both on one side of the lines")),
    ((5.0, 4.0), ("contradiction above beta", "both on one side of the lines")),
    ((1.0, 4.0), ("entailment below alpha", "kept (roles swapped)")),  # the code swaps the roles
    ((0.0, 5.0), ("entailment below alpha", "kept (roles swapped)")),
]


@pytest.mark.parametrize(("scores", "expected"), TABLE)
def test_curation_rules_on_a_table_of_scored_pairs(scores, expected):
    a, b = scores
    assert keep_paper(a, b).reason == expected[0]
    code = keep_code(a, b)
    assert code.reason == expected[1] and code.swapped == (expected[1] == "kept (roles swapped)")
    assert keep_paper(a, b, alpha=1, beta=4, gamma=0).kept == (a >= 1 and b <= 4 and a >= b)


@pytest.mark.slow
def test_curation_counts_unreadable_answers_as_dropped_and_swaps_under_the_code_rule(tmp_path):
    """Scores already in the scores file: curation reuses them and loads no model at all."""
    from embench.generate import curate_triplets
    from embench.generate.curation import SCORE_HEADER, _paths
    from embench.generate.prompts import SCORING

    trip = tmp_path / "t.csv"
    rows = [("p0", "e0", "c0"), ("p1", "e1", "c1"), ("p2", "e2", "c2"), ("p3", "e3", "c3"), ("p4", "", "c4")]
    with open(trip, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sent0", "sent1", "hard_neg", "key"])
        w.writerows([(*r, i) for i, r in enumerate(rows)])
    answers = [("4.5", "0"), ("The sentence means", "1"), ("2", "5"), ("3", "3"), ("", "")]
    for rule, kept in (("paper", [("p0", "e0", "c0")]), ("code", [("p0", "e0", "c0"), ("p2", "c2", "e2")])):
        out = tmp_path / f"kept-{rule}.csv"
        scores = _paths(out)["scores"]
        with open(scores, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(SCORE_HEADER)
            w.writerows([(i, *rows[i], *answers[i]) for i in range(4)])  # the empty row is never scored
        scores.with_name(scores.name + ".json").write_text(json.dumps(
            {"llm": "no-such-model", "chat": None, "max_new_tokens": 8, "answer_prefix": "", "prompt": SCORING}))
        result = curate_triplets("no-such-model", trip, out, rule=rule)
        assert [tuple(r) for r in _rows(out)[1:]] == kept
        assert result.dropped["entailment: no score in the answer"] == 1
        assert result.dropped["empty sentence (nothing generated)"] == 1
        assert result.total == 5 and result.kept == len(kept)
        summary = json.loads(_paths(out)["summary"].read_text())
        assert summary["kept"] == len(kept) and sum(summary["dropped"].values()) == 5 - len(kept)
        assert (tmp_path / f"kept-{rule}.scores.png").is_file()
    with pytest.raises(EmbenchError, match="other settings .*answer_prefix"):
        curate_triplets("no-such-model", trip, tmp_path / "kept-code.csv", rule="code", answer_prefix="Score:")
    assert decide("paper", None, 1.0, 3, 3, 1, "no score in the answer").reason == "entailment: no score in the answer"


def test_the_cli_refuses_a_prompt_without_premise_and_an_encoder_only_llm_before_generating(tiny_bert_dir, tmp_path):
    from typer.testing import CliRunner

    from embench.cli.app import app

    premises = tmp_path / "p.txt"
    premises.write_text("a man plays\n")
    runner = CliRunner()
    bad = runner.invoke(app, ["generate", "triplets", "--llm", str(tiny_bert_dir), "--premises", str(premises), "--out",
                              str(tmp_path / "t.csv"), "--prompt-entailment", "Paraphrase it."])
    assert bad.exit_code != 0 and "has no {premise}" in str(bad.exception)
    enc = runner.invoke(app, ["generate", "triplets", "--llm", str(tiny_bert_dir), "--premises", str(premises), "--out",
                              str(tmp_path / "t.csv"), "-q"])
    assert "encoder-only" in str(enc.exception)
    assert not (tmp_path / "t.csv").exists()


def test_overwrite_keeps_the_earlier_output_until_the_model_has_loaded(tiny_bert_dir, tmp_path):
    """``--overwrite`` with a model that cannot generate deleted the earlier triplets before saying so."""
    from embench.generate import generate_triplets

    premises, out = tmp_path / "p.txt", tmp_path / "keep.csv"
    premises.write_text("a man plays\n")
    out.write_text("sent0,sent1,hard_neg,key,ie,ic\na man plays,a person plays,nobody plays,0,0,0\n")
    (tmp_path / "keep.csv.json").write_text("{}")
    with pytest.raises(EmbenchError, match="encoder-only"):
        generate_triplets(str(tiny_bert_dir), str(premises), out, overwrite=True, device="cpu")
    assert "a person plays" in out.read_text() and (tmp_path / "keep.csv.json").exists()


@pytest.mark.parametrize(("out", "options", "message"), [
    (".", {}, r"out=.* is a folder; give the triplet CSV file to write"),  # the Python spelling: core/spellings.py
    ("p.txt", {}, r"out=.*p\.txt' is the premises file itself"),
    ("t.csv", {"omega": -1.0}, r"omega must be a finite number >= 0, got -1.0"),
])
def test_generation_refuses_an_output_or_omega_that_cannot_be_before_loading_the_model(tmp_path, out, options, message):
    from embench.generate import generate_triplets

    (tmp_path / "p.txt").write_text("a man plays\n")
    with pytest.raises(EmbenchError, match=message):
        generate_triplets("no-such-llm-is-loaded", str(tmp_path / "p.txt"), tmp_path / out, **options)
    assert (tmp_path / "p.txt").read_text() == "a man plays\n"


def test_greedy_decoding_keeps_no_temperature_so_a_resume_may_change_it():
    from embench.generate.decoding import DecodeSettings
    from embench.generate.triplets import _decoding

    assert _decoding(DecodeSettings(sample=False, temperature=0.5)) == _decoding(DecodeSettings(sample=False))
    assert "temperature" not in _decoding(DecodeSettings(sample=False))
    assert _decoding(DecodeSettings(sample=True, temperature=0.5))["temperature"] == 0.5
    # a settings file written before: its greedy settings with the temperature, read as without it
    assert _decoding({"sample": False, "temperature": 1.0, "top_p": 1.0, "omega": 0.3}) == {"sample": False, "omega": 0.3}


@pytest.mark.parametrize(("options", "message"), [
    ({"alpha": 7.0}, r"^alpha=7.0 is outside the scores' 0-5 scale"),  # its parameters, not the command line's --alpha
    ({"beta": -1.0}, r"^beta=-1.0 is outside the scores' 0-5 scale"),
    ({"gamma": -3.0}, r"^gamma=-3.0 is not a margin"),
    ({"max_new_tokens": 0}, r"^max_new_tokens must be at least 1, got 0"),
    ({"rule": "code", "gamma": 0.5}, r"^gamma is the paper rule's margin; the code rule .* has none"),
    ({"out": "."}, r"^out='.*' is a folder; give the CSV file of the kept triplets"),
    ({"scores": "p.txt"}, r"^scores='.*p.txt': not a scores file of 'embench generate curate'; give another scores"),
])
def test_curation_refuses_bad_options_before_asking_the_llm(tmp_path, options, message):
    from embench.generate import curate_triplets

    (tmp_path / "t.csv").write_text("sent0,sent1,hard_neg\na man plays,a person plays,nobody plays\n")
    (tmp_path / "p.txt").write_text("a man plays\n")
    options = {k: tmp_path / v if k in ("out", "scores") else v for k, v in options.items()}
    with pytest.raises(EmbenchError, match=message):
        curate_triplets("no-such-llm-is-loaded", tmp_path / "t.csv", **options)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.txt", "t.csv"]  # nothing written beside them
