"""Runs a tools/*.py script on a temporary file that holds given text, for the scripts' tests."""
import os
import subprocess
import sys
import tempfile


def run_on_text(tool, text, *args):
    """The CompletedProcess (stdout and stderr as text) of `python3 TOOL FILE ARGS...`, FILE holding text."""
    fd, path = tempfile.mkstemp()
    with os.fdopen(fd, "w") as f:
        f.write(text)
    try:
        return subprocess.run([sys.executable, tool, path, *args], capture_output=True, text=True)
    finally:
        os.unlink(path)
