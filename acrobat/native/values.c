/* acrobat's ADT values made and walked in C, for the generated host program.
 *
 * The host program (acrobat/codegen/host.py) makes an ADT value for every constructor it
 * runs: BiRNN small b64 makes about 10,000 a run (list cells, mostly), and
 * ``AdtValue(ctor, fields)`` costs ~160 ns there, most of it entering the class's Python
 * ``__init__``. A maker made here builds the same object, an instance of that very class
 * (acrobat.ir.values.AdtValue) with its two slots filled, in ~40 ns: it allocates the
 * instance with the class's own allocator and stores the two references at the slots'
 * offsets, which it reads from the class's slot descriptors once, when it is made.
 *
 * adt_maker(cls) -> maker
 *   cls must be a class whose instances have exactly the slots ``ctor`` and ``fields``
 *   (T_OBJECT_EX member descriptors defined on cls itself) and no variable-size part;
 *   anything else raises TypeError. The maker:
 *     maker(ctor, fields=())  the value ``cls(ctor, fields)`` (fields made a tuple,
 *                             as AdtValue.__init__ does)
 *     maker.list(items)       Cons(items[0], Cons(items[1], ... Nil())) (from_list)
 *     maker.lists(items, like)  per entry of ``like`` (lists), a list of the next
 *                             len(entry) items (the outputs' lists, see below)
 *     maker.items(value)      [x0, x1, ...] of a Cons/Nil list (to_list): follows fields[1]
 *                             while ctor == "Cons"; a Cons whose fields are not a tuple of
 *                             two raises TypeError (never a crash)
 *     maker.fits(...)         acrobat.ir.values._fits's walk (an instance's type check) in
 *                             C: ~10x faster on a list of ints
 *     maker.relist(v, items, at)  a Cons/Nil list rebuilt with new heads (the outputs'
 *                             tensors), see below
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "adt.h"

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    acrobat_adt_layout adt;       /* the class (owned) and its slots (adt.h) */
    PyObject *nil, *cons, *empty; /* "Nil", "Cons", () */
} maker_t;

#define SLOT ACROBAT_SLOT

static PyObject *make_value(maker_t *m, PyObject *ctor, PyObject *fields) {
    PyObject *obj = acrobat_adt_alloc(&m->adt, ctor, fields);
    if (obj != NULL)
        acrobat_adt_settle(&m->adt, obj); /* untracked when it can be (adt.h) */
    return obj;
}

static PyObject *maker_call(PyObject *self, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames) {
    maker_t *m = (maker_t *)self;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0) {
        PyErr_SetString(PyExc_TypeError, "an ADT maker takes (ctor, fields) by position");
        return NULL;
    }
    if (n < 1 || n > 2) {
        PyErr_SetString(PyExc_TypeError, "an ADT maker takes (ctor, fields=())");
        return NULL;
    }
    if (n == 1)
        return make_value(m, args[0], m->empty);
    PyObject *fields = args[1];
    if (PyTuple_CheckExact(fields))
        return make_value(m, args[0], fields);
    PyObject *t = PySequence_Tuple(fields);
    if (t == NULL)
        return NULL;
    PyObject *out = make_value(m, args[0], t);
    Py_DECREF(t);
    return out;
}

/* Cons(items[0], ... Cons(items[n - 1], Nil())) of n borrowed items: a new reference, or
 * NULL with an error set */
static PyObject *cons_chain(maker_t *m, PyObject *const *items, Py_ssize_t n) {
    PyObject *out = make_value(m, m->nil, m->empty);
    for (Py_ssize_t i = n - 1; out != NULL && i >= 0; i--) {
        PyObject *pair = PyTuple_Pack(2, items[i], out);
        Py_DECREF(out);
        out = pair == NULL ? NULL : make_value(m, m->cons, pair);
        Py_XDECREF(pair);
    }
    return out;
}

static PyObject *maker_list(PyObject *self, PyObject *items) {
    PyObject *seq = PySequence_Fast(items, "maker.list takes a sequence");
    if (seq == NULL)
        return NULL;
    PyObject *out = cons_chain((maker_t *)self, PySequence_Fast_ITEMS(seq),
                               PySequence_Fast_GET_SIZE(seq));
    Py_DECREF(seq);
    return out;
}

static int is_cons(maker_t *m, PyObject *ctor) {
    if (ctor == m->cons)
        return 1;
    if (!PyUnicode_Check(ctor))
        return 0;
    return PyUnicode_Compare(ctor, m->cons) == 0 ? 1 : (PyErr_Occurred() ? -1 : 0);
}

static PyObject *maker_items(PyObject *self, PyObject *value) {
    maker_t *m = (maker_t *)self;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    PyObject *v = value;
    for (;;) {
        if (Py_TYPE(v) != m->adt.cls) {
            PyErr_Format(PyExc_TypeError, "expected a list value, got %.100s",
                         Py_TYPE(v)->tp_name);
            goto fail;
        }
        PyObject *ctor = SLOT(v, m->adt.off_ctor), *fields = SLOT(v, m->adt.off_fields);
        if (ctor == NULL || fields == NULL) {
            PyErr_SetString(PyExc_TypeError, "an ADT value without its ctor or fields");
            goto fail;
        }
        int c = is_cons(m, ctor);
        if (c < 0)
            goto fail;
        if (!c)
            return out;
        if (!PyTuple_Check(fields) || PyTuple_GET_SIZE(fields) != 2) {
            PyErr_SetString(PyExc_TypeError, "a Cons whose fields are not (head, tail)");
            goto fail;
        }
        if (PyList_Append(out, PyTuple_GET_ITEM(fields, 0)) < 0)
            goto fail;
        v = PyTuple_GET_ITEM(fields, 1);
    }
fail:
    Py_DECREF(out);
    return NULL;
}

/* maker.fits(value, ty, table_of, adt_type, tuple_type, leaf_ok) -> bool: whether value
 * is a value of type ty, walked as acrobat.ir.values._fits walks it. ty's class is
 * adt_type (then table_of(ty) gives its constructor table: ctor -> (number of fields,
 * [(index, type)] of fields to check apart, indices of int fields, index of the recursive
 * field to continue with or None)), tuple_type (ty.fields: the field types), or anything
 * else (leaf_ok(value, ty) decides). Tables are looked up once per type object and call.
 * maker.fits(values, ty, table_of, adt_type, tuple_type, leaf_ok, True) -> int: the same
 * check of every item of the list ``values`` in one call (the tables looked up once for
 * all): the index of the first that does not fit, or -1 (an entry's 64 instances: ~1 us
 * of Python calls each saved). */
#define FITS_TYPES 32
static PyObject *maker_fits(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    maker_t *m = (maker_t *)self;
    int many = nargs == 7 && args[6] == Py_True;
    if ((nargs != 6 && !many) || (many && !PyList_CheckExact(args[0]))) {
        PyErr_SetString(PyExc_TypeError,
                        "fits(value, ty, table_of, adt_type, tuple_type, leaf_ok[, many]); "
                        "many=True takes a list of values");
        return NULL;
    }
    PyObject *table_of = args[2], *adt_type = args[3], *tuple_type = args[4];
    PyObject *leaf_ok = args[5];
    PyObject *seen_t[FITS_TYPES], *seen_table[FITS_TYPES]; /* borrowed from keep */
    int n_seen = 0;
    PyObject *keep = PyList_New(0);
    if (keep == NULL)
        return NULL;
    Py_ssize_t cap = 64, top = 0;
    PyObject **stack = PyMem_Malloc(cap * 2 * sizeof(PyObject *)); /* borrowed pairs */
    PyObject *result = NULL;
    if (stack == NULL) {
        Py_DECREF(keep);
        return PyErr_NoMemory();
    }
    Py_ssize_t at = 0; /* the value checked (of the list, when many) */
    PyObject *held = NULL; /* that value, held while leaf_ok may run Python code */
next_value:
    if (many && at >= PyList_GET_SIZE(args[0])) {
        result = PyLong_FromLong(-1);
        goto done;
    }
    Py_XSETREF(held, Py_NewRef(many ? PyList_GET_ITEM(args[0], at) : args[0]));
    stack[0] = held;
    stack[1] = args[1];
    top = 1;
#define FAIL_FALSE                                                                             \
    do {                                                                                       \
        result = many ? PyLong_FromSsize_t(at) : Py_NewRef(Py_False);                          \
        goto done;                                                                             \
    } while (0)
#define PUSH(v, t)                                                                             \
    do {                                                                                       \
        if (top == cap) {                                                                      \
            PyObject **grown = PyMem_Realloc(stack, cap * 4 * sizeof(PyObject *));             \
            if (grown == NULL) {                                                               \
                PyErr_NoMemory();                                                              \
                goto done;                                                                     \
            }                                                                                  \
            stack = grown;                                                                     \
            cap *= 2;                                                                          \
        }                                                                                      \
        stack[2 * top] = (v);                                                                  \
        stack[2 * top + 1] = (t);                                                              \
        top++;                                                                                 \
    } while (0)
    while (top > 0) {
        top--;
        PyObject *v = stack[2 * top], *t = stack[2 * top + 1];
        if ((PyObject *)Py_TYPE(t) == adt_type) {
            PyObject *table = NULL;
            for (int i = 0; i < n_seen; i++)
                if (seen_t[i] == t) {
                    table = seen_table[i];
                    break;
                }
            if (table == NULL) {
                table = PyObject_CallOneArg(table_of, t);
                if (table == NULL)
                    goto done;
                if (!PyDict_Check(table)) {
                    Py_DECREF(table);
                    PyErr_SetString(PyExc_TypeError, "table_of must give a dict");
                    goto done;
                }
                /* every table stays alive until the walk ends (the types on the stack
                   are its items); the first FITS_TYPES are looked up by identity */
                int kept = PyList_Append(keep, table);
                Py_DECREF(table);
                if (kept < 0)
                    goto done;
                if (n_seen < FITS_TYPES) {
                    seen_t[n_seen] = t;
                    seen_table[n_seen++] = table;
                }
            }
            for (;;) { /* along the recursive spine without the stack (a list's tail) */
                if (Py_TYPE(v) != m->adt.cls)
                    FAIL_FALSE;
                PyObject *ctor = SLOT(v, m->adt.off_ctor), *fields = SLOT(v, m->adt.off_fields);
                if (ctor == NULL || fields == NULL || !PyTuple_Check(fields))
                    FAIL_FALSE;
                PyObject *plan = PyDict_GetItemWithError(table, ctor);
                if (plan == NULL) {
                    if (PyErr_Occurred())
                        goto done;
                    FAIL_FALSE;
                }
                if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != 4) {
                    PyErr_SetString(PyExc_TypeError, "a constructor plan is a 4-tuple");
                    goto done;
                }
                Py_ssize_t nf = PyLong_AsSsize_t(PyTuple_GET_ITEM(plan, 0));
                if (nf == -1 && PyErr_Occurred())
                    goto done;
                if (nf != PyTuple_GET_SIZE(fields))
                    FAIL_FALSE;
                PyObject *others = PyTuple_GET_ITEM(plan, 1), *ints = PyTuple_GET_ITEM(plan, 2);
                PyObject *last = PyTuple_GET_ITEM(plan, 3);
                PyObject *ints_fast = PySequence_Fast(ints, "int fields");
                if (ints_fast == NULL)
                    goto done;
                for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(ints_fast); j++) {
                    Py_ssize_t i = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(ints_fast, j));
                    if (i < 0 || i >= nf) {
                        Py_DECREF(ints_fast);
                        if (!PyErr_Occurred())
                            PyErr_SetString(PyExc_IndexError, "an int field out of range");
                        goto done;
                    }
                    if (!PyLong_CheckExact(PyTuple_GET_ITEM(fields, i))) {
                        Py_DECREF(ints_fast);
                        FAIL_FALSE;
                    }
                }
                Py_DECREF(ints_fast);
                PyObject *others_fast = PySequence_Fast(others, "fields to check apart");
                if (others_fast == NULL)
                    goto done;
                for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(others_fast); j++) {
                    PyObject *pair = PySequence_Fast_GET_ITEM(others_fast, j);
                    Py_ssize_t i = -1;
                    if (PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2)
                        i = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 0));
                    if (i < 0 || i >= nf) {
                        Py_DECREF(others_fast);
                        if (!PyErr_Occurred())
                            PyErr_SetString(PyExc_IndexError, "a field out of range");
                        goto done;
                    }
                    PUSH(PyTuple_GET_ITEM(fields, i), PyTuple_GET_ITEM(pair, 1));
                }
                Py_DECREF(others_fast);
                if (last == Py_None)
                    break;
                Py_ssize_t r = PyLong_AsSsize_t(last);
                if (r < 0 || r >= nf) {
                    if (!PyErr_Occurred())
                        PyErr_SetString(PyExc_IndexError, "the recursive field out of range");
                    goto done;
                }
                v = PyTuple_GET_ITEM(fields, r);
            }
        } else if ((PyObject *)Py_TYPE(t) == tuple_type) {
            PyObject *fts = PyObject_GetAttrString(t, "fields");
            if (fts == NULL)
                goto done;
            if (!PyTuple_Check(fts)) {
                Py_DECREF(fts);
                PyErr_SetString(PyExc_TypeError, "a tuple type's fields are a tuple");
                goto done;
            }
            if (!PyTuple_CheckExact(v) || PyTuple_GET_SIZE(v) != PyTuple_GET_SIZE(fts)) {
                Py_DECREF(fts);
                FAIL_FALSE;
            }
            /* pushed in order, popped last first, as stack.extend(zip(v, fields)) */
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fts); i++) {
                PyObject *x = PyTuple_GET_ITEM(v, i), *ft = PyTuple_GET_ITEM(fts, i);
                /* fts stays alive: the type object holds it */
                PUSH(x, ft);
            }
            Py_DECREF(fts);
        } else {
            PyObject *ok = PyObject_CallFunctionObjArgs(leaf_ok, v, t, NULL);
            if (ok == NULL)
                goto done;
            int truth = PyObject_IsTrue(ok);
            Py_DECREF(ok);
            if (truth < 0)
                goto done;
            if (!truth)
                FAIL_FALSE;
        }
    }
    if (many) {
        at++;
        goto next_value;
    }
    result = Py_NewRef(Py_True);
done:
    Py_XDECREF(held);
    Py_DECREF(keep);
    PyMem_Free(stack);
    return result;
#undef FAIL_FALSE
#undef PUSH
}

/* maker.relist(value, items, start) -> (new list, next start): a Cons/Nil list whose Cons
 * nodes hold (head, tail) rebuilt with new heads, taken from items[start:] tail first
 * (the last Cons gets items[start]); Nil nodes are kept. None when the list is not of
 * that shape (the caller then walks it in Python); IndexError when items run out. */
static PyObject *maker_relist(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    maker_t *m = (maker_t *)self;
    if (nargs != 3 || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "relist(value, items: list, start)");
        return NULL;
    }
    PyObject *items = args[1];
    Py_ssize_t at = PyLong_AsSsize_t(args[2]);
    if (at == -1 && PyErr_Occurred())
        return NULL;
    PyObject *spine = PyList_New(0); /* the Cons nodes, head first (borrowed from value) */
    if (spine == NULL)
        return NULL;
    PyObject *v = args[0], *nil = NULL;
    for (;;) {
        if (Py_TYPE(v) != m->adt.cls)
            goto other;
        PyObject *ctor = SLOT(v, m->adt.off_ctor), *fields = SLOT(v, m->adt.off_fields);
        if (ctor == NULL || fields == NULL || !PyTuple_CheckExact(fields))
            goto other;
        int c = is_cons(m, ctor);
        if (c < 0)
            goto fail;
        if (c && PyTuple_GET_SIZE(fields) == 2) {
            if (PyList_Append(spine, v) < 0)
                goto fail;
            v = PyTuple_GET_ITEM(fields, 1);
            continue;
        }
        if (!c && PyTuple_GET_SIZE(fields) == 0 && PyUnicode_Check(ctor) &&
            PyUnicode_Compare(ctor, m->nil) == 0) {
            nil = v;
            break;
        }
        if (PyErr_Occurred())
            goto fail;
        goto other;
    }
    PyObject *done = nil;
    Py_INCREF(done);
    for (Py_ssize_t i = PyList_GET_SIZE(spine) - 1; i >= 0; i--) {
        if (at >= PyList_GET_SIZE(items)) {
            Py_DECREF(done);
            PyErr_SetString(PyExc_IndexError, "relist ran out of items");
            goto fail;
        }
        PyObject *node = PyList_GET_ITEM(spine, i);
        PyObject *pair = PyTuple_Pack(2, PyList_GET_ITEM(items, at++), done);
        Py_DECREF(done);
        done = pair == NULL ? NULL : make_value(m, SLOT(node, m->adt.off_ctor), pair);
        Py_XDECREF(pair);
        if (done == NULL)
            goto fail;
    }
    Py_DECREF(spine);
    PyObject *out = Py_BuildValue("(Nn)", done, at);
    return out;
other:
    Py_DECREF(spine);
    Py_RETURN_NONE;
fail:
    Py_DECREF(spine);
    return NULL;
}

/* maker.lists(items, like) -> [list, ...]: per entry of ``like`` (a list of lists, only
 * their lengths read) a Cons/Nil list of the next len(entry) items, in order: maker.list
 * of consecutive slices of ``items`` without the slices (the outputs' lists of tensors,
 * ``like`` the lists of value ids they were read from). ValueError when the lengths do
 * not add up to len(items). */
static PyObject *maker_lists(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    maker_t *m = (maker_t *)self;
    if (nargs != 2 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "lists(items: list, like: list of lists)");
        return NULL;
    }
    PyObject *items = args[0], *like = args[1];
    Py_ssize_t n = PyList_GET_SIZE(like), total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyList_GET_ITEM(like, i);
        if (!PyList_Check(x)) {
            PyErr_SetString(PyExc_TypeError, "lists: like holds lists");
            return NULL;
        }
        total += PyList_GET_SIZE(x);
    }
    if (total != PyList_GET_SIZE(items)) {
        PyErr_Format(PyExc_ValueError, "lists: %zd items for lists of %zd in all",
                     PyList_GET_SIZE(items), total);
        return NULL;
    }
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t len = PyList_GET_SIZE(PyList_GET_ITEM(like, i));
        if (at + len > PyList_GET_SIZE(items)) { /* changed since (a finalizer run) */
            Py_DECREF(out);
            PyErr_SetString(PyExc_RuntimeError, "lists: items changed while in use");
            return NULL;
        }
        PyObject *done = cons_chain(m, PySequence_Fast_ITEMS(items) + at, len);
        if (done == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, done);
        at += len;
    }
    return out;
}

static void maker_dealloc(PyObject *self) {
    maker_t *m = (maker_t *)self;
    Py_XDECREF(m->adt.cls);
    Py_XDECREF(m->nil);
    Py_XDECREF(m->cons);
    Py_XDECREF(m->empty);
    Py_TYPE(self)->tp_free(self);
}

static PyMethodDef maker_methods[] = {
    {"list", maker_list, METH_O, "list(items): Cons(items[0], ... Nil())"},
    {"items", maker_items, METH_O, "items(value): a Cons/Nil list's elements"},
    {"lists", (PyCFunction)(void (*)(void))maker_lists, METH_FASTCALL,
     "lists(items, like) -> [list]: a Cons/Nil list per entry of like, of its length"},
    {"relist", (PyCFunction)(void (*)(void))maker_relist, METH_FASTCALL,
     "relist(value, items, start) -> (list, next start) or None: new heads, tail first"},
    {"fits", (PyCFunction)(void (*)(void))maker_fits, METH_FASTCALL,
     "fits(value, ty, table_of, adt_type, tuple_type, leaf_ok) -> bool: a value's type check"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject maker_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_acrobat_native.AdtMaker",
    .tp_basicsize = sizeof(maker_t),
    .tp_dealloc = maker_dealloc,
    .tp_vectorcall_offset = offsetof(maker_t, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "maker(ctor, fields): an ADT value of the class it was made for",
    .tp_methods = maker_methods,
};

PyObject *acrobat_adt_maker(PyObject *self, PyObject *cls) {
    (void)self;
    if (PyType_Ready(&maker_type) < 0)
        return NULL;
    acrobat_adt_layout adt;
    if (acrobat_adt_layout_of(cls, &adt) < 0)
        return NULL;
    maker_t *m = PyObject_New(maker_t, &maker_type);
    if (m == NULL)
        return NULL;
    m->vectorcall = maker_call;
    Py_INCREF(cls);
    m->adt = adt;
    m->nil = PyUnicode_InternFromString("Nil");
    m->cons = PyUnicode_InternFromString("Cons");
    m->empty = PyTuple_New(0);
    if (m->nil == NULL || m->cons == NULL || m->empty == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    return (PyObject *)m;
}
