"""Directories for what the servers under test keep (state dirs, token files), out of every place
a confined command may write: a confining server refuses a state dir or a token file in a temp
dir such as /tmp, since it would trust later what its commands wrote there."""

import os
import tempfile

ROOT = os.path.join(os.path.expanduser("~"), ".local", "state", "agentty-tests")


def private_dir():
    """A fresh 0700 directory under ~/.local/state/agentty-tests, removed when closed."""
    os.makedirs(ROOT, mode=0o700, exist_ok=True)
    return tempfile.TemporaryDirectory(prefix="py-", dir=ROOT)


def private_file(text):
    """A 0600 file holding `text` in a fresh private directory; its path. Removed at exit."""
    directory = private_dir()
    _KEPT.append(directory)
    path = os.path.join(directory.name, "file")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, text.encode())
    os.close(fd)
    return path


# The directories of private_file, kept open until the interpreter exits (then removed).
_KEPT = []
