"""The paper models of the recipes as random-weight folders, for ``recipes_gpu.py``.

Speed does not depend on the weights' values, so each model is its published configuration with random
weights: BERT-base (``BertConfig()``'s defaults), RoBERTa-base and -large, LLaMA-2-7B. The trainer reads a
folder holding only ``config.json`` and a tokenizer with ``from_scratch`` (built on the device, in the
training dtype: ``embench/train/backbone.py``), so a 7B model costs no disk and no host memory. Where weights
must be read from disk (sentence-transformers' trainer, MultiCSR's frozen guide, 4-bit loading), they are
built on the device and saved.

The tokenizer is all-MiniLM-L6-v2's (BERT's uncased WordPiece), the one real tokenizer this project has
offline, for every shape; the configurations keep the papers' vocabulary sizes (its ids all fall inside
them), so embedding tables weigh what they weigh in the papers. English WordPiece lengths are close to
RoBERTa's BPE and LLaMA's SentencePiece lengths, and every rate counts the tokens this tokenizer produced.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

SHAPES = {  # kind, config keywords (the published configuration files)
    "bert-base": ("bert", {}),
    "roberta-base": ("roberta", dict(max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5)),
    "roberta-large": ("roberta", dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
                                      max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5)),
    "llama-2-7b": ("llama", dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
                                 num_key_value_heads=32, max_position_embeddings=4096, rms_norm_eps=1e-5)),
}
VOCAB = {"bert": 30522, "roberta": 50265, "llama": 32000}
TINY = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
# the model each recipe's paper trains (crop's paper fine-tunes MPNet, the bert-base architecture, §2.3)
RECIPE_SHAPE = {"simcse-unsup": "bert-base", "simcse-sup": "bert-base", "crop": "bert-base", "crop-scratch": "bert-base",
                "bellm": "llama-2-7b", "jtcse-bert": "bert-base", "jtcse-roberta": "roberta-base", "multicsr": "bert-base",
                "multicsr-code": "bert-base"}
GUIDE_SHAPE = "bert-base"  # MultiCSR's frozen P_eta: SimCSE of the matching backbone (§4.1)


def is_decoder(shape: str) -> bool:
    return SHAPES[shape][0] == "llama"


class Folders:
    """Random-weight folders under ``tmp``, each made once: ``config(shape)`` and ``weights(shape, dtype)``."""

    def __init__(self, tmp: Path, tokenizer_dir: Path, tiny: bool, device: str):
        from transformers import AutoTokenizer

        self.tmp, self.tiny, self.device = Path(tmp), tiny, device
        self.tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
        self.made: dict[tuple[str, str], Path] = {}

    def hf_config(self, shape: str):
        from transformers import BertConfig, LlamaConfig, RobertaConfig

        kind, kw = SHAPES[shape]
        if self.tiny:  # a smoke run of the benchmark on a CPU
            kw = {**kw, **TINY, **({"num_key_value_heads": TINY["num_attention_heads"]} if kind == "llama" else {})}
        make = {"bert": BertConfig, "roberta": RobertaConfig, "llama": LlamaConfig}[kind]
        return make(vocab_size=max(VOCAB[kind], len(self.tokenizer)), pad_token_id=self.tokenizer.pad_token_id, **kw)

    def config(self, shape: str) -> Path:
        """config.json and the tokenizer: for ``from_scratch`` training."""
        return self._folder(shape, "config", lambda folder: self.hf_config(shape).save_pretrained(folder))

    def weights(self, shape: str, dtype: torch.dtype = torch.float32) -> Path:
        """Random weights in ``dtype`` (built on the device) and the tokenizer."""
        from transformers import AutoModel

        def save(folder: Path) -> None:
            torch.manual_seed(0)
            with torch.device(self.device):
                model = AutoModel.from_config(self.hf_config(shape), dtype=dtype)
            model.save_pretrained(folder)
            del model
            if self.device.startswith("cuda"):
                torch.cuda.empty_cache()

        return self._folder(shape, f"weights-{str(dtype).split('.')[-1]}", save)

    def _folder(self, shape: str, what: str, write) -> Path:
        key = (shape, what)
        if key not in self.made:
            folder = self.tmp / f"{shape}-{what}"
            folder.mkdir(parents=True)
            write(folder)
            self.tokenizer.save_pretrained(folder)
            self.made[key] = folder
        return self.made[key]

    def describe(self, shape: str) -> dict:
        cfg = json.loads((self.config(shape) / "config.json").read_text())
        keys = ("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size")
        return {"shape": shape, **{k: cfg.get(k) for k in keys}}
