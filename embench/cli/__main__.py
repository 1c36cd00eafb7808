"""``python -m embench.cli ...`` (torchrun launches ``-m embench.cli train`` this way)."""

from .app import main

main()
