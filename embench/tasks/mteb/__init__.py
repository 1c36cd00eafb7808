"""The MTEB bridge: mteb's own tasks and evaluators (``tasks``), fed from the data root (``local_data``,
``load``, ``compare``) through embench's engine (``adapter``); block averages (``blocks``).

Nothing here imports mteb at module level, so ``import embench`` never imports it.
"""
