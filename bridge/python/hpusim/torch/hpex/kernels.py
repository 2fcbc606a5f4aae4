"""hpex.kernels.FusedSDPA: scaled dot-product attention, fused.

FusedSDPA.apply(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
softmax_mode="None", recompute_mode=None, valid_seq_len=None, seq_padding_type="left",
return_dropout_mask=False, return_attn_probs=False): one recorded op forward (torch.ops.hpu.sdpa_fwd:
the MME's batch GEMMs and the TPC's softmax and dropout) and one backward (sdpa_bwd). With
recompute_mode=True the backward recomputes the probabilities from q and k instead of keeping
them (less memory, more device work). A boolean attn_mask keeps the positions that are True; a
float one is added to the scores; is_causal masks the positions above the diagonal. GQA (fewer key
/ value heads than query heads) is detected from the shapes.
"""
import math

import torch

__all__ = ["FusedSDPA"]

_causal_bias_cache = {}


def _causal_bias(length, source, dtype, device):
    key = (length, source, dtype, str(device))
    bias = _causal_bias_cache.get(key)
    if bias is None:
        keep = torch.ones(length, source, dtype=torch.bool).tril()
        bias = torch.zeros(length, source, dtype=dtype).masked_fill(~keep, float("-inf")).to(device)
        _causal_bias_cache[key] = bias
    return bias


def _bias(q, k, attn_mask, is_causal):
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("FusedSDPA: explicit attn_mask should not be set when is_causal=True")
        return _causal_bias(q.shape[-2], k.shape[-2], q.dtype, q.device)
    if attn_mask is None:
        return None
    if attn_mask.dtype == torch.bool:
        return torch.zeros_like(attn_mask, dtype=q.dtype).masked_fill_(attn_mask.logical_not(), float("-inf"))
    return attn_mask.to(q.dtype)


def _expand_heads(q, t):
    """GQA: key / value heads repeated to the query's."""
    if t.dim() >= 3 and q.dim() == t.dim() and t.shape[-3] != q.shape[-3]:
        if q.shape[-3] % t.shape[-3] != 0:
            raise RuntimeError(f"FusedSDPA: {q.shape[-3]} query heads are not a multiple of {t.shape[-3]} "
                               "key/value heads")
        return t.repeat_interleave(q.shape[-3] // t.shape[-3], dim=-3)
    return t


class _Sdpa(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, bias, dropout_p, scale, recompute, return_probs):
        out, probs, seed = torch.ops.hpu.sdpa_fwd(q, k, v, bias, dropout_p, scale, (not recompute) or return_probs)
        ctx.save_for_backward(q, k, v, bias, probs if not recompute else probs.new_empty(0), seed)
        ctx.dropout_p, ctx.scale = dropout_p, scale
        if return_probs:
            ctx.mark_non_differentiable(probs)
            return out, probs
        return out

    @staticmethod
    def backward(ctx, grad, *unused):
        q, k, v, bias, probs, seed = ctx.saved_tensors
        dq, dk, dv = torch.ops.hpu.sdpa_bwd(grad.contiguous(), q, k, v, bias, probs, seed, ctx.dropout_p, ctx.scale)
        return dq, dk, dv, None, None, None, None, None


class FusedSDPA:
    @staticmethod
    def apply(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, softmax_mode="None",
              recompute_mode=None, valid_seq_len=None, seq_padding_type="left", return_dropout_mask=False,
              return_attn_probs=False):
        if softmax_mode not in ("None", None):
            raise ValueError(f"FusedSDPA: softmax_mode={softmax_mode!r} is not supported by hpusim (only 'None': "
                             "the exact softmax in the inputs' dtype)")
        if valid_seq_len is not None:
            raise ValueError("FusedSDPA: valid_seq_len is not supported by hpusim")
        if return_dropout_mask:
            raise ValueError("FusedSDPA: return_dropout_mask=True is not supported by hpusim")
        if not 0.0 <= dropout_p < 1.0:
            raise ValueError(f"FusedSDPA: dropout_p must be in [0, 1), got {dropout_p}")
        if seq_padding_type not in ("left", "right"):
            raise ValueError(f"FusedSDPA: seq_padding_type must be 'left' or 'right', got {seq_padding_type!r}")
        k, v = _expand_heads(q, k), _expand_heads(q, v)
        if scale is None:
            scale = 1.0 / math.sqrt(q.shape[-1])
        bias = _bias(q, k, attn_mask, is_causal)
        return _Sdpa.apply(q.contiguous(), k.contiguous(), v.contiguous(), bias, float(dropout_p), float(scale),
                           bool(recompute_mode), bool(return_attn_probs))
