"""The flash variable-length attention embench's unpadded rows call (``embench/models/varlen_attention.py``), checked on
the GPU against its SDPA reference before any benchmark relies on it: forward and backward, bidirectional and causal,
with as many key/value heads as query heads and with fewer (grouped-query), in bf16 and fp16, on rows of texts of
unlike lengths. Where the kernel has no ``enable_gqa`` switch (torch 2.11), two more lines probe whether it takes
grouped-query keys and values without their heads repeated (``_flash(..., repeat_kv=False)``); they do not count.
On a CPU (``--device cpu``) the kernel does not exist and the script says so; the reference is tested there by
``tests/test_unpadded.py``.

    python benchmarks/varlen_check.py            # prints one line per case and exits non-zero on a mismatch
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from embench.models import varlen_attention as varlen

LENGTHS = [1, 7, 33, 64, 5, 130]  # one row's texts: a lone token, odd lengths, one longer than a 128-token block


def case(device: str, dtype: torch.dtype, causal: bool, kv_heads: int, lengths: list[int], heads: int = 8,
         dim: int = 64, repeat_kv: bool = True) -> dict:
    """The kernel's output and gradients against the reference's (computed in fp32), as the largest absolute error.
    ``repeat_kv=False``: grouped-query keys and values go to the kernel with their own heads (the probe)."""
    torch.manual_seed(0)
    tokens = sum(lengths)
    q = torch.randn(tokens, heads, dim, device=device, dtype=dtype, requires_grad=True)
    k = torch.randn(tokens, kv_heads, dim, device=device, dtype=dtype, requires_grad=True)
    v = torch.randn(tokens, kv_heads, dim, device=device, dtype=dtype, requires_grad=True)
    cu = torch.zeros(len(lengths) + 1, dtype=torch.int32, device=device)
    cu[1:] = torch.tensor(lengths, device=device).cumsum(0)
    weights = torch.randn(tokens, heads, dim, device=device)
    out = varlen._flash(q, k, v, cu, max(lengths), causal, None, repeat_kv=repeat_kv)
    (out.float() * weights).sum().backward()
    got = [out.detach().float(), *(t.grad.float() for t in (q, k, v))]
    q32, k32, v32 = (t.detach().float().requires_grad_() for t in (q, k, v))
    ref = varlen.reference_attention(q32, k32, v32, cu, causal, None)
    (ref * weights).sum().backward()
    want = [ref.detach(), q32.grad, k32.grad, v32.grad]
    errors = {name: float((a - b).abs().max()) for name, a, b in zip(("out", "dq", "dk", "dv"), got, want, strict=True)}
    scale = {name: float(b.abs().max()) for name, b in zip(("out", "dq", "dk", "dv"), want, strict=True)}
    return {"dtype": str(dtype).removeprefix("torch."), "causal": causal, "kv_heads": kv_heads, "lengths": lengths,
            "repeat_kv": repeat_kv, "max_abs_error": errors, "relative": {n: errors[n] / max(scale[n], 1e-6) for n in errors}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tolerance", type=float, default=2e-2, help="largest error relative to the reference's largest value")
    args = ap.parse_args(argv)
    reason = varlen.why_not_flash(args.device, torch.bfloat16)
    print(f"torch {torch.__version__}; flash kernel parameters: {sorted(varlen.FLASH_PARAMS)}", flush=True)
    if reason is not None:
        print(f"no check here: {reason}")
        return 0 if not args.device.startswith("cuda") else 1
    bad = 0
    for dtype in (torch.bfloat16, torch.float16):
        for causal in (False, True):
            for kv_heads in (8, 2):
                row = case(args.device, dtype, causal, kv_heads, LENGTHS)
                worst = max(row["relative"].values())
                bad += worst > args.tolerance
                print(("ok  " if worst <= args.tolerance else "BAD ") + json.dumps(row), flush=True)
    if "enable_gqa" not in varlen.FLASH_PARAMS:  # a probe, not counted: can this torch skip the repeat of kv heads?
        for causal in (False, True):
            try:
                row = case(args.device, torch.bfloat16, causal, 2, LENGTHS, repeat_kv=False)
                verdict = "ok" if max(row["relative"].values()) <= args.tolerance else "wrong"
                print(f"probe: grouped-query heads unrepeated, {verdict}: " + json.dumps(row), flush=True)
            except Exception as e:  # noqa: BLE001 - the kernel's refusal is the answer
                print(f"probe: grouped-query heads unrepeated, refused: {type(e).__name__}: {str(e)[:300]}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
