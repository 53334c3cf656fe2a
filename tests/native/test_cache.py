"""The disk cache of run-time built modules (:mod:`acrobat.native.cache`) as an attacker,
a crash and a bad compiler would meet it.

A module planted in a cache directory that another user owns or anyone may write is never
imported; a truncated, zeroed or garbage module is rebuilt with no crash; a compiler that
hangs costs one bounded wait and a typed error, remembered for its key; processes starting
together on an empty cache build a module once. Each case runs in fresh processes, as a
user's runs would.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

CC = shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(CC is None, reason="needs a C compiler")

# A host-like generated module: ``@MODULE@`` is its name, ``value()`` says it is the real one.
VICTIM = textwrap.dedent("""
    #include <Python.h>
    static PyObject *value(PyObject *s, PyObject *u) { return PyLong_FromLong(1); }
    static PyMethodDef m[] = {{"value", value, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
    static struct PyModuleDef d = {PyModuleDef_HEAD_INIT, "@MODULE@", "", -1, m};
    PyMODINIT_FUNC PyInit_@MODULE@(void) { return PyModule_Create(&d); }
""")

# What an attacker plants under the victim's name: importing it leaves a file behind.
PLANTED = textwrap.dedent("""
    #include <Python.h>
    static struct PyModuleDef d = {PyModuleDef_HEAD_INIT, "@MODULE@", "", -1, NULL};
    PyMODINIT_FUNC PyInit_@MODULE@(void) {
        FILE *f = fopen(MARKER, "w"); if (f) fclose(f);
        return PyModule_Create(&d);
    }
""")

BUILD = textwrap.dedent("""
    import sys, warnings
    warnings.simplefilter("always")
    from acrobat import native
    mod, ms = native.build_extension(sys.argv[1])
    print(mod.value(), mod.__file__, ms > 0)
""")


def _python(code: str, env: dict, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def _module_path(cache: Path, source: str) -> Path:
    """Where ``source``'s module lives in the private cache ``cache`` (built there)."""
    out = _python(BUILD, {"ACROBAT_CACHE_DIR": str(cache)}, source).stdout.split()
    assert out[0] == "1"
    return Path(out[1])


def _plant(folder: Path, victim_path: Path, marker: Path) -> None:
    """Compiles the planted module under the victim's file name, with a matching
    checksum record (an attacker who can write the folder can write both)."""
    name = victim_path.name.split(".")[0]
    src = folder / "planted.c"
    src.write_text(f'#define MARKER "{marker}"\n' + PLANTED.replace("@MODULE@", name))
    target = folder / victim_path.name
    inc = subprocess.run(
        [sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    subprocess.run([CC, "-shared", "-fPIC", f"-I{inc}", str(src), "-o", str(target)], check=True)
    digest = subprocess.run(["sha256sum", str(target)], capture_output=True, text=True)
    target.with_name(target.name + ".sha256").write_text(digest.stdout.split()[0] + "\n")
    src.unlink()


@needs_cc
@pytest.mark.parametrize("how", ["world-writable", "foreign-owned"])
def test_a_module_planted_in_an_unsafe_cache_is_never_loaded(tmp_path, how):
    if how == "foreign-owned" and os.getuid() != 0:
        pytest.skip("making a folder another user owns needs root")
    real = _module_path(tmp_path / "private", VICTIM)
    unsafe, marker = tmp_path / "shared", tmp_path / "planted-code-ran"
    unsafe.mkdir()
    _plant(unsafe, real, marker)
    if how == "world-writable":
        unsafe.chmod(0o777)
    else:
        os.chown(unsafe, 65534, 65534)
    done = _python(BUILD, {"ACROBAT_CACHE_DIR": str(unsafe)}, VICTIM)
    value, loaded_from, _ = done.stdout.split()
    assert value == "1" and not marker.exists()
    assert not loaded_from.startswith(str(unsafe))  # built into a private temporary folder
    assert "the cache directory is off" in done.stderr and str(unsafe) in done.stderr


@needs_cc
@pytest.mark.parametrize("damage", ["truncated", "zeroed", "garbage"])
def test_a_damaged_cached_module_is_rebuilt_with_no_crash(tmp_path, damage):
    path = _module_path(tmp_path, VICTIM)
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "zeroed":
        path.write_bytes(data[:64] + bytes(len(data) - 64))
    else:
        path.write_bytes(b"not a module")
    again = _python(BUILD, {"ACROBAT_CACHE_DIR": str(tmp_path)}, VICTIM).stdout.split()
    assert again == ["1", str(path), "True"]  # rebuilt (ms > 0) in place
    assert len(path.read_bytes()) == len(data)


@needs_cc
@pytest.mark.slow  # two builds of the whole core
def test_a_damaged_core_module_is_rebuilt(tmp_path):
    code = "from acrobat import native; native.load(); print(native.status())"
    env = {"ACROBAT_CACHE_DIR": str(tmp_path), "ACROBAT_NATIVE_INSTALLED": "0"}
    assert _python(code, env).stdout.split()[0] == "built"
    (core,) = tmp_path.glob("_acrobat_native-*.so")
    core.write_bytes(core.read_bytes()[:4096])
    assert _python(code, env).stdout.split()[0] == "built"
    assert _python(code, env).stdout.split()[0] == "loaded"


def _fake_cc(folder: Path, body: str) -> Path:
    """A compiler script: answers ``--version`` at once, runs ``body`` for a build."""
    cc = folder / "fakecc"
    cc.write_text(f'#!/bin/sh\ncase "$*" in *--version*) echo fakecc 1.0; exit 0;; esac\n{body}\n')
    cc.chmod(cc.stat().st_mode | stat.S_IXUSR)
    return cc


HANGING = textwrap.dedent("""
    import sys, time
    from acrobat import native
    from acrobat.errors import NativeBuildError
    for attempt in range(2):
        t0 = time.perf_counter()
        try:
            native.build_extension(sys.argv[1])
        except NativeBuildError as err:
            print(f"{time.perf_counter() - t0:.2f}", err.message.replace(" ", "_"))
""")


@needs_cc
def test_a_hanging_compiler_gives_a_typed_error_within_the_bound(tmp_path):
    cc = _fake_cc(tmp_path, "sleep 60")
    env = {"ACROBAT_CACHE_DIR": str(tmp_path / "cache"), "CC": str(cc), "ACROBAT_CC_TIMEOUT": "2"}
    t0 = time.perf_counter()
    first, second = _python(HANGING, env, VICTIM).stdout.splitlines()
    assert time.perf_counter() - t0 < 30  # the sleep's process group was killed with it
    assert 1.9 < float(first.split()[0]) < 10 and "did_not_finish_in_2_s" in first
    assert float(second.split()[0]) < 0.5 and "did_not_finish" in second  # remembered
    # a later process does not wait again: the failure is recorded for the key
    third = _python(HANGING, env, VICTIM).stdout.splitlines()[0]
    assert float(third.split()[0]) < 0.5 and "an_earlier_build" in third
    assert len(list((tmp_path / "cache").glob("*.failed"))) == 1


@needs_cc
def test_the_core_is_off_with_a_reason_when_the_compiler_hangs(tmp_path):
    cc = _fake_cc(tmp_path, "sleep 60")
    env = {
        "ACROBAT_CACHE_DIR": str(tmp_path / "cache"),
        "CC": str(cc),
        "ACROBAT_CC_TIMEOUT": "1",
        "ACROBAT_NATIVE_INSTALLED": "0",
    }
    code = "from acrobat import native; native.load(); print(native.status())"
    assert "did not finish in 1 s" in _python(code, env).stdout


@needs_cc
def test_four_processes_on_an_empty_cache_build_once(tmp_path):
    log = tmp_path / "compiles.log"
    cc = _fake_cc(tmp_path, f'echo build >> "{log}"\nexec {CC} "$@"')
    env = {**os.environ, "ACROBAT_CACHE_DIR": str(tmp_path / "cache"), "CC": str(cc)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", BUILD, VICTIM], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    outs = [p.communicate(timeout=300)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert len({o[1] for o in outs}) == 1 and all(o[0] == "1" for o in outs)
    assert log.read_text().count("build") == 1
