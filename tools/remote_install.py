"""The README's install line for a remote, run as written against a remote on this machine.

    python tools/remote_install.py VENV_PYTHON        (make package-check)

Clones this repository's committed tree bare into build/remote/, serves it over Git's HTTP protocol from
127.0.0.1 (a port the system picks; nothing leaves the machine), and has ``VENV_PYTHON``'s pip install
``pgdiag-rl @ git+http://127.0.0.1:PORT/pgdiag.git`` — the README's ``git+https://HOST/OWNER/REPO.git`` with
the local server's scheme — then imports it. Exit status 1 with pip's last lines when the install fails.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(python: str) -> int:
    python = os.path.abspath(python) if os.sep in python else python
    remote = os.path.join(ROOT, "build", "remote")
    shutil.rmtree(remote, ignore_errors=True)
    subprocess.run(["git", "clone", "--quiet", "--bare", ROOT, os.path.join(remote, "pgdiag.git")], check=True)
    # Git's "dumb" HTTP protocol: plain files and the index update-server-info writes
    subprocess.run(["git", "-C", os.path.join(remote, "pgdiag.git"), "update-server-info"], check=True)
    handler = functools.partial(_Quiet, directory=remote)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"git+http://127.0.0.1:{server.server_address[1]}/pgdiag.git"
    try:
        done = subprocess.run([python, "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps",
                               f"pgdiag-rl @ {url}"], capture_output=True, text=True)
    finally:
        server.shutdown()
    if done.returncode:
        print("\n".join((done.stdout + done.stderr).splitlines()[-15:]), file=sys.stderr)
        return 1
    where = subprocess.run([python, "-c", "import pgdiag; print(pgdiag.__version__, pgdiag.__file__)"],
                           capture_output=True, text=True, cwd=remote, check=True).stdout.strip()
    print(f"remote install: pgdiag-rl @ {url} -> pgdiag {where}")
    return 0


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:   # pip's output is what matters; the server's log is noise
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
