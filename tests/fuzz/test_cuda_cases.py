"""The generated CUDA of the saved fuzz cases: it compiles to PTX, and run on the CPU
through the g++ emulation (``tests/backends/emulation.py``) it gives the reference
interpreter's outputs (or the same instance's typed error)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import acrobat
import acrobat.runtime.run as run_module
from acrobat.codegen.cuda_kernels import plan_kernel
from acrobat.fuzz.campaign import draw_case
from acrobat.fuzz.cases import load
from acrobat.fuzz.check import reference
from acrobat.fuzz.choices import ChoiceSource
from tests.backends.emulation import GXX, EmulatedCudaBackend
from tests.backends.test_cuda_codegen import NVCC, NVCC_FLAGS
from tests.runtime.helpers import assert_outputs_equal

CASES = sorted((Path(__file__).parent / "cases").glob("*.json"))


def _compiled(case):
    module = acrobat.parse(case.source)
    params = acrobat.init_params(module, 0)
    return acrobat.compile(module, params), module, params


def _plans(prog):
    """Every kernel has a CUDA plan (no program of the language is refused)."""
    return [plan_kernel(k.function) for k in prog.kernels.values()]


def compile_programs_to_ptx(programs, tmp_path) -> int:
    """Every kernel plan of each program as one translation unit per program, all in
    one nvcc run (kernel names repeat across programs); returns the entries checked."""
    files, want = [], {}
    for n, prog in enumerate(programs):
        launches = {}
        for plan in _plans(prog):
            launches.update({s.source: s.name for s in plan.launches})
        if launches:
            cu = tmp_path / f"program{n}.cu"
            cu.write_text("\n".join(launches))
            files.append(str(cu))
            want[f"program{n}.ptx"] = set(launches.values())
    cmd = [NVCC, *NVCC_FLAGS, "--output-directory", str(tmp_path), *files]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    for name, entries in want.items():
        assert set(re.findall(r"\.entry (\w+)\(", (tmp_path / name).read_text())) == entries
    return sum(len(e) for e in want.values())


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_saved_cases_compile_to_ptx(tmp_path):
    assert compile_programs_to_ptx([_compiled(load(p))[0] for p in CASES], tmp_path) > 0


def check_on_emulated_cuda(source: str, instances: list, workdir, label: str) -> None:
    """The program's CUDA, run on the CPU, gives the reference's outputs, or raises the
    InstanceError of an instance the reference refuses."""
    module = acrobat.parse(source)
    params = acrobat.init_params(module, 0)
    prog = acrobat.compile(module, params)
    _plans(prog)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(run_module, "get_backend", lambda name: EmulatedCudaBackend(prog, workdir))
        runtime = run_module.Runtime(prog, "cuda-emulated")
    refs, _ = reference(module, params, instances)
    failing = {i for i, (status, _) in enumerate(refs) if status != "ok"}
    if failing:
        with pytest.raises(acrobat.InstanceError) as err:
            runtime.run(instances, "acrobat", "off", None)
        assert err.value.index in failing
        return
    res = runtime.run(instances, "acrobat", "off", None)
    assert_outputs_equal(res.outputs, [v for _, v in refs], label)


@pytest.mark.skipif(GXX is None, reason="g++ is not installed")
@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_saved_case_on_emulated_cuda(path, tmp_path):
    case = load(path)
    check_on_emulated_cuda(case.source, case.instances, tmp_path, case.name)


def _generated(n: int, seed: int):
    """``n`` fuzz cases drawn from seeds ``seed``, ``seed + 1``, ..."""
    return [draw_case(ChoiceSource(seed=seed + i)) for i in range(n)]


def _generated_compile_to_ptx(count: int, seed: int, tmp_path) -> int:
    progs = []
    for drawn in _generated(count, seed=seed):
        module = acrobat.parse(drawn.source)
        params = acrobat.init_params(module, 0)
        progs.append(acrobat.compile(module, params))
        progs.append(
            acrobat.compile(module, params, options=acrobat.CompileOptions().without("fusion"))
        )
    return compile_programs_to_ptx(progs, tmp_path)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_generated_programs_compile_to_ptx(tmp_path):
    """A sample of fuzzed programs: every kernel plan, default options and fusion off."""
    assert _generated_compile_to_ptx(8, 77 * 1000, tmp_path) > 12


@pytest.mark.slow
@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_more_generated_programs_compile_to_ptx(tmp_path):
    assert _generated_compile_to_ptx(30, 79 * 1000, tmp_path) > 50


@pytest.mark.skipif(GXX is None, reason="g++ is not installed")
@pytest.mark.parametrize("k", range(12))
def test_generated_program_on_emulated_cuda(k, tmp_path):
    """What the generated CUDA computes equals the reference, on fuzzed programs too."""
    drawn = _generated(1, seed=78 * 1000 + k)[0]
    check_on_emulated_cuda(drawn.source, drawn.instances, tmp_path, f"generated program {k}")
