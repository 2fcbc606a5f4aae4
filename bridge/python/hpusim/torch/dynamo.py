"""torch.compile(model, backend="hpu_backend", options={...}): dynamo's graphs through
AOTAutograd (functionalized ATen forward and backward graphs). Each graph is lowered as in lazy
mode and captured into one Synapse launch at its first call (per input signature); later calls
replay that launch with their inputs' addresses and fresh outputs, recording, building, hashing
and compiling nothing. A graph that cannot be captured (a CPU fallback inside, outputs that alias
inputs) is recorded and launched per call instead. Graph breaks (data-dependent Python, unsupported
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


def _run_recorded(gm, args):
    """gm's ops recorded and launched as one graph (the recipe cache finds it after the first)."""
    _C.begin_region()
    try:
        return gm(*args)
    finally:
        _C.end_region()


class _Captured:
    """gm captured once for one input signature: the captured launches run again on each call's
    inputs and fresh outputs (their addresses put in place of the capture's), so a call records,
    builds, hashes and compiles nothing. Outputs sharing a storage (the same tensor returned twice,
    views of one result) share a fresh one."""

    def __init__(self, graph, inputs, outputs):
        self.graph = graph
        self.inputs = [(t.untyped_storage()._cdata, t.storage_offset(), t.element_size()) if t is not None else None
                       for t in inputs]
        input_index = {t.untyped_storage()._cdata: i for i, t in enumerate(inputs) if t is not None}
        self.storages = {}   # output storage key -> bytes
        self.outputs = []
        for o in outputs:
            if o is None:
                self.outputs.append(None)
                continue
            key = o.untyped_storage()._cdata
            if key in input_index:   # an input returned (a saved activation): the call's input, viewed alike
                i = input_index[key]
                self.outputs.append(("input", i, o.storage_offset() - inputs[i].storage_offset(), tuple(o.shape),
                                     o.stride()))
                continue
            self.storages[key] = o.untyped_storage().nbytes()
            self.outputs.append((key, o.storage_offset(), tuple(o.shape), o.stride(), o.dtype))

    def __call__(self, args):
        bases = {}
        for spec, arg in zip(self.inputs, args):
            if spec is not None:
                key, offset, size = spec
                bases[key] = arg.untyped_storage().data_ptr() + (arg.storage_offset() - offset) * size
        fresh = {}
        for key, nbytes in self.storages.items():
            fresh[key] = torch.empty(nbytes, dtype=torch.uint8, device="hpu").untyped_storage()
            bases[key] = fresh[key].data_ptr()
        outputs = []
        for spec in self.outputs:
            if spec is None:
                outputs.append(None)
                continue
            if spec[0] == "input":
                _, i, delta, shape, stride = spec
                outputs.append(args[i].as_strided(shape, stride, args[i].storage_offset() + delta))
                continue
            key, offset, shape, stride, dtype = spec
            outputs.append(torch.empty(0, dtype=dtype, device="hpu").set_(fresh[key], offset, shape, stride))
        self.graph.replay_with(bases)
        return outputs


def _capturable(args, outputs):
    """Whether a capture can run again on other tensors: inputs with storages of their own, the
    results tensors (or None) on the card."""
    if not isinstance(outputs, (tuple, list)) or not all(o is None or isinstance(o, torch.Tensor) for o in outputs):
        return False
    inputs = [a.untyped_storage()._cdata for a in args if isinstance(a, torch.Tensor)]
    if len(inputs) != len(set(inputs)) or not all(a.device.type == "hpu" for a in args if isinstance(a, torch.Tensor)):
        return False
    return all(o is None or o.device.type == "hpu" for o in outputs)


def _signature(args):
    return tuple((tuple(a.shape), a.stride(), a.dtype, a.storage_offset()) if isinstance(a, torch.Tensor) else
                 ("value", a) for a in args)


def _region(gm):
    """gm per call: captured at the first call of each input signature and replayed with the
    call's tensors from then on; recorded per call when it cannot be captured (a CPU fallback
    inside, outputs aliasing inputs)."""
    captures = {}

    def run(*args):
        key = _signature(args)
        entry = captures.get(key)
        if entry is None:
            graph = _C.HpuGraph()
            try:
                _C.begin_region()
                graph.capture_begin(in_eager_mode=True)
                outputs = gm(*args)
                graph.capture_end()
            except RuntimeError as error:
                if "not supported during hpu graph capturing" not in str(error):  # noqa
                    raise
                graph.capture_abort()
                captures[key] = False
                return _run_recorded(gm, args)
            finally:
                _C.end_region(launch=False)
            if not _capturable(args, outputs):
                captures[key] = False
                graph.replay()   # the capture's own tensors: this call's
                return outputs
            captures[key] = _Captured(graph, [a if isinstance(a, torch.Tensor) else None for a in args], outputs)
            graph.replay()
            return outputs
        if entry is False:
            return _run_recorded(gm, args)
        return entry(args)

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
