"""``eqsat compare`` on bad input and signals: the input read line by line (a line that
is no case named on stderr, the other lines compared), the report printed whole, and
SIGTERM/SIGINT ending the command with 128 + the signal."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eqsat import compare
from eqsat.cli import main
from tests.eqsat.test_batch_signals import _until, reap

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "data" / "corpus" / "index-exprs.jsonl"

A = b'{"id": "a", "expr": "(add (var x 0 9) 0)", "tinygrad": "(var x 0 9)"}'
C = b'{"id": "c", "expr": "(idiv (mul (var y 0 9) 4) 4)", "tinygrad": "(var y 0 9)"}'

#: a file's lines between A and C (A on line 1, C after them), the flags, and what
#: stderr then names: (line, message) per line left out
CASES = [
    ([b'{"id": "b", "expr": "(add \xff 0)"}'], [],
     [(2, "not UTF-8 text: byte 0xff at byte 27 of line 2 (invalid start byte)")]),
    ([b'{"id": "b", "expr": '], [], [(2, "bad JSON: Expecting value: line 1 column 21")]),
    ([b'{"id": "b", "expr": "(add 1"}'], [],
     [(2, "case 'b': field 'expr':1:7: expected ')' to close '(add'")]),
    ([b'{"id": "b", "expr": "1", "tinygrad": "(mul"}'], [],
     [(2, "case 'b': field 'tinygrad':1:5: expected ')' to close '(mul'")]),
    ([b"[1]"], [], [(2, "expected a JSON object with id and expr")]),
    ([b'{"expr": "1"}'], [], [(2, "needs the field 'id'")]),
    ([b'{"id": 7, "expr": 1}'], [], [(2, "case 7: needs the field 'expr' (a string)")]),
    ([b'{"id": "b", "expr": "1"}'], ["--tinygrad"],
     [(2, "case 'b': needs the field 'tinygrad' (a string) holding tinygrad's output")]),
    ([b"[" * 100_000 + b"]" * 100_000], [], [(2, "bad JSON: nested too deeply")]),
    ([b"", b"  ", b'{"id": "b", "expr": "(add \xc3 0)"}', b"{"], [],
     [(4, "not UTF-8 text: byte 0xc3 at byte 27 of line 4 (invalid continuation byte)"),
      (5, "bad JSON: Expecting property name")]),
    ([], ["--tinygrad"], []),
]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("middle, flags, left_out", CASES)
@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_a_bad_line_is_named_and_the_others_compared(capsys, tmp_path, middle, flags,
                                                     left_out, end):
    p = tmp_path / "in.jsonl"
    p.write_bytes(end.join([A, *middle, C]) + end)
    rc, out, err = _run(capsys, "compare", str(p), "--engines", "baseline", "--json",
                        *flags)
    assert rc == 0, err
    said = [ln for ln in err.splitlines() if ln.startswith("eqsat compare: ")]
    assert len(said) == len(left_out)
    for ln, (n, msg) in zip(said, left_out, strict=True):
        assert ln.startswith(f"eqsat compare: {p}:{n}: {msg}"), ln
    rep = json.loads(out)
    assert [c["id"] for c in rep["per_case"]] == ["a", "c"] and rep["cases"] == 2
    assert rep["all"]["cost"]["baseline"] == 0
    assert [e["line"] for e in rep.get("errors", [])] == [n for n, _ in left_out]


@pytest.mark.parametrize("data, error", [
    (b"", "no cases"),
    (b"\n \r\n\r", "no cases"),
    (b"\xef\xbb\xbf", "no cases"),
    (b"\xff\n", "no cases (1 line left out, named above)"),
    (b"[1]\n{\n", "no cases (2 lines left out, named above)"),
    ('{"id": 1}\n'.encode("utf-16"), "UTF-16 text (it starts with the byte-order mark ff fe); "
                                     "the comparison reads UTF-8"),
])
def test_a_file_of_no_case_is_an_error(capsys, tmp_path, data, error):
    p = tmp_path / "in.jsonl"
    p.write_bytes(data)
    rc, out, err = _run(capsys, "compare", str(p), "--engines", "baseline")
    assert (rc, out) == (1, "")
    assert err.splitlines()[-1] == f"eqsat: error: {p}: {error}"


def test_the_table_says_how_many_lines_it_left_out(capsys, tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_bytes(b"\n".join([A, b"\xff", C, b"[]"]))
    rc, out, err = _run(capsys, "compare", str(p), "--engines", "baseline")
    assert rc == 0, err
    assert out.startswith(f"2 cases from {p} (2 lines left out, named above); reference ")
    p.write_bytes(b"\n".join([A, C]))
    rc, out, err = _run(capsys, "compare", str(p), "--engines", "baseline")
    assert rc == 0 and out.startswith(f"2 cases from {p}; reference ") and err == ""


def test_limit_counts_the_lines_left_out_too(capsys, tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_bytes(b"\n".join([A, b"\xff", C]))
    rc, out, err = _run(capsys, "compare", str(p), "--engines", "baseline", "--json",
                        "--limit", "2")
    assert rc == 0 and [c["id"] for c in json.loads(out)["per_case"]] == ["a"]


def test_compare_reads_bytes_from_stdin(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\n".join([A, b"\xff", C]))))
    rc, out, err = _run(capsys, "compare", "-", "--engines", "baseline", "--json")
    assert rc == 0 and "eqsat compare: <stdin>:2: not UTF-8 text" in err
    assert [c["id"] for c in json.loads(out)["per_case"]] == ["a", "c"]


def test_load_stops_at_a_bad_line(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_bytes(b"\n".join([A, C]))
    assert [r["id"] for r in compare.load(p)] == ["a", "c"]
    p.write_bytes(b"\n".join([A, b'{"id": "b", "expr": "(add 1"}', C]))
    with pytest.raises(ValueError, match=r"in.jsonl:2: case 'b': field 'expr':1:7"):
        compare.load(p)


class _SignalledStdout(io.StringIO):
    """Standard output that gets SIGTERM as the report is written to it."""

    def write(self, s: str) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.01)  # the handler runs between these calls
        return super().write(s)


def test_a_signal_while_the_report_is_written_leaves_it_whole(capsys, monkeypatch,
                                                             tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_bytes(b"\n".join([A, C]))
    out = _SignalledStdout()
    monkeypatch.setattr(sys, "stdout", out)
    term = signal.getsignal(signal.SIGTERM)
    rc = main(["compare", str(p), "--engines", "baseline", "--json"])
    assert signal.getsignal(signal.SIGTERM) is term
    assert rc == 128 + signal.SIGTERM
    assert [c["id"] for c in json.loads(out.getvalue())["per_case"]] == ["a", "c"]
    assert capsys.readouterr().err == "eqsat compare: stopped by SIGTERM: no report\n"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_mid_run_stops_the_comparison(tmp_path, sig):
    """A real process, signalled once its run has started: status 128 + the signal, no
    report (not a part of one) and one line on stderr saying so."""
    src = tmp_path / "in.jsonl"
    src.write_bytes(CORPUS.read_bytes() * 6)  # far more work than the test waits for
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("EQSAT_DEBUG", None)
    err_path = tmp_path / "err.txt"
    with open(tmp_path / "out.txt", "w") as out, open(err_path, "w") as err:
        p = subprocess.Popen([sys.executable, "-m", "eqsat", "-v", "compare", str(src),
                              "--json"], stdout=out, stderr=err, env=env, cwd=REPO,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            assert _until(lambda: "compare: " in err_path.read_text() or p.poll() is not None,
                          120), "the run did not start in 120 s"
            time.sleep(1.0)  # into the run
            assert p.poll() is None, "the comparison ended before the signal"
            p.send_signal(sig)
            rc = p.wait(timeout=60)
        finally:
            reap(p)
    assert rc == 128 + sig
    assert (tmp_path / "out.txt").read_text() == ""
    assert err_path.read_text().splitlines()[-1] == \
        f"eqsat compare: stopped by {sig.name}: no report"

