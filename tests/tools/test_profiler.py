"""fabric.profiler: what is recorded (every op on every dispatch path, backward
nodes, optimizer steps, DataLoader fetches), the table in PyTorch's layout,
chrome traces, schedules, and that nothing observes when no profile runs."""
from __future__ import annotations

import gzip
import json
import os
import sys
import threading

import numpy as np
import pytest

import fabric
from fabric.autograd import observe
from fabric.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler


def _names(prof):
    return [e.name for e in prof.events()]


def _avg(prof, key, **kw):
    return {e.key: e for e in prof.key_averages(**kw)}[key]


def test_every_fast_path_is_recorded_with_and_without_grad():
    a = fabric.ones(4, 4)
    g = fabric.ones(4, 4, requires_grad=True)
    for x in (a, g):
        with profile(record_shapes=True) as prof:
            _ = x + x, x * 2.0, x @ x, x[1:3], x.reshape(16), x.sum(), x.exp(), x.relu(), x[0], fabric.add(x, x)
        assert _names(prof) == ["aten::add", "aten::mul", "aten::mm", "aten::slice", "aten::view", "aten::sum",
                                "aten::exp", "aten::relu", "aten::select", "aten::add"]
        shapes = [e.input_shapes for e in prof.events()]
        assert shapes[0] == [[4, 4], [4, 4]] and shapes[1] == [[4, 4], []] and shapes[2] == [[4, 4], [4, 4]]
    assert observe.hook.observer is None


def test_backward_nodes_and_their_ops_are_nested():
    x = fabric.randn(3, 3, requires_grad=True)
    with profile() as prof:
        y = (x @ x).exp().sum()
        y.backward()
    names = _names(prof)
    for node in ("SumBackward0", "ExpBackward0", "MmBackward0", "torch::autograd::AccumulateGrad"):
        assert f"autograd::engine::evaluate_function: {node}" in names
        assert node in names
    evs = {e.name: e for e in prof.events()}
    mm_bw = evs["MmBackward0"]
    assert mm_bw.cpu_parent is evs["autograd::engine::evaluate_function: MmBackward0"]
    assert sorted(c.name for c in mm_bw.cpu_children) == ["aten::mm", "aten::mm", "aten::transpose",
                                                          "aten::transpose"]
    assert _avg(prof, "aten::mm").count == 3  # one forward, two in MmBackward0
    for e in prof.events():
        assert e.cpu_time_total >= e.self_cpu_time_total >= -1e-6
        assert e.start_us <= e.end_us
        for c in e.cpu_children:
            assert e.start_us <= c.start_us and c.end_us <= e.end_us


def test_results_do_not_change_while_profiling():
    def step():
        fabric.manual_seed(0)
        m = fabric.nn.Sequential(fabric.nn.Linear(5, 4), fabric.nn.ReLU(), fabric.nn.Linear(4, 2))
        opt = fabric.optim.Adam(m.parameters(), lr=0.1)
        x = fabric.randn(7, 5)
        for _ in range(2):
            opt.zero_grad()
            loss = (m(x)[1:] ** 2).mean()
            loss.backward()
            opt.step()
        return [p.detach().numpy().copy() for p in m.parameters()], loss.item()

    plain, plain_loss = step()
    with profile():
        seen, seen_loss = step()
    assert plain_loss == seen_loss
    for a, b in zip(plain, seen, strict=True):
        np.testing.assert_array_equal(a, b)


def test_optimizer_step_and_dataloader_fetches():
    w = fabric.zeros(3, requires_grad=True)
    opt = fabric.optim.SGD([w], lr=0.5)
    loader = fabric.data.DataLoader(fabric.data.TensorDataset(fabric.arange(10.0)), batch_size=4)
    with profile() as prof:
        for (b,) in loader:
            loss = (w * b[:3].sum()).sum() if b.shape[0] >= 3 else w.sum()
            loss.backward()
            opt.step()
    assert _avg(prof, "Optimizer.step#SGD.step").count == 3
    fetch = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    assert _avg(prof, fetch).count == 4  # three batches and the fetch that ends the loop
    trace = prof.events()
    assert any(e.name == "Optimizer.step#SGD.step" and e.kind == "python_function" for e in trace)


def test_record_function_context_and_decorator():
    @record_function("my_fn")
    def f(x):
        return x * 3.0

    x = fabric.ones(2)
    with profile() as prof, record_function("outer"):
        f(x)
    evs = {e.name: e for e in prof.events()}
    assert evs["my_fn"].cpu_parent is evs["outer"]
    assert evs["aten::mul"].cpu_parent is evs["my_fn"]
    assert evs["outer"].kind == "user_annotation"
    with record_function("no profiler: nothing happens"):
        f(x)
    assert observe.hook.observer is None


def test_user_function_and_its_inner_ops():
    class Cube(fabric.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, gy):
            (x,) = ctx.saved_tensors
            return 3 * x * x * gy

    x = fabric.tensor([1.0, 2.0], requires_grad=True)
    with profile() as prof:
        Cube.apply(x).sum().backward()
    evs = {e.name: e for e in prof.events()}
    assert [c.name for c in evs["Cube"].cpu_children] == ["aten::mul", "aten::mul"]
    assert "CubeBackward" in evs
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0])


def test_memory_counts_new_arrays_not_views():
    x = fabric.ones(8, 8)  # float32: 256 bytes
    with profile(profile_memory=True) as prof:
        y = x * 2.0
        y[2:4]
        y.reshape(64)
        y.sum()
    assert _avg(prof, "aten::mul").self_cpu_memory_usage == 256
    assert _avg(prof, "aten::slice").self_cpu_memory_usage == 0
    assert _avg(prof, "aten::view").self_cpu_memory_usage == 0
    assert _avg(prof, "aten::sum").self_cpu_memory_usage == 4
    table = prof.key_averages().table()
    assert "CPU Mem" in table and "Self CPU Mem" in table and "256 B" in table


def test_in_place_ops_allocate_nothing():
    x = fabric.ones(8, 8)
    with profile(profile_memory=True) as prof:
        x.add_(1.0)
        x.mul_(2.0)
        x[0] = 3.0
    for e in prof.events():
        assert e.self_cpu_memory_usage == 0, e.name


def test_memory_of_a_region_includes_its_children_once():
    x = fabric.ones(4, 4, requires_grad=True)
    with profile(profile_memory=True) as prof, record_function("block"):
        (x * 2.0).sum()
    block = _avg(prof, "block")
    assert block.self_cpu_memory_usage == 0
    assert block.cpu_memory_usage == 64 + 4


def test_table_layout():
    x = fabric.randn(4, 4, requires_grad=True)
    with profile(record_shapes=True) as prof:
        (x @ x).sum().backward()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=3)
    lines = table.splitlines()
    assert lines[0] == lines[2] == lines[-2] and set(lines[0]) == {"-", " "}
    header = [h.strip() for h in lines[1].split("  ") if h.strip()]
    assert header == ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls",
                      "Input Shapes"]
    assert len(lines) == 3 + 3 + 2  # rules and header, row_limit rows, rule and total
    assert lines[-1].startswith("Self CPU time total: ")
    # rows are sorted by self CPU time
    rows = prof.key_averages()
    top = sorted(rows, key=lambda e: e.self_cpu_time_total, reverse=True)[:3]
    for r, e in zip(lines[3:6], top, strict=True):
        assert r.strip().startswith(e.key[:50])
        assert f"{e.count}" in r.split()
    # percentages of self time add up to 100 over all rows
    full = prof.key_averages().table(row_limit=-1).splitlines()[3:-2]
    total = sum(float(r.split("%")[0].split()[-1]) for r in full)
    assert abs(total - 100.0) < 0.1 * len(full)


def test_group_by_input_shape():
    with profile(record_shapes=True) as prof:
        fabric.ones(2, 3) * 2.0
        fabric.ones(2, 3) * 2.0
        fabric.ones(5) * 2.0
    rows = [(e.key, str(e.input_shapes), e.count) for e in prof.key_averages(group_by_input_shape=True)]
    assert ("aten::mul", "[[2, 3], []]", 2) in rows and ("aten::mul", "[[5], []]", 1) in rows
    assert _avg(prof, "aten::mul").count == 3


def test_with_stack_names_this_file(tmp_path):
    with profile(with_stack=True) as prof:
        fabric.ones(3) * 2.0
    ev = prof.events()[0]
    assert ev.stack and os.path.basename(__file__) in ev.stack[0]
    assert "test_with_stack_names_this_file" in ev.stack[0]
    assert "Source Location" in prof.key_averages(group_by_stack_n=2).table()
    out = tmp_path / "stacks.txt"
    prof.export_stacks(str(out))
    line = out.read_text().splitlines()[0]
    assert line.split(";")[-1].startswith("aten::mul ") and int(line.rsplit(" ", 1)[1]) >= 0


def test_chrome_trace_json(tmp_path):
    x = fabric.randn(3, 3, requires_grad=True)
    with profile(record_shapes=True, profile_memory=True) as prof:
        with record_function("fwd"):
            y = (x * x).sum()
        y.backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    assert data["displayTimeUnit"] == "ms" and isinstance(data["traceEvents"], list)
    xs = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert [e["name"] for e in xs] == _names(prof)
    for e in xs:
        assert {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"} <= set(e)
        assert e["dur"] >= 0 and e["pid"] == os.getpid()
    mul = next(e for e in xs if e["name"] == "aten::mul")
    assert mul["cat"] == "cpu_op" and mul["args"]["Input Dims"] == [[3, 3], [3, 3]]
    assert mul["args"]["Input type"] == ["float", "float"]
    fwd = next(e for e in xs if e["name"] == "fwd")
    assert fwd["cat"] == "user_annotation"
    assert fwd["ts"] <= mul["ts"] and mul["ts"] + mul["dur"] <= fwd["ts"] + fwd["dur"] + 1e-3
    mem = [e for e in data["traceEvents"] if e.get("name") == "[memory]"]
    assert any(e["args"]["Bytes"] == 36 for e in mem)
    gz = tmp_path / "trace.json.gz"
    prof.export_chrome_trace(str(gz))
    with gzip.open(gz, "rt") as f:
        assert json.loads(f.read())["traceEvents"] == data["traceEvents"]


def test_schedule_actions_match_pytorch_rules():
    s = schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    got = [s(i).name for i in range(11)]
    assert got == ["NONE", "NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE", "NONE", "WARMUP", "RECORD",
                   "RECORD_AND_SAVE", "NONE", "NONE"]
    s2 = schedule(wait=3, warmup=1, active=1, skip_first_wait=1)
    assert [s2(i).name for i in range(6)] == ["WARMUP", "RECORD_AND_SAVE", "NONE", "NONE", "NONE", "WARMUP"]
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        schedule(wait=0, warmup=0, active=0)
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=0, warmup=0, active=1)


def test_schedule_drives_recording_and_on_trace_ready(tmp_path):
    traces = []

    def ready(p):
        traces.append([e.name for e in p.events() if not e.name.startswith("ProfilerStep")])
        tensorboard_trace_handler(str(tmp_path), worker_name="w")(p)

    x = fabric.ones(2)
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=1), on_trace_ready=ready) as prof:
        for i in range(6):
            x * float(i)  # each step's op is recognisable by nothing but its position
            if i in (2, 3):
                x + 1.0
            prof.step()
    assert traces == [["aten::mul", "aten::add", "aten::mul", "aten::add"]]
    files = os.listdir(tmp_path)
    assert len(files) == 1 and files[0].startswith("w.") and files[0].endswith(".pt.trace.json")
    names = [e["name"] for e in json.loads((tmp_path / files[0]).read_text())["traceEvents"] if e["ph"] == "X"]
    assert "ProfilerStep#2" in names and "ProfilerStep#3" in names and "ProfilerStep#1" not in names
    assert observe.hook.observer is None


def test_events_from_other_threads_carry_their_thread():
    x = fabric.ones(3)
    tids = {}

    def work():
        tids["worker"] = threading.get_native_id()
        x * 5.0

    with profile() as prof:
        t = threading.Thread(target=work)
        t.start()
        t.join()
        x * 2.0
    by_thread = {e.thread for e in prof.events() if e.name == "aten::mul"}
    assert by_thread == {tids["worker"], threading.get_native_id()}


def test_the_hook_is_removed_after_an_error():
    with pytest.raises(ValueError), profile():
        fabric.ones(2) * 2.0
        raise ValueError("boom")
    assert observe.hook.observer is None


def test_nothing_observes_when_not_profiling():
    """Off, no function of the observation machinery runs (the per-op cost
    is the one attribute check in each dispatch path)."""
    a, b = fabric.ones(4, requires_grad=True), fabric.ones(4, requires_grad=True)
    called = []

    def tracer(frame, event, arg):
        if event == "call":
            called.append(frame.f_code.co_filename)

    sys.setprofile(tracer)
    try:
        y = (a + b) * 2.0
        y = y[1:].reshape(3).exp().sum()
        y.backward()
    finally:
        sys.setprofile(None)
    assert not [f for f in called if f.endswith(("observe.py", "_recorder.py"))]


def test_legacy_autograd_profiler():
    x = fabric.ones(3, requires_grad=True)
    with fabric.autograd.profiler.profile(record_shapes=True) as prof, \
            fabric.autograd.profiler.record_function("block"):
        (x * 2.0).sum().backward()
    assert [e.name for e in prof.function_events][:3] == ["block", "aten::mul", "aten::sum"]
    assert "aten::mul" in prof.table() and str(prof) == prof.table()
    assert prof.key_averages().table().startswith("-")
    with fabric.autograd.profiler.profile(enabled=False) as off:
        x * 2.0
    with pytest.raises(AssertionError, match="didn't finish"):
        _ = off.function_events


@pytest.mark.torch
def test_table_header_matches_pytorch():
    import torch

    def header(table):
        lines = table.splitlines()
        return lines[0][lines[0].index("  "):], lines[1][lines[1].index("Name") + 4:]

    t = torch.ones(4, 4)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as tp:
        t * 2
    x = fabric.ones(4, 4)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as fp:
        x * 2
    assert header(fp.key_averages().table()) == header(tp.key_averages().table())
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as tp:
        t * 2
    with profile(activities=[ProfilerActivity.CPU]) as fp:
        x * 2
    assert header(fp.key_averages().table()) == header(tp.key_averages().table())
    assert {e.key for e in fp.key_averages()} <= {e.key for e in tp.key_averages()}


def test_cuda_times_and_memory_through_fake_cupy():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "cuda"))
    try:
        import fake_cupy
    finally:
        sys.path.pop(0)
    with fake_cupy.installed():
        x = fabric.ones(16, 16, device="cuda", requires_grad=True)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True) as prof:
            (x * 2.0).sum().backward()
        mul = _avg(prof, "aten::mul")
        assert mul.device_time_total > 0 and mul.self_device_time_total > 0
        assert mul.count == 2 and mul.self_device_memory_usage == 2 * 16 * 16 * 4  # forward and MulBackward0
        table = prof.key_averages().table(sort_by="cuda_time_total")
        assert "Self CUDA" in table and "CUDA total" in table and "Self CUDA time total:" in table
        bw = _avg(prof, "MulBackward0")
        assert bw.self_device_time_total == 0 and bw.device_time_total > 0  # its ops' GPU time, not its own
        data = prof.events()
        kernels = [e for e in __import__("fabric.profiler._events", fromlist=["x"]).chrome_trace(data)["traceEvents"]
                   if e.get("cat") == "kernel"]
        assert kernels and all(k["pid"] == "GPU 0" for k in kernels)


@pytest.mark.cuda
def test_cuda_times_on_a_device():
    x = fabric.randn(256, 256, device="cuda", requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True) as prof:
        (x @ x).relu().sum().backward()
    mm = _avg(prof, "aten::mm")
    assert mm.count == 3 and mm.device_time_total > 0 and mm.self_device_memory_usage > 0
    assert "Self CUDA" in prof.key_averages().table()
