"""Generate docs/compat.md: which of PyTorch's public modules and names fabric has.

    python tools/gen_compat_doc.py --inventory   # walk the installed torch (2.13): rewrite tools/torch_inventory.json
    python tools/gen_compat_doc.py               # rewrite docs/compat.md from the inventory and fabric
    python tools/gen_compat_doc.py --check       # exit 1 if docs/compat.md is stale

The inventory lists every public module of PyTorch's package tree (every path
component without a leading ``_``, minus the non-API folders in ``SKIP``) and
the public names each exports (``__all__``, else the classes and functions it
defines). It needs torch; the coverage does not: in a clean interpreter with
fabric's torch alias installed, every inventory path is imported as
``import torch.<path>`` and checked: the module must be fabric's module of
that path (``sys.modules`` holds one object for both names), and each name
either exists there or is listed as missing in docs/compat.md.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INVENTORY = os.path.join(ROOT, "tools", "torch_inventory.json")
DOC = os.path.join(ROOT, "docs", "compat.md")

# folders of the torch package that hold no Python API (headers, binaries, code generators' data)
SKIP = ("torch.include", "torch.lib", "torch.bin", "torch.share", "torch.utils.hipify", "torch.utils.model_dump")
ROOTS = ("torch", "torchvision")


# --- the inventory (needs torch) ---------------------------------------------------------------------------------

def _module_paths(package_dir: str, package: str) -> list[str]:
    """Every public module path under ``package_dir`` (files and packages), sorted."""
    paths = [package]
    for entry in sorted(os.listdir(package_dir)):
        full = os.path.join(package_dir, entry)
        name = entry[:-3] if entry.endswith(".py") else entry
        if name.startswith("_") or "." in name or "-" in name:
            continue
        dotted = f"{package}.{name}"
        if any(dotted == s or dotted.startswith(s + ".") for s in SKIP):
            continue
        if os.path.isdir(full) and os.path.exists(os.path.join(full, "__init__.py")):
            paths.extend(_module_paths(full, dotted))
        elif entry.endswith(".py"):
            paths.append(dotted)
    return paths


def _public_names(module) -> list[str]:
    import types

    flags = []
    inner = vars(module).get("m")
    if type(module) is not types.ModuleType and isinstance(inner, types.ModuleType):
        # torch.backends.cudnn & co. are "PropModule"s: the flags are properties of the module's class
        flags = [n for n in vars(type(module)) if not n.startswith("_") and n != "m"]
        module = inner
    names = vars(module).get("__all__")
    if names is None:
        names = [n for n, v in vars(module).items()
                 if not n.startswith("_") and getattr(v, "__module__", None) == module.__name__]
    return sorted({str(n) for n in [*names, *flags] if not str(n).startswith("_")})


def build_inventory() -> dict:
    import importlib
    import warnings

    import torch

    modules = {}
    for root in ROOTS:
        try:
            package = importlib.import_module(root)
        except ImportError:
            continue
        for path in _module_paths(os.path.dirname(package.__file__), root):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    module = importlib.import_module(path)
                except BaseException as e:
                    modules[path] = {"names": [], "torch_import_error": f"{type(e).__name__}: {e}"[:200]}
                    continue
            modules[path] = {"names": _public_names(module)}
    return {"torch": torch.__version__.split("+")[0], "modules": modules}


# --- coverage (fabric under the alias, in a clean interpreter) -----------------------------------------------------

_PROBE = r"""
import importlib, json, sys, warnings
# an editable install of another checkout would answer for submodules this checkout lacks
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
import fabric
fabric.install_torch_alias()
from fabric._torch_alias import fabric_module_name
inventory = json.load(open(sys.argv[1]))
report = {}
for path, info in inventory["modules"].items():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            module = importlib.import_module(path)
        except ModuleNotFoundError as e:
            if e.name is not None and (path == e.name or path.startswith(e.name + ".")):
                report[path] = {"status": "missing"}
            else:  # a fabric module that needs something not installed: fabric modules must import without extras
                report[path] = {"status": "error", "error": f"{type(e).__name__}: {e}"[:300]}
            continue
        except BaseException as e:
            report[path] = {"status": "error", "error": f"{type(e).__name__}: {e}"[:300]}
            continue
    target = fabric_module_name(path)
    same = sys.modules.get(path) is module and sys.modules.get(target) is module
    missing = [n for n in info["names"] if not hasattr(module, n)]
    report[path] = {"status": "present", "fabric": module.__name__, "same_object": same, "missing": missing}
json.dump(report, sys.stdout)
"""


def coverage(inventory_path: str = INVENTORY) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", _PROBE, inventory_path], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=900)
    if out.returncode != 0:
        raise RuntimeError("the coverage probe failed:\n" + out.stderr[-3000:])
    return json.loads(out.stdout)


# --- the document --------------------------------------------------------------------------------------------------

def _area(path: str) -> str:
    parts = path.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else parts[0]


def render(inventory: dict, report: dict) -> str:
    modules = inventory["modules"]
    present = [p for p in modules if report[p]["status"] == "present"]
    errors = [p for p in modules if report[p]["status"] == "error"]
    total_names = sum(len(modules[p]["names"]) for p in present)
    missing_names = sum(len(report[p]["missing"]) for p in present)
    lines = [
        "# PyTorch compatibility: module by module",
        "",
        f"Generated by `python tools/gen_compat_doc.py` from PyTorch {inventory['torch']}'s public package tree "
        "(`tools/torch_inventory.json`); do not edit by hand. `tests/test_compat_doc.py` fails when this page is "
        "stale.",
        "",
        "Under the torch alias (`python -m fabric.run`, `fabric.install_torch_alias()`), `import torch.<path>` "
        "gives the fabric module `fabric.<path>` itself (PyTorch paths that live elsewhere in fabric are mapped: "
        "`torch.utils.data` is `fabric.data`, `torch.optim.adamw` is `fabric.optim.adam` ..., see "
        "`fabric._torch_alias.PATH_MAP`), and a module fabric lacks raises `ModuleNotFoundError` naming it. "
        "Public names are those in the module's `__all__`, else the classes and functions it defines.",
        "",
        f"- PyTorch modules walked: {len(modules)} (private `_` paths and non-API folders skipped)",
        f"- present in fabric: {len(present)}; missing: {len(modules) - len(present) - len(errors)}"
        + (f"; failing to import: {len(errors)}" if errors else ""),
        f"- public names of the present modules: {total_names - missing_names} of {total_names} exist in fabric",
        "",
    ]
    split = [p for p in present if not report[p]["same_object"]]
    if split:
        lines += ["## Modules that are not one object under both names", ""]
        lines += [f"- `{p}`" for p in split] + [""]
    if errors:
        lines += ["## Modules that fail to import under the alias", ""]
        lines += [f"- `{p}`: {report[p]['error']}" for p in errors] + [""]
    lines += ["## Present modules", "", "| PyTorch module | fabric module | names | missing names |",
              "| --- | --- | --- | --- |"]
    for p in present:
        r, names = report[p], modules[p]["names"]
        have = len(names) - len(r["missing"])
        missing = ", ".join(f"`{n}`" for n in r["missing"]) or "—"
        lines.append(f"| `{p}` | `{r['fabric']}` | {have}/{len(names)} | {missing} |")
    lines += ["", "## Missing modules", "",
              "Each raises `ModuleNotFoundError` under the alias. Grouped by area; the count is the module's "
              "public names in PyTorch.", ""]
    by_area: dict = {}
    for p in modules:
        if report[p]["status"] == "missing":
            by_area.setdefault(_area(p), []).append(p)
    for area, paths in by_area.items():
        listed = ", ".join(f"`{q}` ({len(modules[q]['names'])})" for q in paths)
        lines.append(f"- **{area}** ({len(paths)}): {listed}")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inventory", action="store_true", help="rebuild tools/torch_inventory.json (needs torch)")
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/compat.md is stale")
    ap.add_argument("--print-inventory", action="store_true", help="write the inventory to stdout (needs torch)")
    args = ap.parse_args()
    if args.print_inventory:
        import contextlib

        with contextlib.redirect_stdout(sys.stderr):  # some torch modules print when imported
            inventory = build_inventory()
        json.dump(inventory, sys.stdout, indent=0, sort_keys=True)
        return 0
    if args.inventory:
        with open(INVENTORY, "w") as f:
            json.dump(build_inventory(), f, indent=0, sort_keys=True)
            f.write("\n")
    with open(INVENTORY) as f:
        inventory = json.load(f)
    text = render(inventory, coverage())
    if args.check:
        stale = False
        with open(DOC) as f:
            if f.read() != text:
                print("docs/compat.md is stale: run python tools/gen_compat_doc.py", file=sys.stderr)
                stale = True
        return 1 if stale else 0
    with open(DOC, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
