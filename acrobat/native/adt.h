/* acrobat's ADT values at the C level: the layout of a class whose instances hold exactly
 * the slots ``ctor`` and ``fields`` (acrobat.ir.values.AdtValue). One definition for the two
 * places that make and read such values in C: values.c (the native module's maker) and
 * every compiled host program (acrobat/codegen/host_c.py, built with this folder on its
 * include path; acrobat.native hashes this file into both modules' names).
 */
#ifndef ACROBAT_ADT_H
#define ACROBAT_ADT_H

#include <Python.h>
#include <structmember.h>

/* a class's layout: the class (a reference its holder owns), its two slots' offsets, and
 * whether its instances are immutable (the class's ``__acrobat_frozen__`` is True) */
typedef struct {
    PyTypeObject *cls;
    Py_ssize_t off_ctor, off_fields;
    int frozen;
} acrobat_adt_layout;

#define ACROBAT_SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* The offset of slot ``name`` defined on ``cls`` itself, or -1 with TypeError set. */
static Py_ssize_t acrobat_slot_offset(PyTypeObject *cls, const char *name) {
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

/* Fill ``out`` with the layout of class ``cls`` (borrowed: the caller keeps a reference);
 * 0, or -1 with TypeError set when cls is not a class of exactly those two fixed slots. */
static int acrobat_adt_layout_of(PyObject *cls, acrobat_adt_layout *out) {
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "an ADT layout takes a class");
        return -1;
    }
    PyTypeObject *t = (PyTypeObject *)cls;
    if (t->tp_itemsize != 0 || t->tp_dictoffset != 0 || t->tp_alloc == NULL) {
        PyErr_Format(PyExc_TypeError, "%.100s is not a class of fixed slots", t->tp_name);
        return -1;
    }
    Py_ssize_t off_ctor = acrobat_slot_offset(t, "ctor"), off_fields;
    if (off_ctor < 0 || (off_fields = acrobat_slot_offset(t, "fields")) < 0)
        return -1;
    if (off_ctor == off_fields) {
        PyErr_SetString(PyExc_TypeError, "ctor and fields share a slot");
        return -1;
    }
    PyObject *frozen = PyObject_GetAttrString(cls, "__acrobat_frozen__");
    if (frozen == NULL)
        PyErr_Clear();
    out->cls = t;
    out->off_ctor = off_ctor;
    out->off_fields = off_fields;
    out->frozen = frozen == Py_True;
    Py_XDECREF(frozen);
    return 0;
}

/* Whether ``x`` can never lead the cycle collector back to a tracked object: not a
 * collected type at all (arrays, numbers, strings), or an untracked exact tuple (CPython
 * untracks a tuple only when its items are such) or an untracked value of the frozen
 * class (untracked here only under the same rule). */
static inline int acrobat_adt_inert(const acrobat_adt_layout *l, PyObject *x) {
    if (!PyObject_IS_GC(x))
        return 1;
    if (PyTuple_CheckExact(x) || Py_IS_TYPE(x, l->cls))
        return !PyObject_GC_IsTracked(x);
    return 0;
}

/* A new value of the layout's class holding ``ctor`` and ``fields`` (both borrowed: the
 * value takes its own references), made by the class's allocator without its __init__. */
static inline PyObject *acrobat_adt_alloc(const acrobat_adt_layout *l, PyObject *ctor,
                                          PyObject *fields) {
    PyObject *obj = l->cls->tp_alloc(l->cls, 0);
    if (obj == NULL)
        return NULL;
    Py_INCREF(ctor);
    Py_INCREF(fields);
    ACROBAT_SLOT(obj, l->off_ctor) = ctor;
    ACROBAT_SLOT(obj, l->off_fields) = fields;
    return obj;
}

/* ``obj`` (just made by acrobat_adt_alloc with these fields) out of the cycle collector's
 * lists when it can never be on a reference cycle: its class is immutable and its fields
 * hold only inert objects; its fields tuple too, as CPython untracks such tuples. The
 * native maker (values.c) does this for the values it makes, a run's output lists among
 * them (BiRNN small b64: ~2,600 objects), which the collection that follows the run no
 * longer walks (measured: 163 -> 23 us), nor later ones while the caller keeps them. The
 * compiled host programs do not: their values die within the run, and the check would
 * cost ~9 ns a value for nothing. */
static inline void acrobat_adt_settle(const acrobat_adt_layout *l, PyObject *obj) {
    PyObject *ctor = ACROBAT_SLOT(obj, l->off_ctor), *fields = ACROBAT_SLOT(obj, l->off_fields);
    if (!l->frozen || !PyTuple_CheckExact(fields) || !acrobat_adt_inert(l, ctor))
        return;
    Py_ssize_t n = PyTuple_GET_SIZE(fields), i = 0;
    while (i < n && acrobat_adt_inert(l, PyTuple_GET_ITEM(fields, i)))
        i++;
    if (i == n) {
        if (PyObject_GC_IsTracked(fields))
            PyObject_GC_UnTrack(fields);
        PyObject_GC_UnTrack(obj);
    }
}

#endif
