"""fabric.save to paths: symlinks written through, permissions kept, devices/FIFOs written in place,
nothing left behind by a process killed mid-save (issue 19, dangerous 3)."""
from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading

import pytest

import fabric
from fabric.serialization import _files

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file semantics")


def _obj(v):
    return {"v": fabric.tensor([float(v)])}


def test_symlink_is_written_through(tmp_path):
    target = tmp_path / "real.pt"
    link = tmp_path / "latest.pt"
    fabric.save(_obj(1), target)
    link.symlink_to(target)
    fabric.save(_obj(2), link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert fabric.load(target)["v"].tolist() == [2.0]  # the link's target has the new contents
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.pt", "real.pt"]


def test_existing_mode_is_kept(tmp_path):
    path = tmp_path / "ck.pt"
    fabric.save(_obj(1), path)
    os.chmod(path, 0o664)
    fabric.save(_obj(2), path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o664
    os.chmod(path, 0o600)
    fabric.save(_obj(3), path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and fabric.load(path)["v"].tolist() == [3.0]


@pytest.mark.parametrize("umask,expected", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_new_files_follow_the_umask(tmp_path, umask, expected):
    old = os.umask(umask)
    try:
        fabric.save(_obj(1), tmp_path / "new.pt")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.pt").st_mode) == expected


def test_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = {}

    def reader():
        with open(fifo, "rb") as fh:
            received["data"] = fh.read()

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    fabric.save(_obj(7), fifo)
    th.join(30)
    assert not th.is_alive(), "nothing was written to the FIFO"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still a FIFO, not replaced by a regular file
    import io

    assert fabric.load(io.BytesIO(received["data"]))["v"].tolist() == [7.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_character_device_is_written_in_place():
    if not os.path.exists("/dev/null") or not stat.S_ISCHR(os.stat("/dev/null").st_mode):
        pytest.skip("no /dev/null character device")
    with pytest.MonkeyPatch.context() as mp:  # a replacement would have to go through os.replace: forbid it
        def no_replace(*a, **k):
            raise AssertionError("fabric.save tried to replace a character device")

        mp.setattr(os, "replace", no_replace)
        fabric.save(_obj(1), "/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


_KILLED_SAVE = textwrap.dedent("""
    import os, sys, time
    import fabric
    from fabric import serialization
    from fabric.serialization import _files
    if sys.argv[2] == "named":
        _files._open_anonymous = lambda folder: None  # as on a filesystem without O_TMPFILE
    def stuck(fh, *args, **kwargs):
        fh.write(b"partial checkpoint" * 1000)
        fh.flush()
        print("writing", flush=True)
        time.sleep(600)
    serialization._write_zip = stuck
    fabric.save({"w": fabric.ones(10)}, sys.argv[1])
""")


def _kill_mid_save(path, mode):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(fabric.__file__)),
                                                       os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_SAVE, str(path), mode], stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout.readline().strip() == b"writing"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(60)


def test_kill_during_save_leaves_no_temp_file(tmp_path):
    path = tmp_path / "ck.pt"
    fabric.save(_obj(1), path)
    _kill_mid_save(path, "default")
    left = sorted(p.name for p in tmp_path.iterdir())
    fd = _files._open_anonymous(str(tmp_path))
    if fd is None:
        pytest.skip("this filesystem has no O_TMPFILE: see the named-temp test")
    os.close(fd)
    assert left == ["ck.pt"]
    assert fabric.load(path)["v"].tolist() == [1.0]


def test_named_temp_files_of_dead_savers_are_cleaned_on_next_save(tmp_path):
    path = tmp_path / "ck.pt"
    fabric.save(_obj(1), path)
    _kill_mid_save(path, "named")
    orphans = [p.name for p in tmp_path.iterdir() if p.name.startswith(".fabric-save-")]
    assert len(orphans) == 1  # the dead process's temp file
    assert fabric.load(path)["v"].tolist() == [1.0]  # the old checkpoint is intact
    live = tmp_path / f".fabric-save-{_files._host()}-{os.getpid()}-abc123"
    live.write_bytes(b"in progress")  # a save still running in a live process: must be kept
    fabric.save(_obj(2), path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["ck.pt", live.name])
    assert fabric.load(path)["v"].tolist() == [2.0]


def test_failed_save_keeps_old_file_and_leaves_nothing(tmp_path, monkeypatch):
    path = tmp_path / "ck.pt"
    fabric.save(_obj(1), path)
    monkeypatch.setattr(_files, "_open_anonymous", lambda folder: None)
    from fabric import serialization

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(serialization, "_write_zip", boom)
    with pytest.raises(OSError, match="disk full"):
        fabric.save(_obj(2), path)
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["ck.pt"]
    assert fabric.load(path)["v"].tolist() == [1.0]


def test_save_argument_checks(tmp_path):
    with pytest.raises(AttributeError, match="expected 'f' to be string, path, or a file-like object"):
        fabric.save(_obj(1), 42)
    with pytest.raises(NotImplementedError, match="legacy"):
        fabric.save(_obj(1), tmp_path / "x.pt", _use_new_zipfile_serialization=False)
    assert not (tmp_path / "x.pt").exists()
