"""torch.compile(model, backend="hpu_backend", options={...}): dynamo's graphs through
AOTAutograd (functionalized ATen forward and backward graphs), each run per call as one compiled
region: the graph's ops are lowered as in lazy mode into one Synapse graph (the recipe cache makes
the second call of a graph a hit) and launched. Graph breaks (data-dependent Python, unsupported
constructs) run the code between the graphs op by op, as eager mode does. Registered in eager mode
only (PT_HPU_LAZY_MODE=0), as on the real stack."""
import torch
from torch._dynamo import register_backend
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func

from hpusim import _C

# The documented options (habana_frameworks.torch.dynamo.compile_backend.config): those that
# mean something here are honoured, those that only steer the real compiler's own passes are
# accepted without effect (the lowering has no such passes), the rest are refused by name.
_HONOURED = {"keep_input_mutations", "inference", "use_eager_fallback", "force_static_compile"}
_NO_PASS_HERE = {"use_compiled_recipes", "decomposition_mode", "remove_unnecessary_clones", "reinplace_add",
                 "reassign_full_copy", "reassign_copy_", "use_boxed_input"}
_REFUSED = {"use_graph_freezing": "graph freezing", "discard_frozen_params": "graph freezing",
            "enable_sfg": "synapse fused graphs with collectives", "use_inplace_allreduce": "collectives",
            "enable_allreduce_graph_split": "collectives", "use_cpp_partitioner": "the C++ partitioner",
            "use_inplace_index_copy": "the index_copy pass"}


def _check_options(options):
    for key, value in (options or {}).items():
        if key in _REFUSED:
            raise ValueError(f"hpu_backend: option '{key}' ({_REFUSED[key]}) is not supported by hpusim")
        if key not in _HONOURED and key not in _NO_PASS_HERE:
            raise ValueError(f"hpu_backend: unknown option '{key}' (the options are those of "
                             f"habana_frameworks.torch.dynamo.compile_backend.config)")
        if key == "decomposition_mode" and value not in ("habana", "core_aten", "none"):
            raise ValueError(f"hpu_backend: decomposition_mode '{value}': habana, core_aten or none")


def _region(gm):
    """gm run as one compiled region per call (boxed: AOTAutograd passes the arguments as a list)."""
    def run(*args):
        _C.begin_region()
        try:
            return gm(*args)
        finally:
            _C.end_region()
    return make_boxed_func(run)


def _compiler(gm, example_inputs):
    return _region(gm)


@register_backend
def hpu_backend(graph_module, example_inputs, options=None, **kwargs):
    options = dict(options or {}, **kwargs)
    _check_options(options)
    keep_mutations = bool(options.get("keep_input_mutations", True))
    inference = bool(options.get("inference", True))
    backend = aot_autograd(fw_compiler=_compiler, bw_compiler=_compiler,
                           inference_compiler=_compiler if inference else None,
                           keep_inference_input_mutations=keep_mutations)
    return backend(graph_module, example_inputs)


__all__ = ["hpu_backend"]
