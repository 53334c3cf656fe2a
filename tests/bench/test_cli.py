"""The command lines: every option has help (with its default), known names are choices,
bad names are argparse errors; progress lines carry an ETA and no terminal codes in a log."""

from __future__ import annotations

import argparse
import io
import re

import pytest

from acrobat.__main__ import _parser as acrobat_parser
from acrobat.bench.__main__ import _parser as bench_parser
from acrobat.bench.__main__ import main as bench_main
from acrobat.bench.progress import Progress, eta_seconds
from acrobat.fuzz.__main__ import _parser as fuzz_parser
from acrobat.models import MODEL_NAMES
from acrobat.viz.app import _parser as explorer_parser

UNHELPED = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)


def _walk(parser: argparse.ArgumentParser, name: str):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _walk(sub, f"{name} {sub_name}")


PARSERS = [
    *_walk(bench_parser(), "acrobat-bench"),
    *_walk(acrobat_parser(), "python -m acrobat"),
    ("acrobat-fuzz", fuzz_parser()),
    ("acrobat-explorer", explorer_parser()),
]


@pytest.mark.parametrize(("name", "parser"), PARSERS, ids=[n for n, _ in PARSERS])
def test_every_option_has_help_and_shows_its_default(name, parser):
    text = parser.format_help()
    assert "``" not in text, f"{name}: reST markup in --help"
    for action in parser._actions:
        if isinstance(action, UNHELPED):
            continue
        assert action.help, f"{name} {action.dest}: no help"
        shown = action.default not in (None, False, [], argparse.SUPPRESS)
        formatter = parser._get_formatter()
        if shown and hasattr(formatter, "_get_help_string"):
            helptext = formatter._get_help_string(action) % {"default": action.default}
            assert "default" in helptext, f"{name} {action.dest}: default not shown"


def test_every_command_answers_version(capsys):
    tops = ("acrobat-bench", "python -m acrobat", "acrobat-fuzz", "acrobat-explorer")
    for name, parser in [(n, p) for n, p in PARSERS if n in tops]:
        with pytest.raises(SystemExit) as stop:
            parser.parse_args(["--version"])
        assert stop.value.code == 0 and "0." in capsys.readouterr().out, name


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["run", "--model", "nope"], MODEL_NAMES),
        (["run", "--model", "treelstm", "--size", "huge"], ("tiny", "small", "large")),
        (["run", "--model", "treelstm", "--policy", "fast"], ("acrobat", "eager")),
        (["run", "--model", "treelstm", "--disable", "speed"], ("fusion",)),
        (["paper", "--models", "nope"], MODEL_NAMES),
        (["run", "--model", "treelstm", "--threads", "many"], ("auto",)),
    ],
)
def test_bad_names_are_argparse_errors_listing_the_valid_ones(argv, names, capsys):
    with pytest.raises(SystemExit) as stop:
        bench_main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "usage:" in err and "Traceback" not in err
    assert all(n in err for n in names), err


def test_a_missing_results_file_is_an_argparse_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        bench_main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")])
    assert stop.value.code == 2 and "a.jsonl" in capsys.readouterr().err


def test_progress_in_a_log_has_an_eta_and_no_carriage_returns():
    log = io.StringIO()
    bar = Progress(4, "configurations", stream=log, every=0)
    for done in range(4):
        bar.update(done, f"step {done}")
    bar.close(4)
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue() and len(lines) == 5
    assert lines[0].startswith("0/4 configurations") and "ETA ?" in lines[0]
    assert "ETA 0:0" in lines[2] and lines[-1].startswith("4/4 configurations")
    assert lines[-1].endswith("ETA 0:00  done")


def test_eta_is_the_pace_so_far_or_the_time_limit():
    assert eta_seconds(0, 10, 5.0) is None
    assert eta_seconds(5, 10, 5.0) == pytest.approx(5.0)
    log = io.StringIO()
    bar = Progress(None, "programs", stream=log, every=0, deadline_s=3600)
    bar.update(1)
    assert re.match(r"1 programs, 0:0\d elapsed, ETA (1:00:00|59:\d\d)$", log.getvalue().strip())


def _read_all(fd: int) -> str:
    """Everything written to a pty's other end, now closed: the kernel hands it over in
    chunks, some later than the writes (a loaded machine), so read until it says no more."""
    import os
    import select

    out = b""
    while select.select([fd], [], [], 5.0)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the other end is closed and everything was read
            break
        if not chunk:
            break
        out += chunk
    os.close(fd)
    return out.decode()


def test_progress_on_a_terminal_is_a_tqdm_bar():
    import fcntl
    import os
    import struct
    import termios

    main_fd, tty_fd = os.openpty()
    fcntl.ioctl(tty_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a real size
    with os.fdopen(tty_fd, "w") as tty:
        bar = Progress(3, "configurations", stream=tty, every=0)
        assert bar.bar is not None  # tqdm, redrawn in place
        bar.update(1, "treelstm")
        bar.close(3)
    frames = _read_all(main_fd)
    assert "\r" in frames and "3/3" in frames
