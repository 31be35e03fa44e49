"""Where ``fabric.save(obj, path)`` writes, and how it stays atomic.

* A symlink is followed: the link's target is replaced (PyTorch writes
  through links too), the link itself stays.
* A regular file (or a new one) is replaced atomically: the checkpoint is
  written to a temporary file in the same folder and renamed over the
  target, so a crash leaves the old file intact.  The new file keeps the old
  one's permission bits; a new file gets ``0o666`` minus the umask, as
  ``open()`` would give it.
* Anything else (a character device such as ``/dev/null``, a FIFO) is
  opened and written directly, never replaced.
* The temporary file is anonymous where the OS allows it (Linux
  ``O_TMPFILE``), so a process killed mid-save leaves nothing behind.
  Elsewhere it is named ``.fabric-save-<host>-<pid>-<token>``; the next save
  into the same folder deletes those whose process is gone.

Example::

    >>> import os, tempfile, fabric
    >>> d = tempfile.mkdtemp()
    >>> fabric.save({"w": fabric.ones(1)}, os.path.join(d, "ck.pt"))
    >>> os.listdir(d)
    ['ck.pt']
"""
from __future__ import annotations

import contextlib
import os
import secrets
import socket
import stat
import time

TEMP_PREFIX = ".fabric-save-"
_LEGACY_STALE_AFTER_S = 600  # unnamed-owner temp files of older fabric versions: untouched this long means dead


def _host():
    return socket.gethostname().replace("/", "_") or "host"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(folder: str) -> None:
    """Delete fabric temp files in ``folder`` left by processes that died mid-save."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith(TEMP_PREFIX)]
    except OSError:
        return
    host = _host()
    for name in names:
        path = os.path.join(folder, name)
        parts = name[len(TEMP_PREFIX):].rsplit("-", 2)
        try:
            if len(parts) == 3 and parts[1].isdigit():
                stale = parts[0] == host and not _alive(int(parts[1]))
            else:  # written by an older fabric (no owner in the name)
                st = os.lstat(path)
                stale = stat.S_ISREG(st.st_mode) and time.time() - st.st_mtime > _LEGACY_STALE_AFTER_S
            if stale:
                os.unlink(path)
        except OSError:
            pass


def _temp_name(folder):
    return os.path.join(folder, f"{TEMP_PREFIX}{_host()}-{os.getpid()}-{secrets.token_hex(6)}")


def _open_anonymous(folder):
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.exists("/proc/self/fd"):
        return None
    try:
        return os.open(folder, flag | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError:  # filesystem without O_TMPFILE support
        return None


def _publish_anonymous(fd, folder):
    """Give the anonymous file a (temporary) name in ``folder``; linkat(AT_SYMLINK_FOLLOW) on /proc/self/fd."""
    name = _temp_name(folder)
    dir_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:  # dst_dir_fd makes os.link use linkat, which follows the /proc link to the open file
        os.link(f"/proc/self/fd/{fd}", os.path.basename(name), dst_dir_fd=dir_fd, follow_symlinks=True)
    finally:
        os.close(dir_fd)
    return name


@contextlib.contextmanager
def open_for_save(path):
    """A binary file to write the checkpoint to; on clean exit it becomes ``path``."""
    real = os.path.realpath(os.fspath(path))
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(real, "wb") as fh:  # devices, FIFOs: write in place, never replace
            yield fh
        return
    folder = os.path.dirname(real)
    remove_stale_temps(folder)
    fd = _open_anonymous(folder)
    named = None
    if fd is None:
        named = _temp_name(folder)
        fd = os.open(named, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        if st is not None:
            os.fchmod(fd, stat.S_IMODE(st.st_mode))
        with os.fdopen(fd, "wb", closefd=False) as fh:
            yield fh
            fh.flush()
            os.fsync(fd)
        if named is None:
            named = _publish_anonymous(fd, folder)
        os.replace(named, real)
        named = None
    finally:
        os.close(fd)
        if named is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(named)
