"""The eqsat command line: main(argv) for every subcommand, one real subprocess."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eqsat import cli
from eqsat.cli import main
from eqsat.ir.sexpr import parse, to_sexpr

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "eqsat" / "examples"
TILED = str(EXAMPLES / "tiled.uop")
TRANSPOSE = str(EXAMPLES / "transpose.uop")


def run(capsys, *argv: str, stdin: str | None = None, monkeypatch=None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("eqsat: error: ") and "Traceback" not in err
    return lines[0]


# ---------------------------------------------------------------------------
# help and usage
def test_help_lists_every_subcommand(capsys):
    rc, out, _ = run(capsys, "--help")
    assert rc == 0
    for cmd in ("fmt", "eval", "cost", "optimize", "batch", "rules", "lower"):
        assert cmd in out


@pytest.mark.parametrize("cmd, flag", [
    ("optimize", "--rulesets"), ("optimize", "--stats"), ("optimize", "--stall"),
    ("batch", "--jobs"), ("batch", "--chunk"), ("eval", "--var"),
    ("lower", "--emit"), ("cost", "--cost"), ("rules", "--engine"), ("fmt", "--compact"),
])
def test_subcommand_help(capsys, cmd, flag):
    rc, out, _ = run(capsys, cmd, "--help")
    assert rc == 0 and flag in out


@pytest.mark.parametrize("cmd", ["optimize", "batch"])
def test_enodes_help_states_the_default(capsys, cmd):
    rc, out, _ = run(capsys, cmd, "--help")
    assert rc == 0
    assert "--enodes N e-graph size limit (default: 20,000, or 4 per unique node of the " \
           "graph when that is more; a kernel past 3,000 nodes runs in parts, each an " \
           "e-graph with this limit)" in " ".join(out.split())


def test_usage_errors(capsys):
    assert run(capsys)[0] == 2  # no subcommand
    assert run(capsys, "frobnicate")[0] == 2
    assert run(capsys, "optimize", "--engine", "magic", TILED)[0] == 2


# ---------------------------------------------------------------------------
# fmt
def test_fmt_file_and_stdin(capsys, monkeypatch):
    rc, out, err = run(capsys, "fmt", TILED)
    assert rc == 0 and err == ""
    g = parse(Path(TILED).read_text())
    assert out == to_sexpr(g) + "\n"
    rc, out2, _ = run(capsys, "fmt", "--compact", "-", stdin=out, monkeypatch=monkeypatch)
    assert rc == 0 and out2 == to_sexpr(g, compact=True) + "\n"


def test_fmt_parse_error_names_file_line_col(capsys, tmp_path):
    f = tmp_path / "bad.uop"
    f.write_text("; header\n(add 1\n   (frob 2))\n")
    rc, out, err = run(capsys, "fmt", str(f))
    assert rc == 1 and out == ""
    assert one_line_error(err) == f"eqsat: error: {f}:3:5: unknown op 'frob'"


def test_stdin_error_name(capsys, monkeypatch):
    rc, _, err = run(capsys, "fmt", "-", stdin="(add 1", monkeypatch=monkeypatch)
    assert rc == 1
    assert one_line_error(err).startswith("eqsat: error: <stdin>:1:7: expected ')'")


def test_missing_file(capsys, tmp_path):
    rc, _, err = run(capsys, "cost", str(tmp_path / "nope.uop"))
    assert rc == 1
    assert "nope.uop: No such file or directory" in one_line_error(err)


# ---------------------------------------------------------------------------
# eval
@pytest.mark.parametrize("text, vars_, want", [
    ("(add (var x 0 9) 1)", ["x=3"], "4"),
    ("(idiv -7 2)", [], "-3"),
    ("(mod -7 2)", [], "-1"),
    ("(lt (var x 0 9) 5)", ["x=7"], "false"),
    ("(where (lt (range 0 8) 4) (range 0 8) (invalid))", ["R0=6"], "invalid"),
    ("(fdiv 1.0 4.0)", [], "0.25"),
    ("(vconst i32 1 -2)", [], "(1 -2)"),
    ("(add (special gidx0 16) (var n 0 4))", ["gidx0=15", "n=4"], "19"),
])
def test_eval(capsys, tmp_path, text, vars_, want):
    f = tmp_path / "e.uop"
    f.write_text(text)
    rc, out, err = run(capsys, "eval", str(f), *[a for v in vars_ for a in ("--var", v)])
    assert (rc, out.strip(), err) == (0, want, "")


def test_eval_tiled_example(capsys):
    rc, out, _ = run(capsys, "eval", TILED, "--var", "R2=1", "--var", "R3=2", "--var", "R4=1")
    assert rc == 0 and out.strip() == str(2 * 8 + 1 * 4 + 1)


@pytest.mark.parametrize("text, vars_, fragment", [
    ("(add (var x 0 9) 1)", [], "cannot evaluate"),
    ("(add (var x 0 9) 1)", ["x=30"], "cannot evaluate"),
    ("(idiv 1 (var x 0 9))", ["x=0"], "cannot evaluate"),
    ("(var x 0 9)", ["x"], "--var expects NAME=VALUE"),
    ("(var x 0 9)", ["x=abc"], "is not an integer"),
])
def test_eval_errors(capsys, tmp_path, text, vars_, fragment):
    f = tmp_path / "e.uop"
    f.write_text(text)
    rc, out, err = run(capsys, "eval", str(f), *[a for v in vars_ for a in ("--var", v)])
    assert rc == 1 and out == ""
    assert fragment in one_line_error(err)


# ---------------------------------------------------------------------------
# cost
def test_cost(capsys):
    rc, out, _ = run(capsys, "cost", TILED)
    # 2 x (idiv|mod) 25, 3 mul x 4, 3 add x 1; the shared sum counted once
    assert rc == 0 and out.strip() == str(2 * 25 + 3 * 4 + 3)
    rc, out, _ = run(capsys, "cost", "--cost", "reference", TILED)
    assert out.strip() == "65"
    rc, out, _ = run(capsys, "cost", "--cost", "default", TILED)
    assert rc == 0 and float(out) > 0


def test_cost_unknown_model(capsys):
    rc, _, err = run(capsys, "cost", "--cost", "nonsense", TILED)
    assert rc == 1 and "nonsense" in one_line_error(err)


# ---------------------------------------------------------------------------
# optimize
def test_optimize_baseline(capsys):
    from eqsat.ir.equiv import check_equivalent
    from extraction import reference_cost

    rc, out, err = run(capsys, "optimize", "--engine", "baseline", "--cost", "reference",
                       "--stats", TILED)
    assert rc == 0
    g_in, g_out = parse(Path(TILED).read_text()), parse(out)
    assert reference_cost(g_out) < reference_cost(g_in)
    assert check_equivalent(g_in, g_out)
    stats = json.loads(err)
    assert stats["engine"] == "baseline" and stats["cost"] <= stats["input_cost"]


def test_optimize_egraph(capsys, monkeypatch):
    text = Path(TILED).read_text()
    rc, out, err = run(capsys, "optimize", "--iterations", "4", "--seconds", "5", "--compact",
                       "-", stdin=text, monkeypatch=monkeypatch)
    assert rc == 0 and err == "" and "\n" not in out.strip()
    from eqsat.ir.equiv import check_equivalent
    assert check_equivalent(parse(text), parse(out))


@pytest.mark.parametrize("argv, fragment", [
    (["--engine", "baseline", "--rulesets", "no_such_rules"], "no_such_rules"),
    (["--seconds", "0"], "seconds > 0"),
    (["--engine", "baseline", "--rulesets", ","], "--rulesets needs at least one name"),
])
def test_optimize_errors(capsys, argv, fragment):
    rc, out, err = run(capsys, "optimize", *argv, TILED)
    assert rc == 1 and out == ""
    assert fragment in one_line_error(err)


def test_missing_engine_module_is_a_clean_error(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "eqsat.engines.baseline", None)  # import fails
    rc, _, err = run(capsys, "optimize", "--engine", "baseline", TILED)
    assert rc == 1
    line = one_line_error(err)
    assert "not available" in line and "eqsat.engines.baseline" in line


def test_engine_exception_is_a_clean_error(capsys, monkeypatch):
    import eqsat.api

    def boom(*a, **k):
        raise RuntimeError("engine exploded\nsecond line")

    monkeypatch.setitem(eqsat.api.ENGINES, "baseline", boom)
    rc, _, err = run(capsys, "optimize", "--engine", "baseline", TILED)
    assert rc == 1
    assert one_line_error(err).endswith("RuntimeError: engine exploded")


# ---------------------------------------------------------------------------
# batch
BATCH_LINES = [
    '{"id": "a", "expr": "(add (mul (idiv (range 0 32) 8) 8) (mod (range 0 32) 8))"}',
    "this is not json",
    '{"id": "b"}',
    '{"id": "c", "expr": "(add 1"}',
    "",
    '{"id": "d", "expr": "(mod (add (mul (var x 0 7) 4) 2) 4)"}',
    "[1, 2]",
    '{"id": 5, "expr": 7}',
]


def _batch(capsys, tmp_path, jobs: str) -> list[dict]:
    src, dst = tmp_path / "in.jsonl", tmp_path / f"out{jobs}.jsonl"
    src.write_text("\n".join(BATCH_LINES) + "\n")
    rc, out, err = run(capsys, "batch", "--engine", "baseline", "--jobs", jobs, str(src),
                       "-o", str(dst))
    assert rc == 0 and out == ""
    assert "7 cases" in err and "5 errors" in err  # the blank line is no case
    return [json.loads(line) for line in dst.read_text().splitlines()]


def test_batch_malformed_lines(capsys, tmp_path):
    rows = _batch(capsys, tmp_path, "1")
    assert [r.get("id") for r in rows] == ["a", None, "b", "c", "d", None, 5]
    a, bad_json, no_expr, parse_err, d, not_obj, not_str = rows
    assert a["out"] == "(range 0 32)" and a["cost"] == 0 and a["us"] > 0
    assert "bad JSON" in bad_json["error"] and bad_json["line"] == 2
    assert no_expr["error"] == "missing field 'expr'"
    assert parse_err["error"].startswith("expr:1:7: expected ')'")
    assert parse(d["out"]) is parse(to_sexpr(parse(d["out"])))
    assert d["cost"] <= 25 + 4 + 1 and "error" not in d
    assert "JSON object" in not_obj["error"] and not_obj["line"] == 7
    assert "must be a string" in not_str["error"]


def test_batch_two_workers_same_order(capsys, tmp_path):
    one = _batch(capsys, tmp_path, "1")
    two = _batch(capsys, tmp_path, "2")
    strip = [{k: v for k, v in r.items() if k != "us"} for r in one]
    assert [{k: v for k, v in r.items() if k != "us"} for r in two] == strip


@pytest.mark.parametrize("chunk", ["1", "3", "16"])
def test_batch_chunks_keep_order_and_errors(capsys, tmp_path, chunk):
    """Cases optimized together in one e-graph come out in order, each error on its case."""
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("\n".join(BATCH_LINES) + "\n")
    rc, _, err = run(capsys, "batch", "--jobs", "1", "--chunk", chunk, str(src), "-o", str(dst))
    assert rc == 0 and "7 cases" in err and "5 errors" in err
    rows = [json.loads(line) for line in dst.read_text().splitlines()]
    assert [r.get("id") for r in rows] == ["a", None, "b", "c", "d", None, 5]
    assert rows[0]["out"] == "(range 0 32)" and rows[0]["us"] > 0
    assert rows[3]["error"].startswith("expr:1:7: expected ')'")
    assert parse(rows[4]["out"]) is not None and rows[4]["cost"] <= 25 + 4 + 1


def test_batch_chunk_must_be_positive(capsys, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(BATCH_LINES[0] + "\n")
    rc, _, err = run(capsys, "batch", "--chunk", "0", str(src))
    assert rc == 1 and "--chunk must be >= 1" in err


@pytest.mark.parametrize("argv, fragment", [
    (["--scheduler", "garbage"], "--scheduler garbage: missing port number"),
    (["--jobs", "0"], "--jobs must be >= 1"),
    (["--memory", "0"], None),  # a usage error (status 2)
])
def test_batch_errors_leave_an_existing_output_untouched(capsys, tmp_path, argv, fragment):
    if argv[0] == "--scheduler":
        pytest.importorskip("distributed")
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text(BATCH_LINES[0] + "\n")
    dst.write_text('{"precious": true}\n')
    rc, _, err = run(capsys, "batch", *argv, str(src), "-o", str(dst))
    assert rc == (2 if fragment is None else 1)
    if fragment:
        assert fragment in one_line_error(err)
    rc, _, err = run(capsys, "batch", str(tmp_path / "missing.jsonl"), "-o", str(dst))
    assert rc == 1 and "missing.jsonl" in one_line_error(err)
    assert dst.read_text() == '{"precious": true}\n'


@pytest.mark.parametrize("argv, fragment", [
    (["--cost", "bogus"], "--cost: unknown cost model 'bogus'"),
    (["--rulesets", "bogus"], "--rulesets: unknown e-graph rule set 'bogus'"),
    (["--engine", "baseline", "--rulesets", "bogus"], "unknown baseline rule set 'bogus'"),
])
def test_batch_rejects_a_bad_cost_or_rule_set_up_front(capsys, tmp_path, argv, fragment):
    src = tmp_path / "in.jsonl"
    src.write_text(BATCH_LINES[0] + "\n")
    rc, out, err = run(capsys, "batch", *argv, str(src))
    assert rc == 1 and out == ""  # no row per case carrying the error
    assert fragment in one_line_error(err)


@pytest.mark.parametrize("cmd, argv, flag", [
    ("optimize", ["--memory", "1e300T"], "--memory"),
    ("optimize", ["--memory", "1e20T"], "--memory"),
    ("optimize", ["--seconds", "inf"], "--seconds"),
    ("optimize", ["--seconds", "nan"], "--seconds"),
    ("optimize", ["--enodes", "1" + "0" * 30], "--enodes"),
    ("batch", ["--iterations", "-" + "9" * 30], "--iterations"),
    ("compare", ["--seconds", "1e999"], "--seconds"),
])
def test_a_budget_that_overflows_is_a_usage_error(capsys, cmd, argv, flag):
    rc, out, err = run(capsys, cmd, *argv, TILED)
    assert rc == 2 and out == "" and "Traceback" not in err
    assert f"error: argument {flag}: " in err


def test_batch_writes_non_finite_ids_as_valid_json(capsys, tmp_path):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    ids = ["1e999", "NaN", "[-Infinity, 1.5]", "-1E999"]
    src.write_text("".join(f'{{"id": {i}, "expr": "(add (var x 0 9) 0)"}}\n' for i in ids)
                   + '{"id": 7, "expr": NaN}\n')
    rc, _, _ = run(capsys, "batch", "--engine", "baseline", "--jobs", "1", str(src),
                   "-o", str(dst))

    def no_constants(c):
        raise AssertionError(f"{c} is not JSON")

    rows = [json.loads(line, parse_constant=no_constants)
            for line in dst.read_text().splitlines()]
    assert rc == 0 and [r["id"] for r in rows] == ["1e999", "NaN", ["-Infinity", 1.5],
                                                   "-1E999", 7]
    assert rows[0]["out"] == "(var x 0 9)" and "must be a string" in rows[4]["error"]


#: one batch line each (bytes as in the file) and its row: the fields it has, an "error"
#: by its start; the lines end in turn with \n, \r\n and \r, the file starts with a
#: UTF-8 byte-order mark and its last line has no line end
BYTE_LINES = [
    (b'{"id": "a", "expr": "(add (var x 0 9) 0)"}', {"id": "a", "out": "(var x 0 9)"}),
    (b'{"id": "b", "expr": "(add \xff 0)"}',
     {"id": "b", "line": 2, "error": "not UTF-8 text: byte 0xff at byte 27 of line 2 "
                                     "(invalid start byte)"}),
    (b'{"id": "c\xc3", "expr": "(add 1 2)"}',
     {"id": None, "line": 3, "error": "not UTF-8 text: byte 0xc3 at byte 10 of line 3 "
                                      "(invalid continuation byte)"}),
    (b'{"id": "d", "expr": "(add 1 2)"} \xe2\x82',  # no JSON object then: no id
     {"id": None, "line": 4, "error": "not UTF-8 text: byte 0xe2 at byte 34 of line 4 "
                                     "(unexpected end of data)"}),
    (b'{"id": "e", "expr": "\xed\xa0\x80"}',  # a surrogate's bytes are no UTF-8 either
     {"id": "e", "line": 5, "error": "not UTF-8 text: byte 0xed at byte 22 of line 5"}),
    (b'{"id": "f\xc2\x85\xe2\x80\xa8", "expr": "(mul (var x 0 9) 1)"}',  # NEL, U+2028
     {"id": "f\x85\u2028", "out": "(var x 0 9)"}),
    (b"\x00", {"id": None, "line": 7, "error": "bad JSON: Expecting value"}),
    (b'{"id": "g", "expr": "(add\x00 1 2)"}',
     {"id": None, "line": 8, "error": "bad JSON: Invalid control character"}),
    (b'{"id": "h", "expr": "(add \\u0000 1)"}',
     {"id": "h", "line": 9, "error": "expr:1:6: expected an expression, got '\\x00'"}),
    (b'\xef\xbb\xbf{"id": "i", "expr": "1"}',  # a BOM starts the file only
     {"id": None, "line": 10, "error": "bad JSON: Unexpected UTF-8 BOM"}),
    (b"[" * 100_000 + b"]" * 100_000, {"id": None, "line": 11, "error": "bad JSON: nested"}),
    (b'{"id": "j", "expr": "(idiv (var x 0 9) 1)"}', {"id": "j", "out": "(var x 0 9)"}),
]


def _byte_file() -> bytes:
    ends = [b"\n", b"\r\n", b"\r"]
    return b"\xef\xbb\xbf" + b"".join(line + ends[k % 3] for k, (line, _) in
                                      enumerate(BYTE_LINES))[:-1]


def _check_byte_rows(rows: list[dict]) -> None:
    assert len(rows) == len(BYTE_LINES)
    for (line, want), row in zip(BYTE_LINES, rows, strict=True):
        assert {k: row.get(k) for k in want if k != "error"} == \
            {k: v for k, v in want.items() if k != "error"}, line[:60]
        assert row.get("error", "").startswith(want.get("error", "")), (line[:60], row)
        assert ("error" in row) == ("error" in want) and ("out" in row) == ("out" in want)


def test_batch_lines_that_are_not_utf8_or_json_get_their_own_rows(capsys, tmp_path):
    """A line that is not UTF-8 (or not JSON) gets an error row naming it; the other
    lines go on, numbered at \n, \r\n and \r only, the file's BOM skipped."""
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_bytes(_byte_file())
    rc, out, err = run(capsys, "batch", "--engine", "baseline", "--jobs", "1", str(src),
                       "-o", str(dst))
    assert rc == 0 and out == "" and "Traceback" not in err
    assert f"{len(BYTE_LINES)} cases from {src}, 9 errors" in err
    _check_byte_rows([json.loads(r) for r in dst.read_bytes().decode().splitlines()])


def test_batch_reads_bytes_from_stdin(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(_byte_file())))
    rc, out, err = run(capsys, "batch", "--engine", "baseline", "--jobs", "1", "-")
    assert rc == 0 and f"{len(BYTE_LINES)} cases from <stdin>, 9 errors" in err
    _check_byte_rows([json.loads(r) for r in out.splitlines()])


@pytest.mark.parametrize("cmd", ["batch", "fmt"])
def test_a_closed_stdin_is_a_clear_error(capsys, monkeypatch, cmd):
    monkeypatch.setattr(sys, "stdin", None)  # as Python leaves it when fd 0 is closed
    rc, out, err = run(capsys, cmd, "-")
    assert (rc, out) == (1, "")
    assert one_line_error(err) == "eqsat: error: <stdin>: no standard input (it is closed)"


@pytest.mark.parametrize("data, error", [
    (b"", None),
    (b"\n\r\n \t\r\n\r", None),
    (b"\xef\xbb\xbf", None),
    (b"\xef\xbb\xbf\n\n", None),
    ('{"id": 1}\n'.encode("utf-16"), "UTF-16 text (it starts with the byte-order mark ff fe)"),
    ('{"id": 1}\n'.encode("utf-16-be").join([b"\xfe\xff", b""]),
     "UTF-16 text (it starts with the byte-order mark fe ff)"),
    ('{"id": 1}\n'.encode("utf-32"), "UTF-32 text (it starts with the byte-order mark ff fe "
                                     "00 00)"),
])
def test_batch_files_with_no_case(capsys, tmp_path, data, error):
    """A file of no line, or of blank lines only: no rows, status 0; a file in another
    encoding: one error naming it."""
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_bytes(data)
    rc, out, err = run(capsys, "batch", str(src), "-o", str(dst))
    if error is None:
        assert (rc, out, dst.read_text()) == (0, "", "")
        assert f"0 cases from {src}, 0 errors" in err
    else:
        assert rc == 1 and not dst.exists()
        assert one_line_error(err) == f"eqsat: error: {src}: {error}; the batch reads UTF-8"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_batch_write_error_names_the_output(capsys, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(BATCH_LINES[0] + "\n")
    rc, _, err = run(capsys, "batch", "--engine", "baseline", "--jobs", "1", str(src),
                     "-o", "/dev/full")
    assert rc == 1
    assert one_line_error(err) == "eqsat: error: /dev/full: cannot write: No space left on device"


def test_batch_and_compare_chunk_by_default_is_the_library_s():
    # one default chunk for `eqsat batch`, `eqsat compare`, optimize_many(executor=) and
    # the benchmarks, which measure what the command runs
    import inspect

    from eqsat.api import CHUNK, optimize_many

    p = cli.build_parser()
    assert p.parse_args(["batch", "in.jsonl"]).chunk == CHUNK
    assert p.parse_args(["compare", "in.jsonl"]).chunk == CHUNK
    assert inspect.signature(optimize_many).parameters["chunk"].default == CHUNK


def crash_chunk_on_boom(chunk):
    """A chunk worker that dies (as a segfaulting engine would) on any chunk holding the
    case 'boom'."""
    if any('"boom"' in job[1] for job in chunk):
        os._exit(3)
    return [{"id": json.loads(job[1])["id"], "out": "ok", "alone": len(chunk) == 1}
            for job in chunk]


@pytest.mark.parametrize("jobs, chunk", [(2, 3), (1, 3), (2, 1)])
def test_batch_worker_death_costs_only_its_case(jobs, chunk):
    """The chunk whose worker died runs again case by case (each alone); the case that
    kills its worker again gets the error, naming how the worker ended."""
    lines = [json.dumps({"id": i}) for i in ("p", "q", "boom", "r", "s", "t", "u")]
    cases = [(n, line, {}) for n, line in enumerate(lines, 1)]
    rows = list(cli.batch_results(cases, jobs, chunk, crash_chunk_on_boom))
    assert [r["id"] for r in rows] == ["p", "q", "boom", "r", "s", "t", "u"]
    assert rows[2]["error"] == ("the worker process running this case alone was exited "
                                "with status 3") and rows[2]["line"] == 3
    assert all(r.get("out") == "ok" for i, r in enumerate(rows) if i != 2)
    # the other cases of the chunk that died ran again alone; the other chunks did not
    ids = [json.loads(x)["id"] for x in lines]
    spans = cli.spans(len(ids), chunk, jobs)
    want = {ids[k] for a, b in spans for k in range(a, b) if b - a == 1 or a <= 2 < b}
    assert {r["id"] for r in rows if r.get("alone")} == want - {"boom"}


@pytest.mark.parametrize("n, chunk, workers, sizes", [
    (0, 64, 2, []),
    (7, 3, 2, [2, 2, 1, 1, 1]),
    (7, 3, 1, [3, 2, 1, 1]),
    (10, 64, 1, [5, 3, 1, 1]),
    (300, 64, 2, [64, 59, 45, 33, 25, 19, 14, 11, 8, 6, 4, 3, 3, 2, 1, 1, 1, 1]),
    (5, 1, 2, [1, 1, 1, 1, 1]),
])
def test_a_batch_s_tasks_shrink_toward_its_end(n, chunk, workers, sizes):
    spans = cli.spans(n, chunk, workers)
    assert [b - a for a, b in spans] == sizes
    assert [a for a, _ in spans] == [sum(sizes[:k]) for k in range(len(sizes))]


def crash_chunk_of_many(chunk):
    """A chunk worker that dies on any chunk of more than one case."""
    if len(chunk) > 1:
        os._exit(3)
    return [{"id": json.loads(job[1])["id"], "budget": job[2]["budget"]} for job in chunk]


def test_batch_reruns_a_dead_chunk_s_cases_with_their_own_budget():
    # a case's row is its own result: alone after a death, with the budget it had
    budget = (12, 20_000, 2.0, 1, None)
    cases = [(n, json.dumps({"id": n}), {"budget": budget}) for n in (1, 2, 3)]
    rows = list(cli.batch_results(cases, 1, 3, crash_chunk_of_many))
    assert rows == [{"id": n, "budget": budget} for n in (1, 2, 3)]


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("when, alone_ok", [("", False), (":chunk", True)])
def test_batch_a_killed_worker_loses_nothing(capsys, tmp_path, monkeypatch, jobs, when,
                                             alone_ok):
    """A worker killed (SIGKILL, as the kernel kills a process out of memory) while on a
    chunk: every line still gets its row and the command exits 0. Killed only while in
    a chunk, the case's retry alone succeeds; killed every time, its row names the
    signal."""
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("\n".join(BATCH_LINES) + "\n")
    monkeypatch.setenv(cli.KILL_ENV, f"d{when}")
    rc, _, err = run(capsys, "batch", "--jobs", jobs, "--chunk", "3", "--stats", str(src),
                     "-o", str(dst))
    assert rc == 0 and "7 cases" in err
    rows = [json.loads(line) for line in dst.read_text().splitlines()]
    assert [r.get("id") for r in rows] == ["a", None, "b", "c", "d", None, 5]
    # (its start, the range, costs 0: no search)
    assert rows[0]["out"] == "(range 0 32)" and rows[0]["stats"]["stop_reason"] == "optimal"
    d = rows[4]
    if alone_ok:
        assert d["cost"] <= 25 + 4 + 1 and "batch" not in d["stats"]
    else:
        assert d["error"] == ("the worker process running this case alone was killed by "
                              "SIGKILL (out of memory?)") and d["line"] == 6


# ---------------------------------------------------------------------------
# rules and lower
def test_rules(capsys):
    rc, out, _ = run(capsys, "rules", "--engine", "baseline")
    assert rc == 0
    assert "symbolic (baseline," in out
    assert "\n  " in out  # rules listed under their set, with identities
    assert "(egraph," not in out
    rc, brief, _ = run(capsys, "rules", "--brief")
    assert rc == 0 and all(line.endswith(("rules)", "opt-in)", "done)"))
                           for line in brief.strip().splitlines())
    assert "division_select (egraph, 6 rules)" in brief
    assert "where_combine_native (egraph, " in brief and "; opt-in)" in brief


def test_lower(capsys):
    rc, out, err = run(capsys, "lower", TRANSPOSE)
    assert rc == 0 and err == ""
    assert "for" in out and "60" in out
    rc, out, _ = run(capsys, "lower", "--no-optimize", "--emit", "linear", TRANSPOSE)
    assert rc == 0 and out.strip()


# ---------------------------------------------------------------------------
# a real process
def test_subprocess_entry_point(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("EQSAT_DEBUG", None)
    p = subprocess.run([sys.executable, "-m", "eqsat", "fmt", "-"], input="(mul 2 (add 1 1))",
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert (p.returncode, p.stdout, p.stderr) == (0, "(mul 2 (add 1 1))\n", "")
    p = subprocess.run([sys.executable, "-m", "eqsat", "fmt", "-"], input="(mul 2\n (ad 1 1))",
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == "eqsat: error: <stdin>:2:3: unknown op 'ad'\n"


@pytest.mark.timing
def test_cli_budget_is_the_optimizers(tmp_path):
    """The CLI builds the e-graph session at start-up: a fresh process's first (and only)
    run gets its whole time budget (it used to spend it on the build and return the input)."""
    src = tmp_path / "t.uop"
    src.write_text("(where (lt (range 0 114) 112) (add (mul (mod (idiv (range 0 114) 16) 7) 16) "
                   "(mod (range 0 114) 16)) (invalid))\n")
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run([sys.executable, "-m", "eqsat", "optimize", "--stats", "--seconds", "1.5",
                        str(src)], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    stats = json.loads(p.stderr.splitlines()[-1])
    assert stats["iterations"] >= 1 and stats["time"]["setup"] < 0.5 * stats["time"]["total"]
    assert p.stdout.strip() == "(where (lt (range 0 114) 112) (range 0 114) (invalid))"



# ---------------------------------------------------------------------------
# determinism
@pytest.mark.slow
@pytest.mark.parametrize("enodes", ["20000", "60"])
def test_batch_output_is_the_same_across_seeds_and_jobs(tmp_path, corpus_lines, enodes):
    """The same input, budget and chunk give the same rows (but ``us``) whatever the
    process's hash seed and the number of workers, for every run that stopped by
    saturation, a stall, iterations or e-nodes (``--enodes 60`` makes some stop so,
    with rules held back); a time or memory stop would say so in its stats."""
    from benchmarks.stress import FLOORDIV_PARAMS, floordiv_case, where_sum

    exprs = [r["expr"] for r in corpus_lines[::43]] + [floordiv_case(*FLOORDIV_PARAMS[1]),
                                                       where_sum(40)]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "expr": e}) + "\n" for i, e in enumerate(exprs)))
    runs = []
    for seed, jobs in (("0", "1"), ("12345", "2"), ("4242", "2")):
        dst = tmp_path / f"out{seed}.jsonl"
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(REPO))
        p = subprocess.run([sys.executable, "-m", "eqsat.cli", "batch", "--stats", "--chunk",
                            "4", "--jobs", jobs, "--seconds", "60", "--enodes", enodes,
                            "--cost", "reference", str(src), "-o", str(dst)],
                           capture_output=True, text=True, env=env, timeout=600, cwd=str(REPO))
        assert p.returncode == 0, p.stderr[-2000:]
        rows = [json.loads(line) for line in dst.read_text().splitlines()]
        assert len(rows) == len(exprs) and not any("error" in r for r in rows)
        runs.append([{k: v for k, v in r.items() if k != "us"} for r in rows])
    assert all(r["stats"]["stop_reason"] not in ("time", "memory") for r in runs[0])
    if enodes == "60":
        assert any(r["stats"]["stop_reason"] == "enodes" for r in runs[0])
    assert runs[1] == runs[0] and runs[2] == runs[0]
