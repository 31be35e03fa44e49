"""Ordinary PyTorch scripts give the same output under fabric.

Each script in ``scripts/`` runs twice in a subprocess: with the real torch
(``python script.py``) and on fabric (``python -m fabric.run script.py``).
The two stdouts are compared line by line: the text between numbers must be
identical (after writing ``fabric.`` as ``torch.``), integers must be equal,
and floats must agree to a relative tolerance or to one unit of the last
printed digit (two correct values can round to neighbouring printed digits).

Run one script by hand to see a diff::

    python tests/compat/test_scripts.py s09_cnn
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS_DIR = os.path.join(HERE, "scripts")
ROOT = os.path.dirname(os.path.dirname(HERE))
# ``name@float64`` runs the script with float64 as the default dtype: a training
# loop whose float32 run drifts (Adam amplifies rounding in tiny gradients) must
# agree tightly there, which shows the drift is rounding and not a wrong formula
FLOAT64_VARIANTS = [f"{n}@float64" for n in ("s08_mlp_regression", "s09_cnn", "s10_lstm", "s11_transformer",
                                                  "s12_gan", "s15_seq2seq_misc")]
SCRIPTS = sorted(f[:-3] for f in os.listdir(SCRIPTS_DIR) if f.endswith(".py")) + FLOAT64_VARIANTS
TIMEOUT = 120

# relative tolerance per script (default DEFAULT_RTOL): training loops run
# several float32 steps, where summation order differences grow
DEFAULT_RTOL = 2e-5
RTOL = {
    "s08_mlp_regression": 1e-4, "s09_cnn": 2e-3, "s10_lstm": 1e-4, "s11_transformer": 1e-4,
    "s12_gan": 1e-4, "s13_module_utils": 1e-4, "s15_seq2seq_misc": 1e-4,
}

_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w])|(?<![\w.])[-+]?(?:nan|inf)(?![\w])")


RTOL.update({n: 1e-6 for n in FLOAT64_VARIANTS})


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONHASHSEED"] = "0"
    return env


_WRAPPER = """import runpy
import torch
torch.set_default_dtype(torch.{dtype})
runpy.run_path({path!r}, run_name="__main__")
"""


def run_script(name: str, use_fabric: bool) -> subprocess.CompletedProcess:
    base, _, dtype = name.partition("@")
    path = os.path.join(SCRIPTS_DIR, base + ".py")
    if dtype:
        wrapper = os.path.join(tempfile.mkdtemp(prefix="compat_"), f"{base}_{dtype}.py")
        with open(wrapper, "w") as f:
            f.write(_WRAPPER.format(dtype=dtype, path=path))
        path = wrapper
    cmd = [sys.executable, "-m", "fabric.run", path] if use_fabric else [sys.executable, path]
    try:
        return subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=TIMEOUT, cwd=SCRIPTS_DIR, env=_env())
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(cmd, -9, e.stdout or "", f"timed out after {TIMEOUT}s")


def _last_digit_unit(tok: str) -> float:
    """One unit of the last printed digit of a float token (``0.1235`` -> 1e-4)."""
    mant, _, exp = tok.lower().partition("e")
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    return 10.0 ** (-decimals + (int(exp) if exp else 0))


def _is_float_token(tok: str) -> bool:
    t = tok.lower()
    return "." in t or "e" in t or "nan" in t or "inf" in t


def compare_outputs(expected: str, actual: str, rtol: float) -> list[str]:
    """Differences between the torch output ``expected`` and the fabric output ``actual``."""
    problems = []
    exp_lines = expected.replace("fabric.", "torch.").splitlines()
    act_lines = actual.replace("fabric.", "torch.").splitlines()
    if len(exp_lines) != len(act_lines):
        problems.append(f"line count: torch {len(exp_lines)}, fabric {len(act_lines)}")
    for n, (e, a) in enumerate(zip(exp_lines, act_lines), 1):
        if e == a:
            continue
        e_toks, a_toks = _NUMBER.findall(e), _NUMBER.findall(a)
        if _NUMBER.sub("#", e) != _NUMBER.sub("#", a) or len(e_toks) != len(a_toks):
            problems.append(f"line {n}: text differs\n  torch:  {e}\n  fabric: {a}")
            continue
        # float32 results near zero carry an absolute error of about eps times the line's scale
        scale = max((abs(float(t)) for t in e_toks if _is_float_token(t) and float(t) == float(t)
                     and abs(float(t)) != float("inf")), default=0.0)
        for et, at in zip(e_toks, a_toks):
            if not _is_float_token(et) or not _is_float_token(at):
                if et != at:
                    problems.append(f"line {n}: integer {et} != {at}\n  torch:  {e}\n  fabric: {a}")
                    break
                continue
            ev, av = float(et), float(at)
            if math.isnan(ev) or math.isnan(av):
                ok = math.isnan(ev) and math.isnan(av)
            else:
                ok = abs(ev - av) <= max(rtol * max(abs(ev), scale), _last_digit_unit(et) * 1.0001, 1e-30) or ev == av
            if not ok:
                problems.append(f"line {n}: {et} != {at}\n  torch:  {e}\n  fabric: {a}")
                break
        if len(problems) > 20:
            break
    return problems


RUNNER = os.path.join(HERE, "_runner.py")
BATCH_TIMEOUT = 300


def run_all(use_fabric: bool, names: list[str]) -> dict:
    """Run ``names`` in one interpreter (tests/compat/_runner.py): ``{name: CompletedProcess-like}``."""
    specs = [os.path.join(SCRIPTS_DIR, n.partition("@")[0] + ".py") + (("@" + n.partition("@")[2])
             if "@" in n else "") for n in names]
    with tempfile.TemporaryDirectory(prefix="compat_") as tmp:
        out = os.path.join(tmp, "out.json")
        cmd = [sys.executable] + (["-m", "fabric.run"] if use_fabric else []) + [RUNNER, out] + specs
        try:
            proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=BATCH_TIMEOUT, cwd=SCRIPTS_DIR,
                                  env=_env())
        except subprocess.TimeoutExpired:
            proc = subprocess.CompletedProcess(cmd, -9, "", f"the batch timed out after {BATCH_TIMEOUT}s")
        if proc.returncode != 0 or not os.path.exists(out):
            return {n: subprocess.CompletedProcess(cmd, proc.returncode or 1, "", proc.stderr[-3000:])
                    for n in names}
        with open(out) as f:
            data = json.load(f)
    res = {}
    for n, spec in zip(names, specs):
        r = data[spec]
        res[n] = subprocess.CompletedProcess(cmd, 1 if r["error"] else 0, r["stdout"], r["error"] or "")
    return res


@pytest.fixture(scope="module")
def outputs():
    """Every script under torch and under fabric: two interpreters, side by side."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        ref, got = pool.map(lambda fab: run_all(fab, SCRIPTS), (False, True))
    return {**{(n, False): r for n, r in ref.items()}, **{(n, True): r for n, r in got.items()}}


@pytest.mark.torch
@pytest.mark.parametrize("name", SCRIPTS)
def test_script_matches_torch(name, outputs):
    ref, got = outputs[(name, False)], outputs[(name, True)]
    assert ref.returncode == 0, f"the script fails under torch:\n{ref.stderr[-3000:]}"
    assert got.returncode == 0, f"the script fails under fabric:\n{got.stderr[-3000:]}"
    problems = compare_outputs(ref.stdout, got.stdout, RTOL.get(name, DEFAULT_RTOL))
    assert not problems, f"{name}: fabric output differs from torch\n" + "\n".join(problems)


def test_compare_outputs_rules():
    assert compare_outputs("tensor([0.1235, 2])", "tensor([0.1234, 2])", 1e-6) == []
    assert compare_outputs("tensor([0.1235, 2])", "tensor([0.1233, 2])", 1e-6)
    assert compare_outputs("torch.float32 3", "fabric.float32 3", 0) == []
    assert compare_outputs("shape 3", "shape 4", 1.0)
    assert compare_outputs("loss 1.000000", "loss  1.000000", 1.0)
    assert compare_outputs("x nan", "x nan", 0) == []
    assert compare_outputs("a\nb", "a", 0)


if __name__ == "__main__":
    for nm in sys.argv[1:] or SCRIPTS:
        r, g = run_script(nm, False), run_script(nm, True)
        if g.returncode:
            print(f"== {nm}: fabric failed\n{g.stderr[-3000:]}")
            continue
        probs = compare_outputs(r.stdout, g.stdout, RTOL.get(nm, DEFAULT_RTOL))
        print(f"== {nm}: {'OK' if not probs else ''}")
        print("\n".join(probs))
