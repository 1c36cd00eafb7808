"""Texts to vectors: the engine (dedup, token-length batches, no autograd) and the on-disk cache."""
