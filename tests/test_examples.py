"""Each example runs for a few steps (and the CNN example saves and resumes)."""
from __future__ import annotations

import os
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
sys.path.insert(0, EXAMPLES)


def test_autograd_demo_runs(capsys):
    import runpy

    runpy.run_path(os.path.join(EXAMPLES, "autograd_demo.py"), run_name="__main__")
    assert "w = 3.0000, b = 2.0000" in capsys.readouterr().out


def test_cnn_trains_saves_and_resumes(tmp_path, capsys):
    pytest.importorskip("sklearn", reason="the Digits dataset ships with scikit-learn (the 'examples' extra)")
    import train_cnn

    ck = str(tmp_path / "ck.pt")
    acc = train_cnn.main(["--epochs", "1", "--max-steps", "5", "--checkpoint", ck, "--no-progress"])
    assert 0.0 <= acc <= 1.0 and os.path.exists(ck)
    acc2 = train_cnn.main(["--epochs", "2", "--max-steps", "5", "--checkpoint", ck, "--resume", "--no-progress"])
    out = capsys.readouterr().out
    assert "resumed from" in out and "epoch  2" in out and "final test accuracy" in out
    assert 0.0 <= acc2 <= 1.0


def test_char_gpt_runs():
    import math

    import char_gpt

    losses = char_gpt.main(["--steps", "6", "--layers", "1", "--d-model", "32", "--heads", "2", "--context", "16",
                            "--batch-size", "8", "--sample-every", "6"])
    # an untrained model predicts about uniformly over the 56 characters
    assert len(losses) == 6 and all(math.isfinite(v) for v in losses)
    assert abs(losses[0] - math.log(56)) < 0.5


def test_lstm_packed_runs():
    import lstm_packed

    acc = lstm_packed.main(["--steps", "3", "--batch-size", "8"])
    assert 0.0 <= acc <= 1.0
