"""fabric.jit markers, fork/wait, fabric.compiler: eager behaviour matches PyTorch."""
import typing
from typing import Optional

import pytest

import fabric
from fabric.jit import frontend


def test_ignore_unused_export_mark_and_return_the_function():
    def f(x):
        return x + 1

    assert fabric.jit.ignore(f) is f and f(1) == 2
    assert f._torchscript_modifier == fabric.jit.FunctionModifiers.IGNORE
    g = fabric.jit.ignore(drop=True)(lambda x: x)
    assert g._torchscript_modifier == fabric.jit.FunctionModifiers.UNUSED
    assert fabric.jit.unused(f) is f and f._torchscript_modifier == fabric.jit.FunctionModifiers.UNUSED
    assert fabric.jit.export(f) is f and f._torchscript_modifier == fabric.jit.FunctionModifiers.EXPORT
    with pytest.raises(RuntimeError, match="Argument to @torch.jit.ignore must be a bool or a function but got 3"):
        fabric.jit.ignore(3)


def test_unused_on_property_marks_getter():
    class M(fabric.nn.Module):
        @fabric.jit.unused
        @property
        def size(self):
            return 4

    assert M().size == 4
    assert M.size.fget._torchscript_modifier == fabric.jit.FunctionModifiers.UNUSED


def test_module_decorated_with_markers_runs_eagerly():
    class M(fabric.nn.Module):
        scale: fabric.jit.Final[int]

        def __init__(self):
            super().__init__()
            self.scale = 3
            self.lin = fabric.nn.Linear(2, 2)

        @fabric.jit.ignore
        def debug(self, x):
            return x

        def forward(self, x):
            if not fabric.jit.is_scripting() and not fabric.jit.is_tracing():
                x = self.debug(x)
            return self.lin(x) * self.scale

    m = M()
    x = fabric.randn(3, 2)
    assert fabric.allclose(m(x), m.lin(x) * 3)


def test_annotate_attribute_final():
    assert fabric.jit.annotate(list[int], []) == []
    a = fabric.jit.Attribute(3, int)
    assert a.value == 3 and a.type is int and a == (3, int)
    import typing
    assert fabric.jit.Final is typing.Final


def test_fork_wait_future():
    fut = fabric.jit.fork(lambda a, b: a * b, 6, 7)
    assert fut.done() and fabric.jit.wait(fut) == 42

    def boom():
        raise ValueError("bad")

    f2 = fabric.jit.fork(boom)
    with pytest.raises(ValueError, match="bad"):
        fabric.jit.wait(f2)
    f = fabric.jit.Future()
    chained = f.then(lambda fut: fut.value() + 1)
    seen = []
    f.add_done_callback(lambda fut: seen.append(fut.value()))
    assert not f.done()
    f.set_result(1)
    assert chained.wait() == 2 and seen == [1]
    with pytest.raises(RuntimeError, match="only be marked completed once"):
        f.set_result(2)


def test_compiler_names():
    assert fabric.compiler.is_compiling() is False
    assert fabric.compiler.is_dynamo_compiling() is False
    assert fabric.compiler.is_exporting() is False

    @fabric.compiler.disable
    def f(x):
        return x + 1

    @fabric.compiler.disable(recursive=False)
    def g(x):
        return x + 2

    assert f(1) == 2 and g(1) == 3
    assert fabric.compiler.allow_in_graph(f) is f
    assert fabric.compiler.assume_constant_result(f) is f
    assert fabric.compiler.list_backends() == ["inductor"]   # eager / aot_eager are debug backends, as in torch
    fabric.compiler.reset()


@pytest.mark.parametrize("ann,text", [
    (int, "int"), (float, "float"), (bool, "bool"), (fabric.Tensor, "Tensor"),
    (list[fabric.Tensor], "List[Tensor]"), (Optional[int], "Optional[int]"),  # noqa: UP045
    (tuple[fabric.Tensor, int], "Tuple[Tensor, int]"), (dict[str, float], "Dict[str, float]"),
    (typing.List[fabric.Tensor], "List[Tensor]"), (typing.Tuple[int, float], "Tuple[int, float]"),  # noqa: UP006
    (typing.Dict[str, int], "Dict[str, int]"),  # noqa: UP006
    (list[int], "List[int]"), (Optional[list[tuple[int, float]]], "Optional[List[Tuple[int, float]]]"),  # noqa: UP045
    ("Optional[Tensor]", "Optional[Tensor]"), (int | None, "Optional[int]"),
])
def test_parse_annotation(ann, text):
    assert str(frontend.parse_annotation(ann)) == text


def test_parse_annotation_rejects_unknown():
    with pytest.raises(ValueError, match="Unknown type annotation"):
        frontend.parse_annotation(set)


def test_type_accepts_values():
    t = frontend.parse_annotation(Optional[list[int]])  # noqa: UP045
    assert t.accepts(None) and t.accepts([1, 2]) and not t.accepts([1.5]) and not t.accepts([True])
    assert frontend.FloatType.accepts(2) and not frontend.IntType.accepts(2.0)
    assert frontend.TensorType.accepts(fabric.zeros(1)) and not frontend.TensorType.accepts(1)


def _try_block(x):
    try:
        x = x + 1
    except Exception:
        pass
    return x


def _lambda(x):
    g = lambda y: y
    return g(x)


def _varargs(x, *args):
    return x


def _nested_def(x):
    def inner(y):
        return y
    return inner(x)


def _with(x):
    with fabric.no_grad():
        y = x * 2
    return y


@pytest.mark.parametrize("fn,cls,msg,marker", [
    (_try_block, frontend.UnsupportedNodeError, "try blocks aren't supported", "    try:\n    ~~~ <--- HERE"),
    (_lambda, frontend.UnsupportedNodeError, "Lambda aren't supported", "~ <--- HERE"),
    (_varargs, frontend.NotSupportedError, "Compiled functions can't take variable number of arguments",
     "~~~~ <--- HERE"),
    (_nested_def, frontend.UnsupportedNodeError, "function definitions aren't supported", "    ~~~ <--- HERE"),
    (_with, frontend.UnsupportedNodeError, "with statements aren't supported", "    ~~~~ <--- HERE"),
])
def test_unsupported_constructs_name_construct_and_line(fn, cls, msg, marker):
    import inspect

    with pytest.raises(cls) as info:
        frontend.get_function_def(fn)
    text = str(info.value)
    assert text.startswith(msg)
    assert marker in text
    first = inspect.getsourcelines(fn)[1]
    line = int(text.split(", line ")[1].split("\n")[0])
    assert first <= line <= first + 4 and __file__ in text


def test_executor_settings_are_recorded():
    prev = fabric.jit.set_fusion_strategy([("DYNAMIC", 3)])
    assert fabric.jit.set_fusion_strategy(prev) == [("DYNAMIC", 3)]
    with pytest.raises(RuntimeError, match="Unrecognized fusion strategy"):
        fabric.jit.set_fusion_strategy([("FAST", 1)])
    fabric.jit.enable_onednn_fusion(True)
    assert fabric.jit.onednn_fusion_enabled()
    fabric.jit.enable_onednn_fusion(False)
    with fabric.jit.fuser("fuser1"), fabric.jit.optimized_execution(False):
        pass

    @fabric.jit.script_if_tracing
    def f(x):
        return x + 1

    assert f(1) == 2 and fabric.jit.interface(int) is int
