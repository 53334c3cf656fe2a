"""The host program as C: the same program as :mod:`acrobat.codegen.host`, compiled.

The Python host program costs about 0.3 us per recorded node and per list cell: a
Python call per IR function call, a tuple per record, an ``AdtValue`` per constructor
(BiRNN small b64: ~3.7 ms of a ~12 ms run). This module emits the same program as a C
extension module (built on first use by :func:`acrobat.native.build_extension`): each
IR function a C function, records written as int64 rows into per-kernel buffers, ADT
values made and matched through the class's slots directly.

**Same program, same semantics.** Every host value is the Python object the Python
program would hold (ints, floats, bools, tuples, :class:`~acrobat.ir.values.AdtValue`).
A host int or a tensor (its value id) also has an int64 *shadow*: C functions take such
parameters as int64s, records and host int arithmetic read the shadow, and the object is
made only where one is needed (a constructor's field, a tuple, a return), so a value id
that only flows from one kernel to the next is never a Python object. Int arithmetic on
shadows gives Python's results (floor division and modulo included) and stops the
program (as below) where Python's ints would leave the int64 range or Python raises; an
int parameter that holds another int type (a NumPy one) stops it too, since its
arithmetic is NumPy's. Comparisons of two Python floats compare the doubles; everything
else is CPython's own (``PyNumber_Add``, ``PyObject_RichCompare``...), so results,
rounding and errors are Python's. The emitted code follows :class:`_Gen` line by line:
the depth conventions of :func:`~acrobat.codegen.host.depth_use`, hoisted and ``LATE``
keys, ``parallel``/``map`` depths, phases, ghost ops, independence's depth variables,
self tail calls as loops. Tests compare the two programs' records bit for bit.

**Fibers.** A program with fiber functions (tensor reads, spawns, phase barriers: the
protocol of :mod:`acrobat.runtime.fibers`) is emitted with them as plain C functions that run
on fibers of their own: each instance and each spawned child gets a C stack (``_FIBERS``:
mmap'd, pooled), a read (``fiber_read``), a spawn (``fiber_spawn``) or a barrier
(``fiber_phase``) switches back to the scheduler (``HostRun.run_fibers``), which runs them in
the Python scheduler's order, so both programs record the same rows in the same passes.

**What it leaves to Python.** Functions passed as values (and fiber programs on Python 3.14
and later) are not emitted (:func:`generate_host_c` returns None). At run time, *any*
exception in the C program (a host failure, a value out of the int64 range, a recursion
deeper than :data:`MAX_C_DEPTH` C frames or than a fiber's stack holds, a self tail loop past
its limit) abandons the C run: the runtime discards its records and runs the Python program
from the start (for a fiber run that already executed a flush, the whole run starts over),
which then raises its own typed error (or succeeds), so errors are exactly the Python
program's.
"""

from __future__ import annotations

import math
import sys

from acrobat.codegen import ident
from acrobat.codegen.host import (
    _HOST_OPS,
    LATE,
    LOOP_LIMIT,
    MOVES,
    READS,
    _Gen,
    _read_only,
    calls_itself_in_tail,
)
from acrobat.codegen.records import READ_ARGMAX, READ_ITEM, REDUCE, STRIDE
from acrobat.ir.list_ops import LIST_REDUCTIONS, NEEDS_AN_ELEMENT, signature
from acrobat.ir.nodes import (
    Const,
    CtorCall,
    Expr,
    FnCall,
    Function,
    GlobalRef,
    If,
    KernelCall,
    Let,
    Map,
    Match,
    Module,
    OpCall,
    Parallel,
    ParamRef,
    Pattern,
    PCtor,
    Phase,
    Proj,
    PVar,
    PWild,
    TupleExpr,
    Var,
)
from acrobat.ir.ops import LIST_INDEX_ERROR, NEGATIVE_INT_POWER
from acrobat.ir.types import BOOL, FLOAT, INT, TensorType, TupleType

MAX_C_DEPTH = 4000
"""Nested calls of host functions the C program makes before it gives the run to the
Python program (whose frames do not use the C stack): 4,000 frames of a few hundred
bytes each stay far inside any thread's stack."""

MODULE_PLACEHOLDER = "@MODULE@"

_NUMBER_OPS = {
    "h.add": "PyNumber_Add({0}, {1})",
    "h.sub": "PyNumber_Subtract({0}, {1})",
    "h.mul": "PyNumber_Multiply({0}, {1})",
    "h.truediv": "PyNumber_TrueDivide({0}, {1})",
    "h.floordiv": "PyNumber_FloorDivide({0}, {1})",
    "h.mod": "PyNumber_Remainder({0}, {1})",
    "h.pow": "h_pow({0}, {1})",
    "h.lt": "PyObject_RichCompare({0}, {1}, Py_LT)",
    "h.le": "PyObject_RichCompare({0}, {1}, Py_LE)",
    "h.gt": "PyObject_RichCompare({0}, {1}, Py_GT)",
    "h.ge": "PyObject_RichCompare({0}, {1}, Py_GE)",
    "h.eq": "PyObject_RichCompare({0}, {1}, Py_EQ)",
    "h.ne": "PyObject_RichCompare({0}, {1}, Py_NE)",
    "h.and": "h_and({0}, {1})",
    "h.or": "h_or({0}, {1})",
    "h.neg": "PyNumber_Negative({0})",
    "h.not": "h_not({0})",
    "h.abs": "PyNumber_Absolute({0})",
    "h.min": "h_min({0}, {1})",
    "h.max": "h_max({0}, {1})",
    "h.len": "h_len(st, {0})",
    "h.int": "PyNumber_Long({0})",
    "h.float": "PyNumber_Float({0})",
    "h.nth": "h_nth(st, {0}, {1})",
}
assert set(_NUMBER_OPS) == set(_HOST_OPS), "every host op needs its C form"

_COMPARE = {"h.lt": "<", "h.le": "<=", "h.gt": ">", "h.ge": ">=", "h.eq": "==", "h.ne": "!="}
_RICH = {op: "Py_" + op[2:].upper() for op in _COMPARE}  # h.lt -> Py_LT


class Unsupported(Exception):
    """A construct the C host program does not emit: the program stays Python."""


def _v(name: str) -> str:
    return ident("v_", name)


def _fn(name: str) -> str:
    return ident("f_", name)


def _tramp(name: str) -> str:
    """The C function that runs fiber function ``name`` on a tuple of its arguments."""
    return ident("t_", name)


def _boxed(name: str) -> str:
    """The C function that calls IR function ``name`` with every argument a Python object
    (a fiber's trampoline, a map's items, the entry): it unboxes the ones ``name``'s C
    function takes as int64."""
    return ident("w_", name)


def _u(cname: str) -> str:
    """The int64 shadow of C local ``cname`` (``U`` starts no other C local's name)."""
    return "U" + cname


def _unboxes(ty) -> bool:
    """A value of IR type ``ty`` is a Python int the C program keeps as an int64 too: a
    host ``int``, or a tensor (its value id)."""
    return ty == INT or isinstance(ty, TensorType)


_I64_MIN = "(-9223372036854775807LL - 1)"


def _box(kind: str, value: str) -> str:
    """The object (a new reference) of int64 ``value`` of shadow ``kind``: an int, or the
    tuple of a kernel's ``k`` output ids starting at ``value`` ("n<k>")."""
    return f"PyLong_FromLongLong({value})" if kind == "i" else f"ids_tuple({value}, {kind[1:]})"


class _Conflict(Exception):
    """A C local whose definitions disagree on its int64 shadow: the function is generated
    again without one for it."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def _c_string(s: str) -> str:
    """A C string literal of ``s`` (UTF-8 bytes, every non-plain byte escaped)."""
    out = []
    for b in s.encode():
        c = chr(b)
        out.append(c if (c.isalnum() or c in "_ .-+") and b < 128 else f"\\{b:03o}")
    return '"' + "".join(out) + '"'


class _CGen(_Gen):
    """The C flavour of :class:`acrobat.codegen.host._Gen`: every method that writes code
    is its own; the independence bookkeeping of blocks (``block``, ``prune``,
    ``set_depth``) is inherited, with the two hooks that write depth code overridden."""

    def __init__(
        self,
        m: Module,
        fibers: frozenset[str],
        kernels: list[str],
        base: int,
        independence: bool,
        weights: tuple,
    ):
        super().__init__(m, fibers, kernels, base, independence)
        self.widths = [3 + len(m.function_map[k].params) for k in kernels]
        self.consts: dict[tuple, int] = {}  # (type, repr) -> index in K[]
        self.const_code: list[str] = []
        self.ctors: dict[str, int] = {"Nil": 0, "Cons": 1}
        self.weights = {name: i for i, name in enumerate(weights)}
        self.locals: set[str] = set()  # the C locals of the function being generated
        self.depths: set[str] = set()  # its depth variables (int64_t)
        # int64 shadows: a C local of a host int or a tensor (value id) is kept as an int64
        # (``_u(name)``) beside its Python object, which is made only where one is needed
        # (NULL until then); a tuple of a kernel's outputs as its first id ("n<count>")
        self.kinds: dict[str, str | None] = {}  # C local -> "i", "n<k>" or None (no shadow)
        self.tys: dict[str, object] = {}  # C local -> the IR type of what it holds
        self.no_shadow: frozenset[str] = frozenset()  # locals a conflict left without one
        self.boxed_uses: set[str] = set()  # locals read as objects before any definition
        self.convs: set[str] = set()  # int64 temporaries of conversions
        self.ind = 1  # the indent of the last line written

    def emit(self, indent: int, text: str) -> None:
        self.ind = indent
        super().emit(indent, text)

    # -- helpers -----------------------------------------------------------------------
    def fresh(self) -> str:
        self.tmp += 1
        name = f"_t{self.tmp}"
        self.locals.add(name)
        return name

    def const(self, value) -> str:
        t = type(value)
        if t is bool:
            return "Py_True" if value else "Py_False"
        if t is int:
            key = ("int", str(value))
            if -(1 << 63) < value < (1 << 63):
                code = f"PyLong_FromLongLong({value}LL)"
            else:
                code = f'PyLong_FromString("{value}", NULL, 10)'
        elif t is float:
            if not math.isfinite(value):
                raise Unsupported("a constant that is not finite")
            key = ("float", value.hex())
            code = f"PyFloat_FromDouble({value.hex()})"
        elif t is tuple and all(type(x) in (tuple, str) for x in value):
            # a list reduction's signature: (shape, dtype, shape)
            key = ("sig", repr(value))
            code = _py_build(value)
        else:
            raise Unsupported(f"a constant of type {t.__name__}")
        i = self.consts.get(key)
        if i is None:
            i = self.consts[key] = len(self.consts)
            self.const_code.append(code)
        return f"K[{i}]"

    def ctor(self, name: str) -> str:
        i = self.ctors.get(name)
        if i is None:
            i = self.ctors[name] = len(self.ctors)
        return f"CT[{i}]"

    def atom(self, e: Expr) -> str:
        """A borrowed reference to the value of an atom."""
        if isinstance(e, Var):
            name = _v(e.name)
            self.locals.add(name)
            return self.boxed(name)
        if isinstance(e, Const):
            return self.const(e.value)
        if isinstance(e, ParamRef):
            i = self.weights.get(e.name)
            if i is None:  # the Python program's weights are those it uses: never here
                raise Unsupported(f"weight {e.name!r} is not among the host program's")
            return f"st->w[{i}]"
        if isinstance(e, GlobalRef):
            raise Unsupported("a function passed as a value")
        raise Unsupported(f"not an atom: {type(e).__name__}")

    def set(self, ind: int, target: str, expr: str) -> None:
        """``target = expr`` where ``expr`` returns a new reference (NULL: an error); a
        target with an int64 shadow gets it from the object."""
        self.locals.add(target)
        ty = self.tys.get(target)
        kind = self.define(target, "i" if ty is not None and _unboxes(ty) else None)
        self.emit(ind, f"SET({target}, {expr});")
        if kind == "i":
            self.emit(ind, f"if (ux({target}, &{_u(target)}) < 0) goto error;")

    def set_i64(self, ind: int, target: str, value: str, kind: str = "i") -> None:
        """``target = value``, an int64 expression: a value id or host int (kind "i"), or
        the first of a kernel's ``k`` output ids (kind "n<k>"); its object is made when
        something needs it."""
        self.locals.add(target)
        if self.define(target, kind) is None:  # no shadow: the object now
            self.emit(ind, f"SET({target}, {_box(kind, value)});")
            return
        self.emit(ind, f"Py_CLEAR({target}); {_u(target)} = {value};")

    def define(self, name: str, kind: str | None) -> str | None:
        """Record a definition of C local ``name`` whose shadow is ``kind``; the kind it
        gets (None when a conflict left it without one). Every definition of a local must
        agree (or the function is generated again: :class:`_Conflict`)."""
        if name in self.no_shadow:
            kind = None
        if name in self.kinds:
            if self.kinds[name] != kind:
                raise _Conflict(name)
        elif kind is not None and name in self.boxed_uses:
            raise _Conflict(name)
        else:
            self.kinds[name] = kind
        return kind

    def boxed(self, name: str) -> str:
        """``name`` as a borrowed Python object: made from its shadow when it has none."""
        kind = self.kinds.get(name)
        if name not in self.kinds:
            self.boxed_uses.add(name)
        elif kind is not None:
            box = _box(kind, _u(name))
            self.emit(self.ind, f"if ({name} == NULL && ({name} = {box}) == NULL) goto error;")
        return name

    def unboxed(self, e: Expr) -> str | None:
        """An int64 expression for ``e`` (a shadowed local or an int constant), or None."""
        if isinstance(e, Var):
            name = _v(e.name)
            return _u(name) if self.kinds.get(name) == "i" else None
        if isinstance(e, Const) and type(e.value) is int and -(1 << 63) <= e.value < (1 << 63):
            return f"({e.value}LL)" if e.value != -(1 << 63) else _I64_MIN
        return None

    def i64(self, e: Expr, ind: int, record: bool = False) -> str:
        """An int64 expression for ``e``, converted from its object when it has no shadow
        (``record``: as a record argument, which takes any int, else as a host int)."""
        u = self.unboxed(e)
        if u is not None:
            return u
        self.tmp += 1
        c = f"_c{self.tmp}"
        self.convs.add(c)
        conv = "as_i64" if record else "ux"
        self.emit(ind, f"if ({conv}({self.atom(e)}, &{c}) < 0) goto error;")
        return c

    def call_args(self, fn: str, args, ind: int) -> list[str]:
        """The C arguments of a call of ``fn``: an int64 for each parameter of a shadowed
        type, an object for the others."""
        params = self.m.function_map[fn].params
        return [self.i64(a, ind) if _unboxes(p.ty) else self.atom(a) for a, p in zip(args, params)]

    def call_expr(self, name: str, args: list[str], depth: str, boxed: bool = False) -> str:
        """A call of ``name`` with C arguments ``args`` (``boxed``: every one an object,
        through :func:`_boxed`'s function)."""
        use = self.use[name]
        extra = [depth] if use == READS else ([f"&{depth}"] if use == MOVES else [])
        f = _boxed(name) if boxed else _fn(name)
        return f"{f}({', '.join(['st', *args, *extra])})"

    def max_expr(self, names: list[str]) -> str:
        out = names[0]
        for n in names[1:]:
            out = f"MAX64({out}, {n})"
        return out

    # -- functions ---------------------------------------------------------------------
    def signature(self, f: Function, boxed: bool = False) -> str:
        """The C function of ``f``: its host ints and tensors as int64 (value ids), its
        other parameters as objects; ``boxed``: :func:`_boxed`'s, every one an object."""
        params = [
            f"int64_t p_{i}" if _unboxes(p.ty) and not boxed else f"PyObject *p_{i}"
            for i, p in enumerate(f.params)
        ]
        use = self.use[f.name]
        if use == READS:
            params.append("int64_t d")
        elif use == MOVES:
            params.append("int64_t *dp")
        name = _boxed(f.name) if boxed else _fn(f.name)
        return f"static PyObject *{name}({', '.join(['hs_t *st', *params])})"

    def boxed_function(self, f: Function) -> list[str]:
        """:func:`_boxed`'s function of ``f``: unboxes its int64 arguments and calls it."""
        lines = [self.signature(f, boxed=True) + " {"]
        args = []
        for i, p in enumerate(f.params):
            if _unboxes(p.ty):
                lines.append(f"    int64_t a_{i};")
                lines.append(f"    if (ux(p_{i}, &a_{i}) < 0) return NULL;")
                args.append(f"a_{i}")
            else:
                args.append(f"p_{i}")
        use = self.use[f.name]
        args += ["d"] if use == READS else (["dp"] if use == MOVES else [])
        lines.append(f"    return {_fn(f.name)}({', '.join(['st', *args])});")
        lines.append("}")
        return lines

    def function(self, f: Function) -> list[str]:
        """The C function of ``f``; generated again, without a shadow for a local, when
        that local's definitions disagree on one (a name bound in two clauses with
        different types, say)."""
        no_shadow: set[str] = set()
        while True:
            try:
                return self.function_once(f, frozenset(no_shadow))
            except _Conflict as c:
                if c.name in no_shadow:  # cannot happen: without a shadow, every kind is None
                    raise Unsupported(f"local {c.name}") from None
                no_shadow.add(c.name)

    def function_once(self, f: Function, no_shadow: frozenset[str]) -> list[str]:
        self.lines, self.tmp, self.locals, self.depths = [], 0, set(), set()
        self.kinds, self.tys, self.boxed_uses, self.convs = {}, {}, set(), set()
        self.int_errors = False  # an int64 op jumps to the two exits that stop the program
        self.no_shadow = no_shadow
        self.below = {}
        self.current = f
        self.is_fiber = f.name in self.fibers
        self.loops = calls_itself_in_tail(f)
        self.read_only = _read_only(f.body) if self.independence else frozenset()
        use = self.use[f.name]
        params = [_v(p.name) for p in f.params]
        self.locals.update(params)
        for name, p in zip(params, f.params):
            self.tys[name] = p.ty
            self.define(name, "i" if _unboxes(p.ty) else None)
        if self.loops:
            self.emit(1, "top:")
            self.emit(1, f"if (++loops > {LOOP_LIMIT}L) {{")
            self.emit(
                2, 'PyErr_SetString(PyExc_RecursionError, "a self tail loop past its limit");'
            )
            self.emit(2, "goto error;")
            self.emit(1, "}")
        self.tail(f.body, 1)
        body = self.lines
        head = [self.signature(f) + " {", "    PyObject *ret = NULL;", "    long loops = 0;"]
        head.append("    (void)loops;")
        for name in sorted(self.locals - set(params)):
            head.append(f"    PyObject *{name} = NULL;")
            if self.kinds.get(name) is not None:
                head.append(f"    int64_t {_u(name)} = 0;")
        boxing = []  # parameters passed as int64 that have no shadow here (a conflict)
        for i, (name, p) in enumerate(zip(params, f.params)):
            if not _unboxes(p.ty):
                head.append(f"    PyObject *{name} = p_{i};")
                head.append(f"    Py_INCREF({name});")
            elif self.kinds.get(name) == "i":
                head.append(f"    PyObject *{name} = NULL;")
                head.append(f"    int64_t {_u(name)} = p_{i};")
            else:
                head.append(f"    PyObject *{name} = NULL;")
                boxing.append(f"    if (({name} = PyLong_FromLongLong(p_{i})) == NULL) goto error;")
        if self.convs:
            head.append(f"    int64_t {', '.join(sorted(self.convs))};")
        if use == MOVES:
            head.append("    int64_t d = *dp;")
        if self.depths:
            head.append(f"    int64_t {', '.join(sorted(self.depths))};")
        head.append("    int64_t o;")
        head.append("    (void)o;")
        head.append("    if (++st->depth > MAX_C_DEPTH) {")
        head.append('        PyErr_SetString(PyExc_RecursionError, "host program too deep for C");')
        head.append("        goto error;")
        head.append("    }")
        if self.fibers:  # on a fiber's stack: stop well before its end
            head.append(
                "    if (st->stack_lo != NULL && (char *)__builtin_frame_address(0) < "
                "st->stack_lo) {"
            )
            head.append(
                '        PyErr_SetString(PyExc_RecursionError, "host program too deep for a '
                "fiber's stack\");"
            )
            head.append("        goto error;")
            head.append("    }")
        head += boxing
        tail = []
        if self.int_errors:  # (every path of the body returns or loops: never fallen into)
            tail += [
                "    goto error;",
                "overflow:",
                '    PyErr_SetString(PyExc_OverflowError, "a host int out of the int64 range");',
                "    goto error;",
                "zerodiv:",
                '    PyErr_SetString(PyExc_ZeroDivisionError, "integer division or modulo by zero");',
                "    goto error;",
            ]
        tail += ["error:", "    ret = NULL;", "done:", "    st->depth--;"]
        tail += [f"    Py_XDECREF({name});" for name in sorted(self.locals)]
        tail += ["    return ret;", "}"]
        self.current = None
        return head + body + tail

    def ret(self, ind: int, value: str) -> None:
        """Return C local ``value`` from the function being generated."""
        self.ind = ind
        self.emit(ind, f"ret = {self.boxed(value)};")
        self.emit(ind, "Py_INCREF(ret);")
        if self.use[self.current.name] == MOVES:
            self.emit(ind, "*dp = d;")
        self.emit(ind, "goto done;")

    def tail(self, e: Expr, ind: int) -> None:
        if isinstance(e, Let):
            self.block(e, ind, lambda body: self.tail(body, ind))
        elif isinstance(e, If):
            self.branch(
                e.cond, ind, lambda i: self.tail(e.then, i), lambda i: self.tail(e.orelse, i)
            )
        elif isinstance(e, Match):
            self.match(e, ind, None)
        else:
            self.tail_value(e, ind)

    def tail_value(self, e: Expr, ind: int) -> None:
        if self.loops and isinstance(e, FnCall) and e.fn == self.current.name:
            params = self.current.params
            if params:
                self.emit(ind, "{")
                news = []
                for j, (a, p) in enumerate(zip(e.args, params)):
                    n = f"n{j}"
                    if _unboxes(p.ty):
                        self.emit(ind + 1, f"int64_t {n} = {self.i64(a, ind + 1)};")
                    else:
                        self.emit(ind + 1, f"PyObject *{n} = {self.atom(a)};")
                        self.emit(ind + 1, f"Py_INCREF({n});")
                    news.append(n)
                for p, n in zip(params, news):
                    if _unboxes(p.ty):  # its shadow, or its object when it has none
                        self.set_i64(ind + 1, _v(p.name), n)
                    else:
                        self.emit(ind + 1, f"Py_XSETREF({_v(p.name)}, {n});")
                self.emit(ind, "}")
            self.emit(ind, "goto top;")
            return
        r = self.fresh()
        self.bind(r, e, ind)
        self.ret(ind, r)

    def branch(self, cond: Expr, ind: int, then, orelse) -> None:
        self.emit(ind, "{")
        self.emit(ind + 1, f"int c = PyObject_IsTrue({self.atom(cond)});")
        self.emit(ind + 1, "if (c < 0) goto error;")
        self.emit(ind + 1, "if (c) {")
        then(ind + 2)
        self.emit(ind + 1, "} else {")
        orelse(ind + 2)
        self.emit(ind + 1, "}")
        self.emit(ind, "}")

    def match(self, e: Match, ind: int, target: str | None) -> None:
        s = self.atom(e.scrutinee)
        clauses = list(e.clauses)

        def clause(i: int, ind: int) -> None:
            c = clauses[i]
            tests, binds = self.pattern(c.pattern, s)

            def body(ind: int) -> None:
                for name, path in binds:
                    self.set(ind, name, f"XNEW({path})")
                if target is None:
                    self.tail(c.body, ind)
                else:
                    self.bind(target, c.body, ind)

            if i == len(clauses) - 1 or not tests:  # the last case needs no test
                body(ind)
                return
            self.emit(ind, "{")
            self.emit(ind + 1, "int m = 1;")
            for path, ctor in tests:
                self.emit(ind + 1, f"if (m) m = is_ctor(st, {path}, {self.ctor(ctor)});")
                self.emit(ind + 1, "if (m < 0) goto error;")
            self.emit(ind + 1, "if (m) {")
            body(ind + 2)
            self.emit(ind + 1, "} else {")
            clause(i + 1, ind + 2)
            self.emit(ind + 1, "}")
            self.emit(ind, "}")

        clause(0, ind)

    def pattern(self, p: Pattern, s: str):
        """``(tests, binds)``: ``(C path, ctor)`` checks in order (each path valid once
        the tests before it hold) and ``(variable, C path)`` bindings."""
        tests: list[tuple[str, str]] = []
        binds: list[tuple[str, str]] = []

        def go(p: Pattern, path: str) -> None:
            if isinstance(p, PVar):
                name = _v(p.var.name)
                self.locals.add(name)
                self.tys[name] = p.var.ty
                binds.append((name, path))
            elif isinstance(p, PCtor):
                tests.append((path, p.ctor))
                for j, q in enumerate(p.fields):
                    go(q, f"fld(st, {path}, {j})")
            elif isinstance(p, PWild):  # matches anything, binds nothing
                pass
            else:
                raise Unsupported(f"pattern {type(p).__name__}")

        go(p, s)
        return tests, binds

    # -- expressions -------------------------------------------------------------------
    def bind(self, target: str, e: Expr, ind: int) -> None:
        t = type(e)
        self.tys[target] = e.ty
        if t in (Var, Const) and e.ty is not None and _unboxes(e.ty) and (u := self.unboxed(e)):
            self.set_i64(ind, target, u)
        elif t is Var and (self.kinds.get(_v(e.name)) or "").startswith("n"):
            self.set_i64(ind, target, _u(_v(e.name)), self.kinds[_v(e.name)])
        elif t in (Var, Const, ParamRef, GlobalRef):
            self.set(ind, target, f"XNEW({self.atom(e)})")
        elif t is KernelCall:
            self.kernel_call(target, e, ind)
        elif t is FnCall:
            self.fn_call(target, e, ind)
        elif t is OpCall:
            self.op(target, e, ind)
        elif t is CtorCall:
            args = [self.atom(a) for a in e.args]
            fields = (
                f"PyTuple_Pack({len(args)}{''.join(', ' + a for a in args)})"
                if args
                else "NEWREF(EMPTY)"
            )
            self.set(ind, target, f"adt_new(st, {self.ctor(e.ctor)}, {fields})")
        elif t is TupleExpr:
            args = [self.atom(a) for a in e.fields]
            code = (
                f"PyTuple_Pack({len(args)}{''.join(', ' + a for a in args)})"
                if args
                else "NEWREF(EMPTY)"
            )
            self.set(ind, target, code)
        elif t is Proj:
            kind = self.kinds.get(_v(e.tup.name)) if isinstance(e.tup, Var) else None
            if kind and kind.startswith("n") and 0 <= e.index < int(kind[1:]):
                self.set_i64(ind, target, f"{_u(_v(e.tup.name))} + {e.index}")  # a kernel output
            else:
                self.set(ind, target, f"PySequence_GetItem({self.atom(e.tup)}, {e.index})")
        elif t is Parallel:
            self.parallel(target, e, ind)
        elif t is Map:
            self.map(target, e, ind)
        elif t is Phase:
            if self.is_fiber:  # wait until every fiber has reached the barrier
                self.emit(ind, "if (fiber_phase(st) < 0) goto error;")
            self.emit(ind, f"d = (floordiv64(d, STRIDE) + 1) * STRIDE + {self.base};")
            self.set(ind, target, "NEWREF(EMPTY)")
        elif t is If:
            self.branch(
                e.cond,
                ind,
                lambda i: self.bind(target, e.then, i),
                lambda i: self.bind(target, e.orelse, i),
            )
        elif t is Match:
            self.match(e, ind, target)
        elif t is Let:
            self.block(e, ind, lambda body: self.bind(target, body, ind))
        else:
            raise Unsupported(f"host code for {t.__name__}")

    def fn_call(self, target: str, e: FnCall, ind: int) -> None:
        if e.fn not in self.use:
            raise Unsupported(f"a call of {e.fn!r}")
        args = self.call_args(e.fn, e.args, ind)
        self.set(ind, target, self.call_expr(e.fn, args, "d"))

    def kernel_call(self, target: str, e: KernelCall, ind: int) -> None:
        k = self.kid[e.kernel]
        n_out = len(e.ty.fields) if isinstance(e.ty, TupleType) else 1
        if e.depth is None and n_out == 1 and target in self.read_only:
            key = f"d - floormod64(d, STRIDE) + {LATE}LL"
        elif e.depth is None:
            key = "d"
        else:
            key = f"d - floormod64(d, STRIDE) + {e.depth}LL"
        kparams = self.m.function_map[e.kernel].params
        width = self.widths[k]
        self.emit(ind, "{")
        self.emit(ind + 1, f"int64_t r[{width}];")
        self.emit(ind + 1, f"o = st->nv; st->nv = o + {n_out};")
        self.emit(ind + 1, f"r[0] = {key}; r[1] = o; r[2] = st->inst;")
        for j, (a, p) in enumerate(zip(e.args, kparams)):
            if p.ty == FLOAT:
                self.emit(ind + 1, f"if (fbits({self.atom(a)}, &r[{3 + j}]) < 0) goto error;")
            else:
                self.emit(ind + 1, f"r[{3 + j}] = {self.i64(a, ind + 1, record=True)};")
        self.emit(ind + 1, f"if (rec_row(st, {k}, {width}, r) < 0) goto error;")
        self.emit(ind, "}")
        if e.depth is None:
            self.emit(ind, "d += 1;")
        self.set_i64(ind, target, "o", "i" if n_out == 1 else f"n{n_out}")

    def int_op(self, target: str, e: OpCall, ind: int) -> bool:
        """``e`` on int64s when its operands are host ints with shadows (or constants):
        Python's results, and the C program stops (as on any error) where Python's ints
        would leave the int64 range or Python raises. False: not such an op."""
        if not e.args or any(a.ty != INT for a in e.args):
            return False
        us = [self.unboxed(a) for a in e.args]
        if any(u is None for u in us):
            return False
        op, a, b = e.op, us[0], us[-1]
        if op in ("h.add", "h.sub", "h.mul") and e.ty == INT:
            self.emit(ind, "{")
            self.emit(ind + 1, "int64_t x_;")
            self.emit(ind + 1, f"if (__builtin_{op[2:]}_overflow({a}, {b}, &x_)) goto overflow;")
            self.int_errors = True
            self.set_i64(ind + 1, target, "x_")
            self.emit(ind, "}")
        elif op in ("h.floordiv", "h.mod") and e.ty == INT:
            self.emit(ind, f"if ({b} == 0) goto zerodiv;")
            self.emit(ind, f"if ({b} == -1 && {a} == {_I64_MIN}) goto overflow;")
            self.int_errors = True
            f = "py_floordiv64" if op == "h.floordiv" else "py_floormod64"
            self.set_i64(ind, target, f"{f}({a}, {b})")
        elif op in _COMPARE and e.ty == BOOL:
            self.set(ind, target, f"NEWREF(({a} {_COMPARE[op]} {b}) ? Py_True : Py_False)")
        elif op in ("h.min", "h.max") and e.ty == INT:  # Python's: the first of equal ones
            self.set_i64(ind, target, f"({b} {'<' if op == 'h.min' else '>'} {a} ? {b} : {a})")
        elif op in ("h.neg", "h.abs") and e.ty == INT:
            self.emit(ind, f"if ({a} == {_I64_MIN}) goto overflow;")
            self.int_errors = True
            self.set_i64(ind, target, f"-({a})" if op == "h.neg" else f"({a} < 0 ? -({a}) : {a})")
        else:
            return False
        return True

    def op(self, target: str, e: OpCall, ind: int) -> None:
        if e.op in _NUMBER_OPS and self.int_op(target, e, ind):
            return
        if e.op in _COMPARE and all(a.ty == FLOAT for a in e.args):  # floats: no call
            a, b = (self.atom(x) for x in e.args)
            self.set(ind, target, f"h_fcmp({a}, {b}, {_RICH[e.op]})")
            return
        if e.op in _NUMBER_OPS:
            code = _NUMBER_OPS[e.op].format(*(self.atom(a) for a in e.args))
            if e.op in ("h.min", "h.max") and e.ty == FLOAT:
                code = f"to_float({code})"
            self.set(ind, target, code)
        elif e.op == "ghost":
            self.emit(ind, f"d += {int(e.attr('count', 1))}LL;")
            self.set(ind, target, "NEWREF(EMPTY)")
        elif e.op in LIST_REDUCTIONS and self.is_fiber:
            self.list_reduction(target, e, ind)
        elif e.op in ("item", "argmax") and self.is_fiber:
            code = READ_ITEM if e.op == "item" else READ_ARGMAX
            self.set(ind, target, f"fiber_read(st, {code}, {self.atom(e.args[0])})")
            # as the Python program: the depth restarts at this phase's base
            self.emit(ind, f"d = d - floormod64(d, STRIDE) + {self.base}LL;")
        else:
            raise Unsupported(f"op {e.op} in the host program")

    def list_reduction(self, target: str, e: OpCall, ind: int) -> None:
        """As the Python program's: a request the scheduler's ``read_all`` answers once
        what is pending has run (:mod:`acrobat.runtime.segments`); the result is the value
        id taken here (``argmax``: the answer, an index)."""
        kind = LIST_REDUCTIONS.index(e.op)
        sig = self.const(signature(e))
        ys, q = (
            (self.atom(e.args[1]), self.atom(e.args[2]))
            if e.op == "list_attend"
            else ("NULL", "NULL")
        )
        need = int(e.op in NEEDS_AN_ELEMENT)  # xs[0]'s error on an empty list
        if e.op == "list_argmax":
            self.set(
                ind,
                target,
                f"h_reduce(st, {kind}, {need}, -1, {self.atom(e.args[0])}, NULL, NULL, {sig})",
            )
        else:
            self.emit(ind, "o = st->nv; st->nv = o + 1;")
            xs = self.atom(e.args[0])
            self.emit(
                ind,
                f"if (h_reduced(st, {kind}, {need}, o, {xs}, {ys}, {q}, {sig}) < 0) goto error;",
            )
            self.set_i64(ind, target, "o")
        self.emit(ind, f"d = d - floormod64(d, STRIDE) + {self.base}LL;")

    def parallel(self, target: str, e: Parallel, ind: int) -> None:
        self.emit(ind, "{")
        ind += 1
        if any(isinstance(c, FnCall) and self.use.get(c.fn) for c in e.calls):
            self.emit(ind, "int64_t d0 = d;")
        outs, ds = [], []
        still = False
        spawned: list[tuple[int, FnCall]] = []  # fiber calls: children of one spawn
        for j, c in enumerate(e.calls):
            if not isinstance(c, FnCall) or c.fn not in self.use:
                raise Unsupported("a parallel of something other than calls")
            if c.fn in self.fibers:
                spawned.append((j, c))
                outs.append(None)
                continue
            use = self.use[c.fn]
            r = self.fresh()
            args = self.call_args(c.fn, c.args, ind)
            if use == MOVES:
                dd = f"dd{j}"
                self.emit(ind, f"int64_t {dd} = d0;")
                self.set(ind, r, self.call_expr(c.fn, args, dd))
                ds.append(dd)
            else:
                self.set(ind, r, self.call_expr(c.fn, args, "d0"))
                still = True
            outs.append(r)
        if spawned:  # after the other calls, as the Python program (their order matters)
            r = self.fresh()
            n = len(spawned)
            fns = ", ".join(_tramp(c.fn) for _, c in spawned)
            self.emit(ind, "{")
            self.emit(ind + 1, f"fiber_fn sf[{n}] = {{{fns}}};")
            self.emit(ind + 1, f"PyObject *sa[{n}];")
            packs = []  # every argument's object first: nothing to release if one fails
            for _, c in spawned:
                args = [self.atom(a) for a in c.args]
                packs.append(
                    f"PyTuple_Pack({len(args)}{''.join(', ' + a for a in args)})"
                    if args
                    else "NEWREF(EMPTY)"
                )
            for i, pack in enumerate(packs):
                self.emit(ind + 1, f"sa[{i}] = {pack};")
            self.set(ind + 1, r, f"fiber_spawn(st, {n}, sf, sa, d0)")
            self.emit(ind, "}")
            for i, (j, _) in enumerate(spawned):
                outs[j] = f"spawn_value({r}, {i})"
                dd = f"ds{j}"
                self.emit(ind, f"int64_t {dd};")
                self.emit(ind, f"if (spawn_depth(st, {i}, &{dd}) < 0) goto error;")
                ds.append(dd)
        self.set(
            ind,
            target,
            f"PyTuple_Pack({len(outs)}{''.join(', ' + o for o in outs)})"
            if outs
            else "NEWREF(EMPTY)",
        )
        if still and ds:
            ds.append("d0")
        if ds:
            self.emit(ind, f"d = {self.max_expr(ds)};")
        self.emit(ind - 1, "}")

    def map(self, target: str, e: Map, ind: int) -> None:
        if e.fn not in self.use:
            raise Unsupported(f"a map of {e.fn!r}")
        use = self.use[e.fn]
        extra = [self.atom(a) for a in e.extra]
        items, res = self.fresh(), self.fresh()
        self.set(ind, items, f"to_list(st, {self.atom(e.xs)})")
        if e.fn in self.fibers:  # every item a child fiber of one spawn
            ex, r = self.fresh(), self.fresh()
            pack = (
                f"PyTuple_Pack({len(extra)}{''.join(', ' + a for a in extra)})"
                if extra
                else "NEWREF(EMPTY)"
            )
            self.set(ind, ex, pack)
            self.set(ind, r, f"fiber_spawn_map(st, {_tramp(e.fn)}, {items}, {ex}, d)")
            self.set(ind, res, f"spawn_values(st, {r}, &d)")
            self.set(ind, target, f"from_list(st, {res})")
            return
        self.set(ind, res, f"PyList_New(PyList_GET_SIZE({items}))")
        self.emit(ind, "{")
        if use == MOVES:
            self.emit(ind + 1, "int64_t dmax = d;")
        self.emit(ind + 1, f"for (Py_ssize_t i = 0; i < PyList_GET_SIZE({items}); i++) {{")
        if use:
            self.emit(ind + 2, "int64_t di = d;")
        call = self.call_expr(e.fn, [f"PyList_GET_ITEM({items}, i)", *extra], "di", boxed=True)
        self.emit(ind + 2, f"PyObject *y = {call};")
        self.emit(ind + 2, "if (y == NULL) goto error;")
        self.emit(ind + 2, f"PyList_SET_ITEM({res}, i, y);")
        if use == MOVES:
            self.emit(ind + 2, "if (di > dmax) dmax = di;")
        self.emit(ind + 1, "}")
        if use == MOVES:
            self.emit(ind + 1, "d = dmax;")
        self.emit(ind, "}")
        self.set(ind, target, f"from_list(st, {res})")

    # -- blocks: host._Gen.block, whose depth code is written by these two ---------------
    def snapshot_depth(self, ind: int, name: str) -> None:
        self.depths.add(name)
        self.emit(ind, f"{name} = d;")

    def assign_depth_max(self, ind: int, names: list[str]) -> None:
        self.emit(ind, f"d = {self.max_expr(names)};")


_PRELUDE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "adt.h" /* acrobat/native/adt.h: AdtValue's layout, shared with values.c */

#define STRIDE ((int64_t)@STRIDE@LL)
#define MAX_C_DEPTH @MAX_C_DEPTH@
#define MAX64(a, b) ((a) > (b) ? (a) : (b))
#define NEWREF(x) (Py_INCREF(x), (x))
static inline PyObject *XNEW(PyObject *x) {
    Py_XINCREF(x);
    return x;
}
#define SET(var, expr)                    \
    do {                                  \
        PyObject *set_new_ = (expr);      \
        if (set_new_ == NULL)             \
            goto error;                   \
        Py_XSETREF(var, set_new_);        \
    } while (0)

#define N_KERNELS @N_KERNELS@
#define N_CONSTS @N_CONSTS@
#define N_CTORS @N_CTORS@

typedef struct {
    int64_t *data;
    Py_ssize_t len, cap;
} rbuf_t;

/* fibers (programs that read tensor values): x86-64 switches stacks with the few
   instructions of acrobat_fiber_switch below (ELF assembly: Linux, the BSDs); elsewhere (or
   with ACROBAT_FIBER_UCONTEXT) with ucontext, whose swapcontext also makes a system call per
   switch */
#if !defined(__x86_64__) || !defined(__ELF__) || defined(ACROBAT_FIBER_UCONTEXT)
#define FIBER_UCONTEXT 1
#include <ucontext.h>
#endif
#include <sys/mman.h>
typedef struct fiber fiber_t;

typedef struct {
    PyObject_HEAD
    int64_t nv, inst;
    int depth;
    acrobat_adt_layout adt; /* the ADT class (owned) and its slots */
    PyObject *weights; /* the tuple of weight value ids */
    PyObject **w;      /* its items */
    rbuf_t rec[N_KERNELS > 0 ? N_KERNELS : 1];
    fiber_t *cur;      /* the fiber running (NULL: the scheduler's own stack) */
    char *stack_lo;    /* a host function whose frame lies below this stops (NULL: no fiber) */
    void *main_sp;     /* the scheduler's stack pointer while a fiber runs */
#ifdef FIBER_UCONTEXT
    ucontext_t main_ctx;
#endif
    fiber_t **fibers;  /* every fiber of the run in progress */
    Py_ssize_t n_fibers, cap_fibers;
    int callback_failed; /* run_fibers raised what flush or read_all raised */
} hs_t;

static PyObject *K[N_CONSTS > 0 ? N_CONSTS : 1];
static PyObject *CT[N_CTORS];
static PyObject *EMPTY;

#define SLOT ACROBAT_SLOT

static inline int64_t floormod64(int64_t a, int64_t b) {
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

static inline int64_t floordiv64(int64_t a, int64_t b) { return (a - floormod64(a, b)) / b; }

static int rec_row(hs_t *st, int k, int width, const int64_t *row) {
    rbuf_t *b = &st->rec[k];
    if (b->len + width > b->cap) {
        Py_ssize_t cap = b->cap ? 2 * b->cap : 1024;
        while (cap < b->len + width)
            cap *= 2;
        int64_t *data = PyMem_Realloc(b->data, (size_t)cap * sizeof(int64_t));
        if (data == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        b->data = data;
        b->cap = cap;
    }
    memcpy(b->data + b->len, row, (size_t)width * sizeof(int64_t));
    b->len += width;
    return 0;
}

/* the int64 of an int (any, or exactly a Python int when exact), or -1 with an error */
static inline int to_i64(PyObject *v, int64_t *out, int exact) {
    if (exact ? !PyLong_CheckExact(v) : !PyLong_Check(v)) {
        PyErr_SetString(PyExc_TypeError, exact ? "a host int that is not a Python int"
                                               : "a record argument that is not an int");
        return -1;
    }
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) {
        PyErr_SetString(PyExc_OverflowError, "a host int out of the int64 range");
        return -1;
    }
    if (x == -1 && PyErr_Occurred())
        return -1;
    *out = (int64_t)x;
    return 0;
}

/* a record's argument: any int */
static int as_i64(PyObject *v, int64_t *out) { return to_i64(v, out, 0); }

/* the int64 of a host int the program also keeps unboxed: exactly a Python int (another
   int type, a NumPy one say, stops the C program: the Python program computes with it) */
static inline int ux(PyObject *v, int64_t *out) { return to_i64(v, out, 1); }

/* Python's a // b and a % b (the caller has ruled out b == 0 and INT64_MIN // -1) */
static inline int64_t py_floordiv64(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static inline int64_t py_floormod64(int64_t a, int64_t b) {
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

/* a comparison of two host floats: the doubles' when both are Python floats (what
   float's own comparison does), else Python's */
static PyObject *h_fcmp(PyObject *a, PyObject *b, int op) {
    if (!PyFloat_CheckExact(a) || !PyFloat_CheckExact(b))
        return PyObject_RichCompare(a, b, op);
    double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
    int r;
    switch (op) {
    case Py_LT: r = x < y; break;
    case Py_LE: r = x <= y; break;
    case Py_GT: r = x > y; break;
    case Py_GE: r = x >= y; break;
    case Py_EQ: r = x == y; break;
    default: r = x != y; break;
    }
    return NEWREF(r ? Py_True : Py_False);
}

static int fbits(PyObject *v, int64_t *out) {
    double x = PyFloat_AsDouble(v);
    if (x == -1.0 && PyErr_Occurred())
        return -1;
    memcpy(out, &x, sizeof x);
    return 0;
}

static PyObject *ids_tuple(int64_t o, int n) {
    PyObject *t = PyTuple_New(n);
    if (t == NULL)
        return NULL;
    for (int j = 0; j < n; j++) {
        PyObject *x = PyLong_FromLongLong(o + j);
        if (x == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, j, x);
    }
    return t;
}

/* a new ADT value of ctor with fields (a new reference, stolen) */
static PyObject *adt_new(hs_t *st, PyObject *ctor, PyObject *fields) {
    if (fields == NULL)
        return NULL;
    PyObject *obj = acrobat_adt_alloc(&st->adt, ctor, fields);
    Py_DECREF(fields);
    return obj;
}

/* 1 if v is an ADT value of constructor ctor, 0 if of another, -1 (error) if no ADT value */
static int is_ctor(hs_t *st, PyObject *v, PyObject *ctor) {
    if (v == NULL)
        return -1;
    if (Py_TYPE(v) != st->adt.cls) {
        PyErr_SetString(PyExc_TypeError, "a match of a value that is no ADT value");
        return -1;
    }
    PyObject *c = SLOT(v, st->adt.off_ctor);
    if (c == ctor)
        return 1;
    if (c == NULL) {
        PyErr_SetString(PyExc_TypeError, "an ADT value without its constructor");
        return -1;
    }
    /* two interned strings are equal only if they are one object (ctor names in the
       generated code and in Python literals are interned) */
    if (PyUnicode_CheckExact(c) && PyUnicode_CHECK_INTERNED(c) && PyUnicode_CHECK_INTERNED(ctor))
        return 0;
    return PyObject_RichCompareBool(c, ctor, Py_EQ);
}

/* field j of ADT value v (borrowed), or NULL with an error */
static PyObject *fld(hs_t *st, PyObject *v, Py_ssize_t j) {
    if (v == NULL)
        return NULL;
    if (Py_TYPE(v) != st->adt.cls) {
        PyErr_SetString(PyExc_TypeError, "a field of a value that is no ADT value");
        return NULL;
    }
    PyObject *f = SLOT(v, st->adt.off_fields);
    if (f == NULL || !PyTuple_Check(f) || PyTuple_GET_SIZE(f) <= j) {
        PyErr_SetString(PyExc_TypeError, "an ADT value without that field");
        return NULL;
    }
    return PyTuple_GET_ITEM(f, j);
}

/* the elements of a Cons/Nil list, as a new Python list */
static PyObject *to_list(hs_t *st, PyObject *v) {
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (;;) {
        int c = is_ctor(st, v, CT[1]);
        if (c < 0) {
            Py_DECREF(out);
            return NULL;
        }
        if (!c)
            return out;
        PyObject *head = fld(st, v, 0), *rest = fld(st, v, 1);
        if (head == NULL || rest == NULL || PyList_Append(out, head) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        v = rest;
    }
}

/* Cons(items[0], ... Nil()) of a Python list */
static PyObject *from_list(hs_t *st, PyObject *items) {
    PyObject *out = adt_new(st, CT[0], NEWREF(EMPTY));
    for (Py_ssize_t i = PyList_GET_SIZE(items) - 1; out != NULL && i >= 0; i--) {
        PyObject *pair = PyTuple_Pack(2, PyList_GET_ITEM(items, i), out);
        Py_DECREF(out);
        out = adt_new(st, CT[1], pair);
    }
    return out;
}

static PyObject *h_len(hs_t *st, PyObject *v) {
    Py_ssize_t n = 0;
    for (;;) {
        int c = is_ctor(st, v, CT[1]);
        if (c < 0)
            return NULL;
        if (!c)
            return PyLong_FromSsize_t(n);
        v = fld(st, v, 1);
        n++;
    }
}

static PyObject *h_and(PyObject *a, PyObject *b) {
    int t = PyObject_IsTrue(a);
    if (t < 0)
        return NULL;
    return NEWREF(t ? b : a);
}

static PyObject *h_or(PyObject *a, PyObject *b) {
    int t = PyObject_IsTrue(a);
    if (t < 0)
        return NULL;
    return NEWREF(t ? a : b);
}

static PyObject *h_not(PyObject *a) {
    int t = PyObject_IsTrue(a);
    if (t < 0)
        return NULL;
    return NEWREF(t ? Py_False : Py_True);
}

/* xs[k] of a List as ops.list_item: Python's, a ValueError out of range */
static PyObject *h_nth(hs_t *st, PyObject *xs, PyObject *k) {
    PyObject *len = h_len(st, xs);
    if (len == NULL)
        return NULL;
    Py_ssize_t n = PyLong_AsSsize_t(len);
    Py_DECREF(len);
    int ov;
    long long i = PyLong_AsLongLongAndOverflow(k, &ov);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i < 0)
        i += n;
    if (ov || i < 0 || i >= n) {
        PyErr_Format(PyExc_ValueError, "@LIST_INDEX_ERROR@: %S for a list of %zd", k, n);
        return NULL;
    }
    for (; i > 0; i--)
        xs = fld(st, xs, 1);
    PyObject *x = fld(st, xs, 0);
    Py_XINCREF(x);
    return x;
}

/* a ** b as Python's, but an int to a negative int power fails as ops.int_pow: the
   language types int ** int as int */
static PyObject *h_pow(PyObject *a, PyObject *b) {
    if (PyLong_Check(a) && PyLong_Check(b)) {
        int ov;
        long long e = PyLong_AsLongLongAndOverflow(b, &ov);
        if (e < 0 || ov < 0) {
            PyErr_Format(PyExc_ValueError,
                         "@NEGATIVE_INT_POWER@: %S ** %S (for a float power write float(a) ** b)",
                         a, b);
            return NULL;
        }
    }
    return PyNumber_Power(a, b, Py_None);
}

/* min(a, b) / max(a, b) as Python's builtins: the first of equal items */
static PyObject *h_min(PyObject *a, PyObject *b) {
    int lt = PyObject_RichCompareBool(b, a, Py_LT);
    if (lt < 0)
        return NULL;
    return NEWREF(lt ? b : a);
}

static PyObject *h_max(PyObject *a, PyObject *b) {
    int gt = PyObject_RichCompareBool(b, a, Py_GT);
    if (gt < 0)
        return NULL;
    return NEWREF(gt ? b : a);
}

/* float(x) of a new reference x (stolen) */
static PyObject *to_float(PyObject *x) {
    if (x == NULL)
        return NULL;
    PyObject *f = PyNumber_Float(x);
    Py_DECREF(x);
    return f;
}
"""

_FIBERS = r"""
/* ---- fibers: the protocol of acrobat/runtime/fibers.py, on C stacks ----
   Every instance (and every child of a spawn) runs its host functions as plain C calls on
   a stack of its own; a tensor read, a spawn or a phase barrier switches back to the
   scheduler (hs_run_fibers), which runs the fibers in the order the Python scheduler does,
   so both programs record the same nodes with the same value ids. */
#define FIBER_STACK ((size_t)512 << 10)
#define FIBER_GUARD ((size_t)4096)
#define FIBER_MARGIN ((size_t)128 << 10) /* kept free below the deepest host frame */
#define FIBER_POOL 1024                   /* stacks kept for the next fibers */

/* AddressSanitizer (ACROBAT_SANITIZE=1 builds) is told of every stack switch: the stack
   a switch goes to (start), and where it came from once there (finish) */
#if defined(__SANITIZE_ADDRESS__)
#define FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FIBER_ASAN 1
#endif
#endif
#ifdef FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
/* a pooled stack still holds the redzones of the frames its last fiber left on it */
#define ASAN_FRESH_STACK(f) \
    __asan_unpoison_memory_region((f)->stack + FIBER_GUARD, FIBER_STACK - FIBER_GUARD)
#define ASAN_FIELDS const void *asan_lo; size_t asan_size; void *asan_fake;
#define ASAN_TO_FIBER(f) void *asan_fake_ = NULL; \
    __sanitizer_start_switch_fiber(&asan_fake_, (f)->stack + FIBER_GUARD, FIBER_STACK - FIBER_GUARD)
#define ASAN_ON_SCHEDULER() __sanitizer_finish_switch_fiber(asan_fake_, NULL, NULL)
#define ASAN_TO_SCHEDULER(f, last) \
    __sanitizer_start_switch_fiber((last) ? NULL : &(f)->asan_fake, (f)->asan_lo, (f)->asan_size)
#define ASAN_ON_FIBER(f) __sanitizer_finish_switch_fiber((f)->asan_fake, &(f)->asan_lo, &(f)->asan_size)
#else
#define ASAN_FRESH_STACK(f)
#define ASAN_FIELDS
#define ASAN_TO_FIBER(f)
#define ASAN_ON_SCHEDULER()
#define ASAN_TO_SCHEDULER(f, last)
#define ASAN_ON_FIBER(f)
#endif

enum { F_NEW, F_RUN, F_READ, F_SPAWN, F_PHASE, F_DONE, F_ERROR };

typedef PyObject *(*fiber_fn)(hs_t *st, PyObject *args, int64_t *dp);

struct fiber {
    void *sp; /* its stack pointer while it waits */
#ifdef FIBER_UCONTEXT
    ucontext_t ctx;
#endif
    char *stack;            /* FIBER_STACK bytes (NULL until it first runs) */
    fiber_t *parent;        /* the spawning fiber (NULL: an instance) */
    Py_ssize_t slot;        /* its place in the parent's results (an instance: its number) */
    Py_ssize_t pending;     /* a spawn's children still running */
    PyObject *results;      /* a spawn's results so far: a tuple of the children's values */
    int64_t *depths;        /* and their depths (owned; read right after the spawn) */
    fiber_t **kids;         /* a spawn's children, for the scheduler to queue */
    Py_ssize_t n_kids;
    int64_t inst, d;        /* its instance; the depth it starts at */
    int depth, state, op, abort;
    fiber_fn fn;            /* what it runs, on */
    PyObject *args;         /* these arguments (a tuple; owned until it starts) */
    PyObject *ret;          /* F_DONE: its value (owned) */
    int64_t ret_d;          /* and the depth it ended at */
    PyObject *vid;          /* F_READ: the value id it reads */
    PyObject *answer;       /* what its wait returns (owned until taken) */
    ASAN_FIELDS             /* the stack it was switched from (sanitizer builds) */
};

static char *fiber_pool[FIBER_POOL];
static int fiber_pooled; /* the pool is touched under the GIL only */

static char *stack_get(void) {
    if (fiber_pooled > 0)
        return fiber_pool[--fiber_pooled];
    void *p = mmap(NULL, FIBER_STACK, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        PyErr_NoMemory();
        return NULL;
    }
    if (mprotect(p, FIBER_GUARD, PROT_NONE) != 0) { /* a guard page below the stack */
        munmap(p, FIBER_STACK);
        PyErr_NoMemory();
        return NULL;
    }
    return (char *)p;
}

static void stack_put(char *s) {
    if (fiber_pooled < FIBER_POOL)
        fiber_pool[fiber_pooled++] = s;
    else
        munmap(s, FIBER_STACK);
}

static hs_t *fiber_boot; /* the run whose fiber starts now (set under the GIL) */
static void fiber_start(void);

#ifndef FIBER_UCONTEXT
/* acrobat_fiber_switch(save, to): push the callee-saved registers and the floating-point
   control words, store the stack pointer in *save, and continue on the stack `to` (one
   this function saved, or one fiber_init laid out as if it had) */
__attribute__((visibility("hidden"))) void acrobat_fiber_switch(void **save, void *to);
__asm__(".text\n"
        ".p2align 4\n"
        ".globl acrobat_fiber_switch\n"
        ".hidden acrobat_fiber_switch\n"
        ".type acrobat_fiber_switch, @function\n"
        "acrobat_fiber_switch:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    subq $8, %rsp\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size acrobat_fiber_switch, .-acrobat_fiber_switch\n");

static void fiber_init(fiber_t *f) {
    uint64_t *sp = (uint64_t *)(((uintptr_t)(f->stack + FIBER_STACK)) & ~(uintptr_t)15);
    *--sp = 0;                              /* fiber_start's return address: never used */
    *--sp = (uint64_t)(uintptr_t)fiber_start; /* where the switch returns to */
    for (int i = 0; i < 6; i++)             /* rbp rbx r12 r13 r14 r15 */
        *--sp = 0;
    uint32_t mx;
    uint16_t cw;
    __asm__ volatile("stmxcsr %0" : "=m"(mx));
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    *--sp = 0;
    memcpy(sp, &mx, sizeof mx);
    memcpy((char *)sp + 4, &cw, sizeof cw);
    f->sp = sp;
}
#define SWITCH_TO_FIBER(st, f) acrobat_fiber_switch(&(st)->main_sp, (f)->sp)
#define SWITCH_TO_SCHEDULER(st, f) acrobat_fiber_switch(&(f)->sp, (st)->main_sp)
#else
static void fiber_init(fiber_t *f) {
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = f->stack + FIBER_GUARD;
    f->ctx.uc_stack.ss_size = FIBER_STACK - FIBER_GUARD;
    f->ctx.uc_link = NULL;
    makecontext(&f->ctx, fiber_start, 0);
}
#define SWITCH_TO_FIBER(st, f) swapcontext(&(st)->main_ctx, &(f)->ctx)
#define SWITCH_TO_SCHEDULER(st, f) swapcontext(&(f)->ctx, &(st)->main_ctx)
#endif
#define TO_FIBER(st, f) do { ASAN_TO_FIBER(f); SWITCH_TO_FIBER(st, f); ASAN_ON_SCHEDULER(); } while (0)
#define TO_SCHEDULER(st, f, last) do { ASAN_TO_SCHEDULER(f, last); SWITCH_TO_SCHEDULER(st, f); } while (0)

/* run fiber f until it waits or ends (its state says which); -1: no stack for it */
static int fiber_resume(hs_t *st, fiber_t *f) {
    if (f->stack == NULL) {
        if ((f->stack = stack_get()) == NULL)
            return -1;
        ASAN_FRESH_STACK(f);
        fiber_init(f);
    }
    st->cur = f;
    st->inst = f->inst;
    st->depth = f->depth;
    st->stack_lo = f->stack + FIBER_GUARD + FIBER_MARGIN;
    f->state = F_RUN;
    fiber_boot = st;
    TO_FIBER(st, f);
    st->cur = NULL;
    st->stack_lo = NULL;
    return 0;
}

static void fiber_start(void) {
    hs_t *st = fiber_boot;
    fiber_t *f = st->cur;
    ASAN_ON_FIBER(f);
    int64_t d = f->d;
    PyObject *args = f->args;
    f->args = NULL;
    PyObject *r = f->fn(st, args, &d);
    Py_DECREF(args);
    f->state = F_ERROR;
    if (r != NULL) { /* its value and depth as they are: no tuple, no int object */
        f->ret = r;
        f->ret_d = d;
        f->state = F_DONE;
    }
    TO_SCHEDULER(st, f, 1); /* never resumed */
    abort();
}

/* wait in state `state` until the scheduler resumes this fiber; -1 when the run stops */
static int fiber_wait(hs_t *st, int state) {
    fiber_t *f = st->cur;
    if (f == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a fiber's wait outside run_fibers");
        return -1;
    }
    f->state = state;
    f->depth = st->depth;
    TO_SCHEDULER(st, f, 0);
    ASAN_ON_FIBER(f);
    if (f->abort) {
        PyErr_SetString(PyExc_RuntimeError, "the run stopped");
        return -1;
    }
    return 0;
}

/* the value of a tensor read (op: READ_ITEM or READ_ARGMAX of value id vid), once the
   scheduler has executed what is pending; a new reference */
static PyObject *fiber_read(hs_t *st, int op, PyObject *vid) {
    fiber_t *f = st->cur;
    if (f == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a tensor read outside run_fibers");
        return NULL;
    }
    f->op = op;
    Py_INCREF(vid);
    Py_XSETREF(f->vid, vid);
    if (fiber_wait(st, F_READ) < 0)
        return NULL;
    PyObject *a = f->answer;
    f->answer = NULL;
    return a;
}

static int fiber_phase(hs_t *st) { return fiber_wait(st, F_PHASE); }

/* the elements of List xs as a new Python list */
static PyObject *h_items(hs_t *st, PyObject *v) {
    PyObject *out = PyList_New(0);
    while (out != NULL) {
        int c = is_ctor(st, v, CT[1]);
        if (c <= 0)
            return c < 0 ? (Py_DECREF(out), NULL) : out;
        PyObject *x = fld(st, v, 0);
        if (x == NULL || PyList_Append(out, x) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        v = fld(st, v, 1);
    }
    return NULL;
}

/* a list reduction (acrobat.ir.list_ops) of List xs (and ys, query q for attend; else
   NULL): the fiber waits as for a read, with the request (kind, out or None, xs's items,
   ys's or None, q or None, sig), until acrobat.runtime.segments has answered it; "need":
   an empty list (the shorter of two) raises xs[0]'s error. A new reference to the
   answer: None, or an argmax's index */
static PyObject *h_reduce(hs_t *st, int kind, int need, int64_t out, PyObject *xs, PyObject *ys,
                          PyObject *q, PyObject *sig) {
    PyObject *a = h_items(st, xs), *b = NULL, *req = NULL, *k = NULL, *o = NULL, *ans = NULL;
    if (a == NULL || (ys != NULL && (b = h_items(st, ys)) == NULL))
        goto done;
    Py_ssize_t n = PyList_GET_SIZE(a);
    if (b != NULL && PyList_GET_SIZE(b) < n)
        n = PyList_GET_SIZE(b);
    if (need && n == 0) {
        PyErr_SetString(PyExc_ValueError, "@LIST_INDEX_ERROR@: 0 for a list of 0");
        goto done;
    }
    k = PyLong_FromLong(kind);
    o = out < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(out);
    if (k == NULL || o == NULL)
        goto done;
    req = PyTuple_Pack(6, k, o, a, b ? b : Py_None, q ? q : Py_None, sig);
    if (req != NULL)
        ans = fiber_read(st, @REDUCE@, req);
done:
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(k);
    Py_XDECREF(o);
    Py_XDECREF(req);
    return ans;
}

/* h_reduce of a reduction whose result is the value id ``out``: 0, or -1 on an error */
static int h_reduced(hs_t *st, int kind, int need, int64_t out, PyObject *xs, PyObject *ys,
                     PyObject *q, PyObject *sig) {
    PyObject *ans = h_reduce(st, kind, need, out, xs, ys, q, sig);
    Py_XDECREF(ans);
    return ans == NULL ? -1 : 0;
}

static fiber_t *fiber_new(hs_t *st, fiber_fn fn, PyObject *args, int64_t d, int64_t inst,
                          fiber_t *parent, Py_ssize_t slot) {
    if (st->n_fibers == st->cap_fibers) {
        Py_ssize_t cap = st->cap_fibers ? 2 * st->cap_fibers : 256;
        fiber_t **grown = PyMem_Realloc(st->fibers, (size_t)cap * sizeof(fiber_t *));
        if (grown == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        st->fibers = grown;
        st->cap_fibers = cap;
    }
    fiber_t *f = PyMem_Calloc(1, sizeof(fiber_t));
    if (f == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    st->fibers[st->n_fibers++] = f;
    f->fn = fn;
    Py_INCREF(args);
    f->args = args;
    f->d = d;
    f->inst = inst;
    f->parent = parent;
    f->slot = slot;
    f->state = F_NEW;
    return f;
}

/* child i's value (borrowed), of a spawn's results */
static PyObject *spawn_value(PyObject *results, Py_ssize_t i) {
    return PyTuple_GET_ITEM(results, i);
}

/* child i's depth, of the spawn the running fiber has just come back from */
static int spawn_depth(hs_t *st, Py_ssize_t i, int64_t *d) {
    if (st->cur == NULL || st->cur->depths == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a spawn's depths outside its fiber");
        return -1;
    }
    *d = st->cur->depths[i];
    return 0;
}

/* run fns[i](args[i] (stolen), depth d) as n child fibers of the running one, and wait for
   them all: a new tuple of their values, in order (their depths: spawn_depth) */
static PyObject *fiber_spawn(hs_t *st, Py_ssize_t n, fiber_fn *fns, PyObject **args, int64_t d) {
    fiber_t *f = st->cur;
    int ok = f != NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        ok = ok && args[i] != NULL;
    if (ok && (f->kids = PyMem_Calloc((size_t)n, sizeof(fiber_t *))) == NULL) {
        PyErr_NoMemory();
        ok = 0;
    }
    if (ok && (f->results = PyTuple_New(n)) == NULL)
        ok = 0;
    if (ok) {
        PyMem_Free(f->depths);
        if ((f->depths = PyMem_Calloc((size_t)n, sizeof(int64_t))) == NULL) {
            PyErr_NoMemory();
            ok = 0;
        }
    }
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        f->kids[i] = fiber_new(st, fns[i], args[i], d, f->inst, f, i);
        ok = f->kids[i] != NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        Py_XDECREF(args[i]);
    if (!ok) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "a spawn outside run_fibers");
        if (f != NULL) { /* children made so far never run: the run stops */
            PyMem_Free(f->kids);
            f->kids = NULL;
            Py_CLEAR(f->results);
        }
        return NULL;
    }
    f->n_kids = f->pending = n;
    if (fiber_wait(st, F_SPAWN) < 0)
        return NULL;
    PyObject *r = f->results;
    f->results = NULL;
    return r;
}

/* map of a fiber function: fn(item, *extra) for every item, as children; () for none */
static PyObject *fiber_spawn_map(hs_t *st, fiber_fn fn, PyObject *items, PyObject *extra,
                                 int64_t d) {
    Py_ssize_t n = PyList_GET_SIZE(items), k = PyTuple_GET_SIZE(extra);
    if (n == 0)
        return NEWREF(EMPTY);
    fiber_fn *fns = PyMem_Malloc((size_t)n * sizeof(fiber_fn));
    PyObject **args = PyMem_Calloc((size_t)n, sizeof(PyObject *));
    if (fns == NULL || args == NULL) {
        PyMem_Free(fns);
        PyMem_Free(args);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        fns[i] = fn;
        PyObject *a = PyTuple_New(1 + k);
        if (a != NULL) {
            PyObject *x = PyList_GET_ITEM(items, i);
            Py_INCREF(x);
            PyTuple_SET_ITEM(a, 0, x);
            for (Py_ssize_t j = 0; j < k; j++) {
                PyObject *y = PyTuple_GET_ITEM(extra, j);
                Py_INCREF(y);
                PyTuple_SET_ITEM(a, 1 + j, y);
            }
        }
        args[i] = a;
    }
    PyObject *r = fiber_spawn(st, n, fns, args, d);
    PyMem_Free(fns);
    PyMem_Free(args);
    return r;
}

/* the values of a spawn's results, as a list; *d becomes the max of *d and their depths */
static PyObject *spawn_values(hs_t *st, PyObject *results, int64_t *d) {
    Py_ssize_t n = PyTuple_GET_SIZE(results);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t di;
        if (spawn_depth(st, i, &di) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        if (di > *d)
            *d = di;
        PyObject *x = spawn_value(results, i);
        Py_INCREF(x);
        PyList_SET_ITEM(out, i, x);
    }
    return out;
}
"""

_EPILOGUE = r"""
static PyObject *hs_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    hs_t *st = (hs_t *)self;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "start(i, first_value=None)");
        return NULL;
    }
    int64_t i = PyLong_AsLongLong(args[0]);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    st->inst = i;
    if (nargs == 2 && args[1] != Py_None) {
        int64_t nv = PyLong_AsLongLong(args[1]);
        if (nv == -1 && PyErr_Occurred())
            return NULL;
        st->nv = nv;
    }
    Py_RETURN_NONE;
}

static PyObject *hs_next_value(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLongLong(((hs_t *)self)->nv);
}

/* records(k) -> bytearray: kernel k's rows (int64, native order) recorded so far */
static PyObject *hs_records(PyObject *self, PyObject *arg) {
    hs_t *st = (hs_t *)self;
    Py_ssize_t k = PyLong_AsSsize_t(arg);
    if (k == -1 && PyErr_Occurred())
        return NULL;
    if (k < 0 || k >= N_KERNELS) {
        PyErr_SetString(PyExc_IndexError, "no such kernel");
        return NULL;
    }
    return PyByteArray_FromStringAndSize((const char *)st->rec[k].data,
                                         st->rec[k].len * (Py_ssize_t)sizeof(int64_t));
}

static PyObject *hs_entry(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    hs_t *st = (hs_t *)self;
    if (nargs != @N_PARAMS@ + 1) {
        PyErr_SetString(PyExc_TypeError, "entry(*arguments, depth)");
        return NULL;
    }
    int64_t d = PyLong_AsLongLong(args[nargs - 1]);
    if (d == -1 && PyErr_Occurred())
        return NULL;
    st->depth = 0;
    PyObject *r = @ENTRY@(st@ENTRY_ARGS@, &d);
    if (r == NULL)
        return NULL;
    PyObject *dd = PyLong_FromLongLong(d);
    if (dd == NULL) {
        Py_DECREF(r);
        return NULL;
    }
    PyObject *out = PyTuple_Pack(2, r, dd);
    Py_DECREF(r);
    Py_DECREF(dd);
    return out;
}

/* take_records(k) -> bytearray: kernel k's rows recorded since the last take, which
   are then dropped */
static PyObject *hs_take_records(PyObject *self, PyObject *arg) {
    PyObject *out = hs_records(self, arg);
    if (out != NULL)
        ((hs_t *)self)->rec[PyLong_AsSsize_t(arg)].len = 0;
    return out;
}

/* take_all(alloc, widths[, groups]) -> tuple: per kernel k, its rows recorded since the
   last take (then dropped) as alloc((rows, widths[k])), an int64 array this fills; None
   where k recorded no row. A fiber program's flush takes them all in one call, into arrays
   that own their memory (no bytearray and memoryview per kernel, which an untraced run
   keeps with its DFGs until it ends: objects for the cycle collector's pass after it).
   groups (twin kernels, Executor.join_twins): a tuple of member tuples; then the tuple has
   one more item per group, its members' rows in member order, each with its member's
   place as one more column, and a member's own item is None (what join_twins makes, with
   no array per member: ~15 us a flush in Python, caches cold after the kernels) */
static int64_t *take_array(PyObject *alloc, Py_ssize_t rows, Py_ssize_t w, PyObject **arr) {
    *arr = PyObject_CallFunction(alloc, "((nn))", rows, w);
    Py_buffer view;
    if (*arr == NULL || PyObject_GetBuffer(*arr, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        Py_CLEAR(*arr);
        return NULL;
    }
    int64_t *data = view.buf;
    int ok = view.len == rows * w * (Py_ssize_t)sizeof(int64_t) && view.itemsize == 8;
    PyBuffer_Release(&view); /* the array owns its memory: data stays valid while it lives */
    if (!ok) {
        Py_CLEAR(*arr);
        PyErr_SetString(PyExc_ValueError, "take_all: alloc must make int64 arrays");
        return NULL;
    }
    return data;
}

static PyObject *hs_take_all(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    hs_t *st = (hs_t *)self;
    PyObject *groups = nargs == 3 ? args[2] : NULL;
    if ((nargs != 2 && nargs != 3) || !PyTuple_Check(args[1]) ||
        PyTuple_GET_SIZE(args[1]) != N_KERNELS || (groups != NULL && !PyTuple_Check(groups))) {
        PyErr_SetString(PyExc_TypeError,
                        "take_all(alloc, widths: a tuple per kernel[, groups: a tuple])");
        return NULL;
    }
    Py_ssize_t n_g = groups != NULL ? PyTuple_GET_SIZE(groups) : 0;
    Py_ssize_t width[N_KERNELS > 0 ? N_KERNELS : 1];
    int grouped[N_KERNELS > 0 ? N_KERNELS : 1];
    for (Py_ssize_t k = 0; k < N_KERNELS; k++) {
        grouped[k] = 0;
        width[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(args[1], k));
        if (width[k] <= 0 || st->rec[k].len % width[k] != 0) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "take_all: kernel %zd's rows are not %zd wide", k,
                             width[k]);
            return NULL;
        }
    }
    for (Py_ssize_t g = 0; g < n_g; g++) { /* every member once, of its group's width */
        PyObject *mem = PyTuple_GET_ITEM(groups, g);
        if (!PyTuple_Check(mem) || PyTuple_GET_SIZE(mem) == 0) {
            PyErr_SetString(PyExc_TypeError, "take_all: a group is a tuple of kernels");
            return NULL;
        }
        Py_ssize_t k0 = PyLong_AsSsize_t(PyTuple_GET_ITEM(mem, 0));
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(mem); j++) {
            Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(mem, j));
            if (k < 0 || k >= N_KERNELS || k0 < 0 || k0 >= N_KERNELS || grouped[k] ||
                width[k] != width[k0]) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError,
                                    "take_all: a group's members are distinct kernels of one "
                                    "width, each in one group");
                return NULL;
            }
            grouped[k] = 1;
        }
    }
    PyObject *out = PyTuple_New(N_KERNELS + n_g);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < N_KERNELS; k++) {
        PyObject *arr = Py_None;
        Py_ssize_t len = st->rec[k].len;
        if (len > 0 && !grouped[k]) {
            int64_t *data = take_array(args[0], len / width[k], width[k], &arr);
            if (data == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            memcpy(data, st->rec[k].data, (size_t)len * sizeof(int64_t));
            st->rec[k].len = 0;
        } else {
            Py_INCREF(arr);
        }
        PyTuple_SET_ITEM(out, k, arr);
    }
    for (Py_ssize_t g = 0; g < n_g; g++) {
        PyObject *mem = PyTuple_GET_ITEM(groups, g), *arr = Py_None;
        Py_ssize_t n_m = PyTuple_GET_SIZE(mem), rows = 0;
        Py_ssize_t w = width[PyLong_AsSsize_t(PyTuple_GET_ITEM(mem, 0))];
        for (Py_ssize_t j = 0; j < n_m; j++)
            rows += st->rec[PyLong_AsSsize_t(PyTuple_GET_ITEM(mem, j))].len / w;
        if (rows > 0) {
            int64_t *data = take_array(args[0], rows, w + 1, &arr);
            if (data == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            for (Py_ssize_t j = 0; j < n_m; j++) {
                rbuf_t *r = &st->rec[PyLong_AsSsize_t(PyTuple_GET_ITEM(mem, j))];
                for (Py_ssize_t i = 0; i < r->len / w; i++) {
                    memcpy(data, r->data + i * w, (size_t)w * sizeof(int64_t));
                    data[w] = j;
                    data += w + 1;
                }
                r->len = 0;
            }
        } else {
            Py_INCREF(arr);
        }
        PyTuple_SET_ITEM(out, N_KERNELS + g, arr);
    }
    return out;
}

static PyObject *hs_callback_failed(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyBool_FromLong(((hs_t *)self)->callback_failed);
}

#ifdef ENTRY_FIBER
/* a FIFO of fibers (the scheduler's ready queue) or a list (reads, barrier) */
typedef struct {
    fiber_t **at;
    Py_ssize_t head, len, cap;
} fiber_queue;

static int queue_push(fiber_queue *q, fiber_t *f) {
    if (q->head + q->len == q->cap) {
        if (q->head > 0 && q->head >= q->len) { /* room at the front: move down */
            memmove(q->at, q->at + q->head, (size_t)q->len * sizeof(fiber_t *));
            q->head = 0;
        } else {
            Py_ssize_t cap = q->cap ? 2 * q->cap : 256;
            fiber_t **grown = PyMem_Realloc(q->at, (size_t)cap * sizeof(fiber_t *));
            if (grown == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            q->at = grown;
            q->cap = cap;
        }
    }
    q->at[q->head + q->len++] = f;
    return 0;
}

static fiber_t *queue_pop(fiber_queue *q) {
    fiber_t *f = q->at[q->head++];
    if (--q->len == 0)
        q->head = 0;
    return f;
}

/* stop every fiber that waits (each unwinds its C frames, releasing what they hold), then
   free them all; the exception in flight, if any, stays */
static void fibers_free(hs_t *st) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    for (Py_ssize_t i = 0; i < st->n_fibers; i++) {
        fiber_t *f = st->fibers[i];
        if (f->stack != NULL && f->state != F_DONE && f->state != F_ERROR) {
            f->abort = 1;
            fiber_resume(st, f); /* it has a stack: no allocation, cannot fail */
            PyErr_Clear();
        }
    }
    for (Py_ssize_t i = 0; i < st->n_fibers; i++) {
        fiber_t *f = st->fibers[i];
        Py_XDECREF(f->args);
        Py_XDECREF(f->ret);
        Py_XDECREF(f->vid);
        Py_XDECREF(f->answer);
        Py_XDECREF(f->results);
        PyMem_Free(f->depths);
        PyMem_Free(f->kids);
        if (f->stack != NULL)
            stack_put(f->stack);
        PyMem_Free(f);
    }
    PyMem_Free(st->fibers);
    st->fibers = NULL;
    st->n_fibers = st->cap_fibers = 0;
    PyErr_Restore(type, value, tb);
}

/* run_fibers(arguments, depth, flush, read_all) -> (results, passes): every instance's
   entry function as a fiber (acrobat.runtime.fibers.run_fibers's protocol and order);
   when every fiber waits for a tensor value, flush() executes what is pending and
   read_all(ops, value ids) answers every read of the round, in order */
static PyObject *hs_run_fibers(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    hs_t *st = (hs_t *)self;
    if (nargs != 4 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "run_fibers(arguments: list, depth, flush, read_all)");
        return NULL;
    }
    if (st->fibers != NULL || st->cur != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "run_fibers is running already");
        return NULL;
    }
    int64_t base = PyLong_AsLongLong(args[1]);
    if (base == -1 && PyErr_Occurred())
        return NULL;
    PyObject *roots = args[0], *flush = args[2], *read_all = args[3];
    Py_ssize_t n = PyList_GET_SIZE(roots);
    PyObject *results = PyList_New(n), *out = NULL;
    fiber_queue ready = {0}, reads = {0}, barrier = {0};
    long passes = 0;
    st->callback_failed = 0;
    if (results == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyList_SET_ITEM(results, i, NEWREF(Py_None));
        PyObject *a = PySequence_Tuple(PyList_GET_ITEM(roots, i));
        if (a == NULL)
            goto fail;
        if (PyTuple_GET_SIZE(a) != @N_PARAMS@) {
            Py_DECREF(a);
            PyErr_SetString(PyExc_TypeError, "an instance with the wrong number of arguments");
            goto fail;
        }
        fiber_t *f = fiber_new(st, ENTRY_FIBER, a, base, i, NULL, i);
        Py_DECREF(a);
        if (f == NULL || queue_push(&ready, f) < 0)
            goto fail;
    }
    for (;;) {
        while (ready.len) {
            fiber_t *f = queue_pop(&ready);
            if (fiber_resume(st, f) < 0)
                goto fail;
            switch (f->state) {
            case F_READ:
                if (queue_push(&reads, f) < 0)
                    goto fail;
                break;
            case F_SPAWN:
                for (Py_ssize_t i = 0; i < f->n_kids; i++)
                    if (queue_push(&ready, f->kids[i]) < 0)
                        goto fail;
                PyMem_Free(f->kids);
                f->kids = NULL;
                break;
            case F_PHASE:
                if (queue_push(&barrier, f) < 0)
                    goto fail;
                break;
            case F_DONE: {
                stack_put(f->stack);
                f->stack = NULL;
                PyObject *ret = f->ret;
                f->ret = NULL;
                fiber_t *p = f->parent;
                if (p == NULL) { /* an instance: (value, depth) */
                    PyObject *dd = PyLong_FromLongLong(f->ret_d);
                    PyObject *pair = dd == NULL ? NULL : PyTuple_Pack(2, ret, dd);
                    Py_XDECREF(dd);
                    Py_DECREF(ret);
                    if (pair == NULL)
                        goto fail;
                    PyList_SetItem(results, f->slot, pair);
                } else {
                    PyTuple_SET_ITEM(p->results, f->slot, ret);
                    p->depths[f->slot] = f->ret_d;
                    if (--p->pending == 0 && queue_push(&ready, p) < 0)
                        goto fail;
                }
                break;
            }
            default: /* F_ERROR: the exception is set */
                goto fail;
            }
        }
        if (reads.len) {
            PyObject *r = PyObject_CallNoArgs(flush);
            if (r == NULL) {
                st->callback_failed = 1;
                goto fail;
            }
            Py_DECREF(r);
            passes++;
            PyObject *ops = PyList_New(reads.len), *vids = PyList_New(reads.len);
            for (Py_ssize_t i = 0; ops != NULL && vids != NULL && i < reads.len; i++) {
                fiber_t *f = reads.at[reads.head + i];
                PyObject *op = PyLong_FromLong(f->op);
                if (op == NULL) {
                    Py_CLEAR(ops);
                    break;
                }
                PyList_SET_ITEM(ops, i, op);
                PyList_SET_ITEM(vids, i, NEWREF(f->vid));
            }
            if (ops == NULL || vids == NULL) {
                Py_XDECREF(ops);
                Py_XDECREF(vids);
                goto fail;
            }
            PyObject *answers = PyObject_CallFunctionObjArgs(read_all, ops, vids, NULL);
            Py_DECREF(ops);
            Py_DECREF(vids);
            if (answers == NULL) {
                st->callback_failed = 1;
                goto fail;
            }
            PyObject *seq = PySequence_Fast(answers, "read_all must return a sequence");
            Py_DECREF(answers);
            if (seq == NULL || PySequence_Fast_GET_SIZE(seq) != reads.len) {
                if (seq != NULL) {
                    Py_DECREF(seq);
                    PyErr_SetString(PyExc_ValueError, "read_all answered another number of reads");
                }
                st->callback_failed = 1;
                goto fail;
            }
            for (Py_ssize_t i = 0; i < reads.len; i++) {
                fiber_t *f = reads.at[reads.head + i];
                Py_XSETREF(f->answer, NEWREF(PySequence_Fast_GET_ITEM(seq, i)));
                Py_CLEAR(f->vid);
                if (queue_push(&ready, f) < 0) {
                    Py_DECREF(seq);
                    goto fail;
                }
            }
            Py_DECREF(seq);
            reads.head = reads.len = 0;
        } else if (barrier.len) {
            for (Py_ssize_t i = 0; i < barrier.len; i++)
                if (queue_push(&ready, barrier.at[barrier.head + i]) < 0)
                    goto fail;
            barrier.head = barrier.len = 0;
        } else {
            break;
        }
    }
    out = Py_BuildValue("(Ol)", results, passes);
fail:
    Py_DECREF(results);
    PyMem_Free(ready.at);
    PyMem_Free(reads.at);
    PyMem_Free(barrier.at);
    fibers_free(st);
    return out;
}
#else
static PyObject *hs_run_fibers(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    (void)args;
    (void)nargs;
    PyErr_SetString(PyExc_TypeError, "run_fibers: the entry function is no fiber function");
    return NULL;
}
#endif

static void hs_dealloc(PyObject *self) {
    hs_t *st = (hs_t *)self;
    for (int k = 0; k < N_KERNELS; k++)
        PyMem_Free(st->rec[k].data);
    Py_XDECREF(st->adt.cls);
    Py_XDECREF(st->weights);
    Py_TYPE(self)->tp_free(self);
}

static PyMethodDef hs_methods[] = {
    {"start", (PyCFunction)(void (*)(void))hs_start, METH_FASTCALL,
     "start(i, first_value=None): the instance number and the next free value id"},
    {"next_value", hs_next_value, METH_NOARGS, "the next free value id"},
    {"records", hs_records, METH_O, "records(k): kernel k's rows so far, int64"},
    {"entry", (PyCFunction)(void (*)(void))hs_entry, METH_FASTCALL,
     "entry(*arguments, depth) -> (result, depth): one instance's host program"},
    {"take_records", hs_take_records, METH_O,
     "take_records(k): kernel k's rows since the last take, int64; then dropped"},
    {"take_all", (PyCFunction)(void (*)(void))hs_take_all, METH_FASTCALL,
     "take_all(alloc, widths[, groups]) -> tuple: every kernel's rows since the last take "
     "as alloc((rows, width)) (then dropped), None for one with no rows; with groups, "
     "each twin group's members' rows joined (a member column), the members None"},
    {"run_fibers", (PyCFunction)(void (*)(void))hs_run_fibers, METH_FASTCALL,
     "run_fibers(arguments, depth, flush, read_all) -> (results, passes)"},
    {"callback_failed", hs_callback_failed, METH_NOARGS,
     "whether the last run_fibers raised what flush or read_all raised"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject hs_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "@MODULE@.HostRun",
    .tp_basicsize = sizeof(hs_t),
    .tp_dealloc = hs_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "one run's host program state: records, next value id, instance",
    .tp_methods = hs_methods,
};

/* make(adt_class, weights) -> HostRun: weights, the value ids of the weights the program
   passes as values, in the order of HostProgram.weight_values */
static PyObject *hs_make(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2 || !PyType_Check(args[0]) || !PyTuple_Check(args[1]) ||
        PyTuple_GET_SIZE(args[1]) != @N_WEIGHTS@) {
        PyErr_SetString(PyExc_TypeError, "make(adt_class, weights: tuple of @N_WEIGHTS@)");
        return NULL;
    }
    acrobat_adt_layout adt;
    if (acrobat_adt_layout_of(args[0], &adt) < 0)
        return NULL;
    hs_t *st = PyObject_New(hs_t, &hs_type);
    if (st == NULL)
        return NULL;
    st->nv = 0;
    st->inst = 0;
    st->depth = 0;
    Py_INCREF(args[0]);
    st->adt = adt;
    Py_INCREF(args[1]);
    st->weights = args[1];
    st->w = ((PyTupleObject *)args[1])->ob_item;
    memset(st->rec, 0, sizeof st->rec);
    st->cur = NULL;
    st->stack_lo = NULL;
    st->main_sp = NULL;
    st->fibers = NULL;
    st->n_fibers = st->cap_fibers = 0;
    st->callback_failed = 0;
    return (PyObject *)st;
}

static PyMethodDef module_methods[] = {
    {"make", (PyCFunction)(void (*)(void))hs_make, METH_FASTCALL,
     "make(adt_class, weights) -> HostRun"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "@MODULE@",
                                        "a host program of acrobat, compiled", -1,
                                        module_methods};

PyMODINIT_FUNC PyInit_@MODULE@(void) {
    if (PyType_Ready(&hs_type) < 0)
        return NULL;
    EMPTY = PyTuple_New(0);
    if (EMPTY == NULL)
        return NULL;
@INIT@
    return PyModule_Create(&module_def);
}
"""


def generate_host_c(
    m: Module,
    fibers: frozenset[str],
    base: int,
    independence: bool = False,
    weights: tuple[str, ...] = (),
) -> str | None:
    """C source of the host program :func:`~acrobat.codegen.host.generate_host` makes for
    the same arguments (its module name is :data:`MODULE_PLACEHOLDER`, set when it is
    built), or None when the program has a construct the C program does not emit.
    ``weights``: the Python program's ``HostProgram.weight_values``; the C program's
    ``make(adt_class, ids)`` takes their value ids in that order.

    A program with fiber functions (its entry one of them) gets them as C functions run on
    fibers of their own (``run_fibers``); not on Python 3.14 and later, whose recursion
    checks read the C stack's bounds (a fiber's stack lies outside them)."""
    if fibers and (m.entry not in fibers or sys.version_info >= (3, 14)):
        return None
    kernels = [f.name for f in m.functions if f.is_kernel]
    g = _CGen(m, fibers, kernels, base, independence, weights)
    fns = [f for f in m.functions if not f.is_kernel]
    try:
        bodies = [g.function(f) for f in fns]
    except (Unsupported, NotImplementedError, KeyError):
        return None
    entry = m.function_map[m.entry]
    if g.use.get(m.entry) != MOVES:
        return None
    protos = [g.signature(f) + ";" for f in fns]
    protos += ["__attribute__((unused)) " + g.signature(f, boxed=True) + ";" for f in fns]
    code = "\n".join(line for body in [*bodies, *map(g.boxed_function, fns)] for line in body)
    tramps = []  # fiber functions on a tuple of their arguments (what a fiber runs)
    for f in fns:
        if f.name in fibers:
            args = "".join(f", PyTuple_GET_ITEM(a, {i})" for i in range(len(f.params)))
            head = f"static PyObject *{_tramp(f.name)}(hs_t *st, PyObject *a, int64_t *dp)"
            protos.append(head + ";")
            tramps.append(f"{head} {{ return {_boxed(f.name)}(st{args}, dp); }}")
    init = []
    for i, c in enumerate(g.const_code):
        init.append(f"    if ((K[{i}] = {c}) == NULL) return NULL;")
    for name, i in g.ctors.items():
        init.append(
            f"    if ((CT[{i}] = PyUnicode_InternFromString({_c_string(name)})) == NULL) return NULL;"
        )
    prelude = (
        _PRELUDE.replace("@STRIDE@", str(STRIDE))
        .replace("@MAX_C_DEPTH@", str(MAX_C_DEPTH))
        .replace("@N_KERNELS@", str(len(kernels)))
        .replace("@N_CONSTS@", str(len(g.consts)))
        .replace("@N_CTORS@", str(len(g.ctors)))
        .replace("@NEGATIVE_INT_POWER@", NEGATIVE_INT_POWER)
        .replace("@LIST_INDEX_ERROR@", LIST_INDEX_ERROR)
    )
    epilogue = (f"#define ENTRY_FIBER {_tramp(m.entry)}\n" if fibers else "") + _EPILOGUE.replace(
        "@N_PARAMS@", str(len(entry.params))
    ).replace("@ENTRY@", _boxed(m.entry)).replace(
        "@ENTRY_ARGS@", "".join(f", args[{i}]" for i in range(len(entry.params)))
    ).replace("@N_WEIGHTS@", str(len(weights))).replace("@INIT@", "\n".join(init))
    return "\n".join(
        [
            "/* acrobat's host program, compiled (acrobat/codegen/host_c.py generated it) */",
            prelude,
            _FIBERS.replace("@REDUCE@", str(REDUCE)).replace("@LIST_INDEX_ERROR@", LIST_INDEX_ERROR)
            if fibers
            else "",
            *protos,
            "",
            code,
            *tramps,
            epilogue,
        ]
    )


def _py_build(value: tuple) -> str:
    """C code making ``value``, a tuple of tuples of ints and of strings, with
    ``Py_BuildValue`` (``((4,), "float32", (4,))``: ``Py_BuildValue("((i)s(i))", 4,
    "float32", 4)``)."""
    fmt, args = [], []

    def walk(v) -> None:
        if type(v) is tuple:
            fmt.append("(")
            for x in v:
                walk(x)
            fmt.append(")")
        elif type(v) is str:
            fmt.append("s")
            args.append(_c_string(v))
        elif type(v) is int and -(1 << 31) < v < (1 << 31):
            fmt.append("i")
            args.append(str(v))
        else:
            raise Unsupported(f"a constant {v!r} in a signature")

    walk(value)
    return f"Py_BuildValue({_c_string(''.join(fmt))}{''.join(', ' + a for a in args)})"


__all__ = ["MAX_C_DEPTH", "MODULE_PLACEHOLDER", "Unsupported", "generate_host_c"]
