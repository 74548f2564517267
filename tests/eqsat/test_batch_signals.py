"""`eqsat batch` stopped by SIGTERM or SIGINT: a real process, its workers, its output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eqsat import cli

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "data" / "corpus" / "index-exprs.jsonl"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads the process table in /proc")


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None when there is none."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state, ppid = text.rsplit(")", 1)[1].split()[:2]
    return state, int(ppid)


def _alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] not in "ZX"  # a zombie has ended


def _children(pid: int) -> set[int]:
    return {int(d) for d in os.listdir("/proc")
            if d.isdigit() and (_stat(int(d)) or ("", 0))[1] == pid}


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _until(cond, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def reap(p: subprocess.Popen) -> None:
    """A test's process killed and reaped when a check failed before it ended."""
    if p.poll() is None:
        p.kill()
        p.wait()


def _rows(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize("sig, jobs, to_stdout", [
    (signal.SIGTERM, "2", False),
    (signal.SIGINT, "1", True),
], ids=["SIGTERM-jobs2-file", "SIGINT-jobs1-stdout"])
def test_a_signal_stops_the_batch_and_its_workers(tmp_path, sig, jobs, to_stdout):
    """The batch stops its workers before it exits (none outlives it, none finishes its
    chunk), every row it wrote is whole, its status is 128 + the signal and stderr
    says how many rows it wrote."""
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text(CORPUS.read_text() * 6)  # far more work than the test waits for
    argv = [sys.executable, "-m", "eqsat", "batch", "--jobs", jobs, str(src)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("EQSAT_DEBUG", None)
    with open(dst, "w") as out, open(tmp_path / "err.txt", "w") as err:
        p = subprocess.Popen(argv + ([] if to_stdout else ["-o", str(dst)]),
                             stdout=out if to_stdout else subprocess.DEVNULL, stderr=err,
                             env=env, cwd=REPO,
                             # SIGINT as a terminal's, whatever this process ignores
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            kids: set[int] = set()
            assert _until(lambda: kids.update(_children(p.pid)) or _rows(dst)
                          or p.poll() is not None, 120), "no row in 120 s"
            assert p.poll() is None, "the batch ended before the signal"
            kids |= _children(p.pid)
            workers = {k for k in kids if "spawn_main" in _cmdline(k)}
            assert len(workers) == int(jobs)
            p.send_signal(sig)
            rc = p.wait(timeout=60)
        finally:
            reap(p)
    # the workers ended (and were reaped) before the batch did; the multiprocessing
    # resource tracker leaves when its pipe from them closes
    assert not [k for k in workers if _alive(k)]
    assert _until(lambda: not any(_alive(k) for k in kids), 30), \
        [_cmdline(k) for k in kids if _alive(k)]
    assert rc == 128 + sig
    rows = _rows(dst)
    assert dst.read_text().endswith("\n") and rows
    assert all("out" in json.loads(r) for r in rows)
    total = len(src.read_text().splitlines())
    assert len(rows) < total
    name = "<stdout>" if to_stdout else str(dst)
    assert (tmp_path / "err.txt").read_text() == \
        f"eqsat batch: stopped by {sig.name}: {len(rows)} of {total} rows written to {name}\n"


def sleepy_chunk(chunk):
    """A chunk worker that answers case 1 at once and sleeps two minutes on any other."""
    ids = [json.loads(job[1])["id"] for job in chunk]
    if ids != [1]:
        time.sleep(120)
    return [{"id": i} for i in ids]


SLEEPY = [(n, json.dumps({"id": n}), {}) for n in range(1, 5)]


def _workers_of(pid: int) -> set[int]:
    return {k for k in _children(pid) if "spawn_main" in _cmdline(k)}


def test_closing_a_batch_early_kills_its_busy_workers():
    before = _workers_of(os.getpid())
    rows = cli.batch_results(SLEEPY, 2, 1, sleepy_chunk)
    assert next(rows) == {"id": 1}
    workers = _workers_of(os.getpid()) - before
    assert len(workers) == 2
    rows.close()  # both on a two-minute case
    assert not [k for k in workers if _alive(k)]


SCRIPT = """
import json
from eqsat.cli import batch_results
from tests.eqsat.test_batch_signals import SLEEPY, sleepy_chunk
for row in batch_results(SLEEPY, 2, 1, sleepy_chunk):
    print(json.dumps(row), flush=True)
"""


def test_the_workers_die_with_a_killed_batch(tmp_path):
    """SIGKILL leaves the batch no time to stop its workers: the kernel kills them
    (rather than let them sleep two minutes on their cases)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with open(tmp_path / "out.txt", "w") as out:
        p = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=out,
                             stderr=subprocess.DEVNULL, env=env, cwd=REPO)
        try:
            assert _until(lambda: _rows(tmp_path / "out.txt") or p.poll() is not None, 120)
            workers = _workers_of(p.pid)
            assert p.poll() is None and len(workers) == 2
            p.kill()
            p.wait(timeout=60)
        finally:
            reap(p)
    assert _until(lambda: not any(_alive(k) for k in workers), 30)
    assert _rows(tmp_path / "out.txt") == ['{"id": 1}']


def test_a_signal_in_a_held_section_acts_as_it_ends_and_once():
    """A row being written is not cut short: the first signal raises as the section
    ends, the later ones are ignored, the handlers are put back."""
    term, intr = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    stop = cli._Stop()
    with stop:
        assert signal.getsignal(signal.SIGTERM) is stop  # (else the kill ends pytest)
        with pytest.raises(cli._Interrupted) as e:
            with stop.held():
                os.kill(os.getpid(), signal.SIGTERM)
                assert _until(lambda: stop.signum is not None, 10)
                done = True  # the handler ran, and the section goes on
        os.kill(os.getpid(), signal.SIGINT)  # the stop is under way: ignored
        time.sleep(0.1)
    assert done and e.value.signum == signal.SIGTERM and isinstance(e.value, KeyboardInterrupt)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == (term, intr)


def test_a_signal_ignored_before_the_batch_stays_ignored():
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as nohup or `cmd &` leave it
    try:
        with cli._Stop() as stop:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is stop
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
