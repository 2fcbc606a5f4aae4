"""HPU graphs (lazy mode only): HPUGraph with capture_begin / capture_end / replay / reset, and
the `graph` context manager, as habana_frameworks.torch.hpu names them. What a capture records
is compiled into launches kept with the device addresses they use; replay submits them again
without recording, building, hashing or compiling, reading whatever was copied into the tensors
the capture used (its static inputs) and writing its static outputs."""
import gc
import inspect
import os
import sys

import torch

from hpusim import _C


class HPUGraph:
    """One captured graph. Capturing does not run the work (replay does); capture_begin(dry_run=True)
    replays once right after capture_end."""

    def __init__(self):
        self._graph = _C.HpuGraph()
        self._dry_run = False

    def capture_begin(self, dry_run=False):
        self._dry_run = bool(dry_run)
        self._graph.capture_begin()

    def capture_end(self):
        self._graph.capture_end()
        if self._dry_run:
            self.replay()

    def replay(self, asynchronous=False):
        """Submits the captured launches on the current stream; with asynchronous=False the host
        waits for them, as the real stack's default."""
        self._graph.replay()
        if not asynchronous:
            _C.synchronize()

    def reset(self):
        self._graph.reset()

    def launches(self):
        """How many launches the capture compiled (one per mark_step inside it, plus the last)."""
        return self._graph.launches()


_capture_stream = None


def is_current_stream_capturing():
    return _C.is_capturing()


class graph:
    """`with graph(g, stream=None, dry_run=False):` captures the block into g, on `stream` (a shared
    side stream when None), after a synchronisation."""

    def __init__(self, hpu_graph, stream=None, dry_run=False):
        from hpusim.torch import hpu
        global _capture_stream
        if stream is None:
            if _capture_stream is None:
                _capture_stream = hpu.Stream()
            stream = _capture_stream
        self.hpu_graph, self.dry_run = hpu_graph, dry_run
        self.stream_context = hpu.stream(stream)

    def __enter__(self):
        from hpusim.torch import hpu
        hpu.synchronize()
        gc.collect()
        self.stream_context.__enter__()
        self.hpu_graph.capture_begin(dry_run=self.dry_run)

    def __exit__(self, kind, value, traceback):
        try:
            if kind is None:
                self.hpu_graph.capture_end()
            else:
                self.hpu_graph._graph.capture_abort()
        finally:
            self.stream_context.__exit__(kind, value, traceback)
        return False


def _flatten(outputs):
    if isinstance(outputs, torch.Tensor):
        return (outputs,), True
    if isinstance(outputs, (tuple, list)) and all(isinstance(o, torch.Tensor) for o in outputs):
        return tuple(outputs), False
    raise TypeError("make_graphed_callables: a graphed callable must return a Tensor or a tuple of Tensors")


def _graph_training(callables, sample_args, params, warmups, allow_unused_input, asynchronous, dry_run):
    """The graphed versions of `callables` (run in that order): per callable a forward graph and
    a backward graph (captured in reverse order) in an autograd Function over the user's
    arguments and `params` (the tensors that get gradients without being arguments)."""
    static_inputs = [tuple(args) + p for args, p in zip(sample_args, params)]

    def grad_inputs(inputs):
        return tuple(i for i in inputs if i.requires_grad)

    for c, args, inputs in zip(callables, sample_args, static_inputs):
        for _ in range(warmups):
            outputs, _ = _flatten(c(*args))
            wanted = tuple(o for o in outputs if o.requires_grad)
            if wanted and grad_inputs(inputs):
                torch.autograd.grad(wanted, grad_inputs(inputs), grad_outputs=tuple(torch.ones_like(o) for o in wanted),
                                    allow_unused=allow_unused_input)
            from hpusim.torch import core
            core.mark_step()

    forward_graphs, static_outputs, single = [], [], []
    for c, args in zip(callables, sample_args):
        g = HPUGraph()
        with graph(g, dry_run=dry_run):
            outputs, one = _flatten(c(*args))
        forward_graphs.append(g)
        static_outputs.append(outputs)
        single.append(one)

    backward_graphs, static_grad_outputs, static_grad_inputs = [None] * len(callables), [None] * len(callables), \
        [None] * len(callables)
    for k in reversed(range(len(callables))):
        outputs, inputs = static_outputs[k], static_inputs[k]
        grad_outs = tuple(torch.empty_like(o) if o.requires_grad else None for o in outputs)
        g = HPUGraph()
        with graph(g, dry_run=dry_run):
            wanted = tuple(o for o in outputs if o.requires_grad)
            needed = grad_inputs(inputs)
            grads = torch.autograd.grad(wanted, needed, grad_outputs=tuple(x for x in grad_outs if x is not None),
                                        only_inputs=True, allow_unused=allow_unused_input) if wanted and needed else ()
        grads = iter(grads)
        backward_graphs[k] = g
        static_grad_outputs[k] = grad_outs
        static_grad_inputs[k] = tuple(next(grads) if i.requires_grad else None for i in inputs)

    def graphed(k, user_arg_count):
        fwd, bwd = forward_graphs[k], backward_graphs[k]
        inputs, outputs = static_inputs[k], static_outputs[k]
        grad_outs, grad_ins = static_grad_outputs[k], static_grad_inputs[k]

        class Graphed(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *args):
                for static, given in zip(inputs[:user_arg_count], args[:user_arg_count]):
                    if static.data_ptr() != given.data_ptr():
                        static.copy_(given)
                fwd.replay(asynchronous)
                return tuple(o.detach() for o in outputs)

            @staticmethod
            @torch.autograd.function.once_differentiable
            def backward(ctx, *grads):
                for static, given in zip(grad_outs, grads):
                    if static is not None and given is not None and static.data_ptr() != given.data_ptr():
                        static.copy_(given)
                bwd.replay(asynchronous)
                return tuple(b.detach() if b is not None else None for b in grad_ins)

        def run(*user_args):
            out = Graphed.apply(*(tuple(user_args) + params[k]))
            return out[0] if single[k] else out

        return run

    return [graphed(k, len(sample_args[k])) for k in range(len(callables))]


def make_graphed_callables(callables, sample_args, warmups=0, allow_unused_input=False, asynchronous=False,
                           disable_tensor_cache=False, dry_run=False):
    """Each callable (a module or a function; a tuple of them runs in that order) captured as a
    forward graph and a backward graph, wrapped in an autograd Function: a call copies its
    arguments into the static inputs and replays the forward graph; backward copies the incoming
    gradients into static tensors and replays the backward graph. sample_args: a tuple of Tensors
    per callable. A module's forward is replaced (used while module.training is what it was at
    capture); a function's graphed version is returned."""
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    for c, args in zip(callables, sample_args):
        if isinstance(c, torch.nn.Module):
            assert not (c._backward_hooks or c._forward_hooks or c._forward_pre_hooks), \
                "Modules must not have hooks registered at the time they are passed to make_graphed_callables."
            assert all(not b.requires_grad for b in c.buffers()), \
                "In any module passed to make_graphed_callables, buffers must have requires_grad=False."
        assert isinstance(args, tuple) and all(isinstance(a, torch.Tensor) for a in args), \
            "make_graphed_callables: sample_args for each callable must be a tuple of Tensors (no other types)."
    params = [tuple(c.parameters()) if isinstance(c, torch.nn.Module) else () for c in callables]
    runs = _graph_training(callables, sample_args, params, warmups, allow_unused_input, asynchronous, dry_run)
    results = []
    for k, c in enumerate(callables):
        run = runs[k]
        if isinstance(c, torch.nn.Module):
            original, training = c.forward, c.training

            def forward(*args, _run=run, _original=original, _module=c, _training=training):
                return _run(*args) if _module.training == _training else _original(*args)

            c.forward = forward
            results.append(c)
        else:
            results.append(run)
    return results[0] if just_one else tuple(results)


def _key_of(value):
    """What a cache key holds of one argument: a tensor's shape, dtype, layout (the view) and
    whether it needs grad; a Python value itself; containers recursively."""
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), value.dtype, tuple(value.stride()), value.storage_offset(),
                value.requires_grad)
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(_key_of(v) for v in value)
    if isinstance(value, dict):
        return ("dict",) + tuple((k, _key_of(v)) for k, v in sorted(value.items()))
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


def _env_flag(name):
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on", "y", "t")


class ModuleCacher:
    """`ModuleCacher(max_graphs=10)(model=model, inplace=True)`: training forwards (model.training,
    grad enabled, lazy mode) run as graphs, a forward and a backward graph per distinct call: the
    tensors' shapes and layouts and every other argument's value (defaults filled in) and the
    autocast state make the key. Past max_graphs graphs, new keys run uncached (no eviction); so
    does every other forward (eval, no_grad)."""

    def __init__(self, max_graphs=10):
        self.max_graphs = max_graphs

    def __call__(self, model, use_lfu=False, inplace=True, allow_unused_input=False, asynchronous=False,
                 have_grad_accumulation=False, log_frequency=100, verbose=False, disable_tensor_cache=False,
                 dry_run=False):
        for name, value in (("use_lfu", use_lfu), ("have_grad_accumulation", have_grad_accumulation),
                            ("disable_tensor_cache", disable_tensor_cache or _env_flag("PT_HPUGRAPH_DISABLE_TENSOR_CACHE"))):
            if value:
                raise NotImplementedError(f"ModuleCacher: {name}=True is not supported by hpusim")
        if not inplace:
            raise NotImplementedError("ModuleCacher: inplace=False is not supported by hpusim (the model is changed in place)")
        signature = inspect.signature(model.forward)
        for p in signature.parameters.values():
            assert p.kind not in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL), \
                f"ModuleCacher: the forward's parameter '{p.name}' is positional-only or *args, which cannot be cached"
        if any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values()):
            print("ModuleCacher: **kwargs of the forward are not part of the cache key and are dropped", file=sys.stderr)
        original = model.forward
        cache = {}
        stats = {"graphs": 0, "hits": 0, "uncached_train": 0, "uncached_eval": 0, "forwards": 0}
        dry_run = dry_run or _env_flag("PT_HPUGRAPH_ENABLE_DRY_RUN")

        def forward(*args, **kwargs):
            stats["forwards"] += 1
            if verbose and stats["forwards"] % log_frequency == 0:
                print(f"HPU Graph Statistics: max_graphs {self.max_graphs}, graphs {len(cache)}, hits {stats['hits']}, "
                      f"uncached train {stats['uncached_train']}, uncached eval {stats['uncached_eval']}, "
                      f"forwards {stats['forwards']}", file=sys.stderr)
            if not (model.training and torch.is_grad_enabled() and _C.lazy_mode()):
                stats["uncached_train" if model.training else "uncached_eval"] += 1
                return original(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = {k: v for k, v in bound.arguments.items() if signature.parameters[k].kind != inspect.Parameter.VAR_KEYWORD}
            key = (tuple((k, _key_of(v)) for k, v in arguments.items()), torch.is_autocast_enabled("hpu"))
            entry = cache.get(key)
            if entry is None:
                if len(cache) >= self.max_graphs:
                    stats["uncached_train"] += 1
                    return original(**arguments)
                names = [k for k, v in arguments.items() if isinstance(v, torch.Tensor)]
                fixed = {k: v for k, v in arguments.items() if k not in names}

                def call(*tensors, _names=names, _fixed=fixed):
                    return original(**_fixed, **dict(zip(_names, tensors)))

                run = _graph_training((call,), (tuple(arguments[k] for k in names),), (tuple(model.parameters()),), 0,
                                      allow_unused_input, asynchronous, dry_run)[0]
                entry = cache[key] = (run, names)
                stats["graphs"] += 1
            else:
                stats["hits"] += 1
            run, names = entry
            return run(*(arguments[k] for k in names))

        def statistics():
            return dict(stats, cached=len(cache))

        model.forward = forward
        model.hpu_graph_statistics = statistics
        return model


def wrap_in_hpu_graph(module, asynchronous=False, disable_tensor_cache=False, dry_run=False, max_graphs=None):
    """Inference through HPU graphs: `module.forward` is replaced in place (the module is
    returned) by a cache of graphs keyed by the arguments (tensor shapes and layouts, Python
    values, the autocast state). A miss captures the forward with these arguments as its static
    inputs and replays it once; a hit copies the new arguments into the static inputs, replays and
    returns the same output tensors as every other hit of that key. Past max_graphs entries, new
    keys run the original forward (no eviction). Keyword arguments bypass_hpu_graphs=True (the
    original forward) and warmup_mode=True (no replay: a mark_step and the cached outputs) are
    taken off before the call. module.clear_cache() drops the graphs."""
    if disable_tensor_cache or _env_flag("PT_HPUGRAPH_DISABLE_TENSOR_CACHE"):
        raise NotImplementedError("wrap_in_hpu_graph: disable_tensor_cache=True is not supported by hpusim "
                                  "(the static inputs and outputs stay cached)")
    if isinstance(module, torch.nn.Module):
        original = module.forward
    else:
        original = module
    cache = {}
    asynchronous_replay = asynchronous

    def forward(*args, bypass_hpu_graphs=False, warmup_mode=False, cache_tensors_list=None, **kwargs):
        if bypass_hpu_graphs or not _C.lazy_mode():
            return original(*args, **kwargs)
        key = (_key_of(args), _key_of(kwargs), torch.is_autocast_enabled("hpu"), torch.is_grad_enabled())
        entry = cache.get(key)
        if entry is None:
            if max_graphs is not None and len(cache) >= max_graphs:
                return original(*args, **kwargs)
            g = HPUGraph()
            with torch.no_grad(), graph(g, dry_run=False):
                outputs = original(*args, **kwargs)
            inputs = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
            entry = cache[key] = (g, inputs, outputs)
            g.replay(asynchronous_replay)
            return outputs
        g, inputs, outputs = entry
        if warmup_mode:
            from hpusim.torch import core
            core.mark_step()
            return outputs
        given = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
        for static, new in zip(inputs, given):
            if static.data_ptr() != new.data_ptr():
                static.copy_(new, non_blocking=True)
        g.replay(asynchronous_replay)
        return outputs

    def clear_cache():
        cache.clear()

    def clear_inputs():
        for _, inputs, _ in cache.values():
            inputs.clear()

    if isinstance(module, torch.nn.Module):
        module.forward = forward
        module.clear_cache = clear_cache
        module.clear_inputs = clear_inputs
        return module
    forward.clear_cache = clear_cache
    return forward


wrap_in_hpu_graph_func = wrap_in_hpu_graph

__all__ = ["HPUGraph", "graph", "is_current_stream_capturing", "make_graphed_callables", "ModuleCacher",
           "wrap_in_hpu_graph", "wrap_in_hpu_graph_func"]
