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
 *     maker.items(value)      [x0, x1, ...] of a Cons/Nil list (to_list): follows fields[1]
 *                             while ctor == "Cons"; a Cons whose fields are not a tuple of
 *                             two raises TypeError (never a crash)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyTypeObject *cls;
    Py_ssize_t off_ctor, off_fields;
    PyObject *nil, *cons, *empty; /* "Nil", "Cons", () */
} maker_t;

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

static PyObject *make_value(maker_t *m, PyObject *ctor, PyObject *fields) {
    PyObject *obj = m->cls->tp_alloc(m->cls, 0);
    if (obj == NULL)
        return NULL;
    Py_INCREF(ctor);
    Py_INCREF(fields);
    SLOT(obj, m->off_ctor) = ctor;
    SLOT(obj, m->off_fields) = fields;
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

static PyObject *maker_list(PyObject *self, PyObject *items) {
    maker_t *m = (maker_t *)self;
    PyObject *seq = PySequence_Fast(items, "maker.list takes a sequence");
    if (seq == NULL)
        return NULL;
    PyObject *out = make_value(m, m->nil, m->empty);
    for (Py_ssize_t i = PySequence_Fast_GET_SIZE(seq) - 1; out != NULL && i >= 0; i--) {
        PyObject *pair = PyTuple_Pack(2, PySequence_Fast_GET_ITEM(seq, i), out);
        Py_DECREF(out);
        out = pair == NULL ? NULL : make_value(m, m->cons, pair);
        Py_XDECREF(pair);
    }
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
        if (Py_TYPE(v) != m->cls) {
            PyErr_Format(PyExc_TypeError, "expected a list value, got %.100s",
                         Py_TYPE(v)->tp_name);
            goto fail;
        }
        PyObject *ctor = SLOT(v, m->off_ctor), *fields = SLOT(v, m->off_fields);
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

static void maker_dealloc(PyObject *self) {
    maker_t *m = (maker_t *)self;
    Py_XDECREF(m->cls);
    Py_XDECREF(m->nil);
    Py_XDECREF(m->cons);
    Py_XDECREF(m->empty);
    Py_TYPE(self)->tp_free(self);
}

static PyMethodDef maker_methods[] = {
    {"list", maker_list, METH_O, "list(items): Cons(items[0], ... Nil())"},
    {"items", maker_items, METH_O, "items(value): a Cons/Nil list's elements"},
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

/* The offset of slot ``name`` defined on ``cls`` itself, or -1 with TypeError set. */
static Py_ssize_t slot_offset(PyTypeObject *cls, const char *name) {
    PyObject *d = PyDict_GetItemString(cls->tp_dict, name); /* borrowed */
    if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%.100s has no slot %s", cls->tp_name, name);
        return -1;
    }
    PyMemberDef *def = ((PyMemberDescrObject *)d)->d_member;
    if (def->type != T_OBJECT_EX || def->offset < (Py_ssize_t)sizeof(PyObject) ||
        def->offset + (Py_ssize_t)sizeof(PyObject *) > cls->tp_basicsize) {
        PyErr_Format(PyExc_TypeError, "%.100s's slot %s is not an object slot", cls->tp_name,
                     name);
        return -1;
    }
    return def->offset;
}

PyObject *acrobat_adt_maker(PyObject *self, PyObject *cls) {
    (void)self;
    if (PyType_Ready(&maker_type) < 0)
        return NULL;
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "adt_maker takes a class");
        return NULL;
    }
    PyTypeObject *t = (PyTypeObject *)cls;
    if (t->tp_itemsize != 0 || t->tp_dictoffset != 0 || t->tp_alloc == NULL) {
        PyErr_Format(PyExc_TypeError, "%.100s is not a class of fixed slots", t->tp_name);
        return NULL;
    }
    Py_ssize_t off_ctor = slot_offset(t, "ctor"), off_fields;
    if (off_ctor < 0 || (off_fields = slot_offset(t, "fields")) < 0)
        return NULL;
    if (off_ctor == off_fields) {
        PyErr_SetString(PyExc_TypeError, "ctor and fields share a slot");
        return NULL;
    }
    maker_t *m = PyObject_New(maker_t, &maker_type);
    if (m == NULL)
        return NULL;
    m->vectorcall = maker_call;
    m->off_ctor = off_ctor;
    m->off_fields = off_fields;
    Py_INCREF(cls);
    m->cls = t;
    m->nil = PyUnicode_InternFromString("Nil");
    m->cons = PyUnicode_InternFromString("Cons");
    m->empty = PyTuple_New(0);
    if (m->nil == NULL || m->cons == NULL || m->empty == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    return (PyObject *)m;
}
