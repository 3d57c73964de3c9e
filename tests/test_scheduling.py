"""The suite's scheduler (tests/scheduling.py): a worker that dies fails its one test, and the rest still run."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent

PASSING = "def test_a():\n    pass\n\ndef test_b():\n    pass\n"
CRASHING = "import os\n\ndef test_before():\n    pass\n\ndef test_crash():\n    os.abort()\n\ndef test_after():\n    pass\n"
ALONE = "import os\n\ndef test_alone():\n    os.abort()\n"


def test_a_dead_worker_fails_one_test_and_the_session_ends(tmp_path):
    # 5 files x 2 passing tests, a file whose middle test aborts the interpreter, a file of that one test alone
    # and a file whose last test aborts: 2 of 4 files crash under xdist 3.8's own loadfile scheduling hang.
    for i in range(5):
        (tmp_path / f"test_pass_{i}.py").write_text(PASSING)
    (tmp_path / "test_crash_middle.py").write_text(CRASHING)
    (tmp_path / "test_crash_alone.py").write_text(ALONE)
    (tmp_path / "test_crash_last.py").write_text(CRASHING.replace("def test_after():\n    pass\n", "")
                                                 .replace("test_crash", "test_crash_last"))
    shutil.copy(HERE / "scheduling.py", tmp_path)
    (tmp_path / "conftest.py").write_text("from scheduling import make_scheduler\n\n\n"
                                          "def pytest_xdist_make_scheduler(config, log):\n"
                                          "    return make_scheduler(config, log)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    # Workers dying together race with their replacements' start (a third of 2-worker runs met one before the
    # scheduler handled it), so the 2-worker case runs three times; 3 and 4 workers crash all at once.
    for workers in (1, 2, 2, 2, 3, 4):
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:faulthandler",
                               "-n", str(workers), "--dist", "loadfile", "--no-loadscope-reorder", str(tmp_path)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        summary = done.stdout.strip().splitlines()[-1]
        # 10 + 3 + 1 + 2 = 16 tests: the three aborting tests fail once each, the 13 others pass (none run twice)
        assert done.returncode == 1 and "3 failed, 13 passed" in summary, (workers, done.stdout[-3000:])
