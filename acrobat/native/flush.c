/* acrobat's flush runner: a whole flush of host kernels (the NumPy backend) in one call.
 *
 * Executor.run (acrobat/runtime/executor.py) does, per flush: place every batch's outputs
 * in its arenas (each batch's outputs take the next block of rows, in launch order), look
 * up every tensor input's rows, then launch each batch with views of its blocks. In
 * Python that is a few microseconds per launch and some tens per flush, which a fiber
 * program (StackRNN: ~100 flushes of ~6 batches a run) pays a hundred times. Here it is
 * one call: the same arguments to the same kernels, in the same order.
 *
 * run_flush(batches, records, specs, row_of, arena_of, OUT, alloc, failed, sync)
 *     -> (bytes copied, kernel seconds) | None
 *   batches   the schedule's Batch tuples (kernel, nodes, ...) in launch order; nodes an
 *             int64 1-d C-contiguous array of record numbers (anything else: None is
 *             returned before anything is done, and the caller's Python path runs)
 *   records   per DFG kernel, its records: int64 [N, W] C-contiguous
 *   specs     per DFG kernel (fn, outs, ins, members):
 *     fn        the kernel: fn(n, *args, out=views[, _segs=pairs])
 *     outs      per output (arena, arena number, shape, row bytes)
 *     ins       per argument (record column, arena or None, shape, row bytes); None: a
 *               host int (the kernel gets the column's ids)
 *               ``shape`` None when an arena row already is the tensor ([n, width] views),
 *               else the tensor's shape (views are reshaped to (n, *shape))
 *     members   0, or a twin group's member count: its records end with the member, each
 *               batch's rows are ordered by member (stable) and it gets _segs, its
 *               (member, rows) pairs in that order
 *   row_of    int64 [cap] writable: value id -> arena row (set for every output)
 *   arena_of  int16 [cap] writable: value id -> arena number
 *   OUT       the record column of a node's first output value id
 *   alloc     alloc(shape) -> a new int64 NumPy array (numpy.empty)
 *   failed    a list of one item: set to (batch number, its record rows, its kernel) when
 *             a kernel raises (the caller reports an embedding id out of range by its
 *             instance)
 *   sync      None, or a callable timed with each kernel call
 * Arenas are Python objects with ``top`` (rows in use), ``peak`` (the most rows used),
 * ``alloc(n)`` (take n more rows; the buffer may move) and ``buf`` (a [rows, width] array,
 * read after growing); where the buffer has room, top and peak are set here as alloc
 * would set them (a Python call per arena and flush saved). An input in a
 * block of consecutive rows is passed as a view of it; otherwise as (arena buf, rows) and
 * n * row bytes count as copied. A batch of no nodes is not launched. Kernel seconds are
 * CLOCK_MONOTONIC (time.perf_counter's clock on Linux) around each call and its sync.
 * Every index is checked (record numbers, value ids, columns); what fails raises before
 * any kernel runs. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "batchplan.h"

/* NumPy's C API, for the views each launch passes: this file's own table of it (static,
 * no other file of the module uses it), imported on first use */
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#define MAX_ARGS 64

static int run_cancelled(void); /* set_cancel, at the end of this file */

/* 1 when NumPy's C API is ready here, 0 when it cannot be (views are then made by slicing
 * through the sequence protocol, as before) */
static int numpy_api(void) {
    static int state = 0; /* 0 not tried, 1 ready, -1 unavailable */
    if (state == 0) {
        if (_import_array() < 0) {
            PyErr_Clear();
            state = -1;
        } else {
            state = 1;
        }
    }
    return state > 0;
}

typedef struct {
    PyObject *arena; /* borrowed (from specs) */
    PyObject *buf;   /* owned, read after growing */
    Py_ssize_t top;  /* the next free row while placing */
    int seen;
} arena_t;

typedef struct {
    Py_ssize_t nb;         /* batches of this kernel */
    Py_ssize_t cap;        /* room in bidx */
    Py_ssize_t *bidx;      /* their numbers in batches */
    Py_ssize_t *offsets;   /* nb + 1 */
    Py_ssize_t T, W;       /* rows, record width */
    int64_t *recp;         /* [T, W]: its records in launch order (recbuf's, or owned) */
    PyObject *rec;         /* recp as an array (owned), made only when a kernel needs it */
    Py_buffer recbuf;      /* (host ids' columns) or a failure is reported */
    int has_rec;
    int64_t *rowsp;        /* [n_t, T]: each tensor input's rows (owned) */
    Py_ssize_t n_t;        /* tensor inputs (counted with the records) */
    PyObject *rows;        /* rowsp as an array (owned), made when a launch first passes */
                           /* (arena buf, rows) pairs: rows not one block */
    Py_ssize_t *starts;    /* nb * n tensor inputs: first row of a block, or -1 */
    PyObject **cols;       /* per argument: host ids column view (owned) or NULL */
    PyObject **rowv;       /* per argument: its rows' 1-d view, made when first needed */
    PyObject *segs;        /* per batch (member, rows) pairs, a list (owned) or NULL */
} kjob_t;

/* attribute names, made once (PyObject_GetAttrString makes a str each call: ~0.3 ms a
   StackRNN run of 569 launches) */
static PyObject *S_TOP, *S_BUF, *S_ALLOC, *S_RESHAPE, *S_PEAK;
static PyObject *KW_OUT, *KW_OUT_SEGS; /* a launch's keyword names: (out,), (out, _segs) */

static int names_ready(void) {
    if (KW_OUT_SEGS != NULL)
        return 0;
    S_TOP = PyUnicode_InternFromString("top");
    S_BUF = PyUnicode_InternFromString("buf");
    S_ALLOC = PyUnicode_InternFromString("alloc");
    S_RESHAPE = PyUnicode_InternFromString("reshape");
    S_PEAK = PyUnicode_InternFromString("peak");
    if (!(S_TOP && S_BUF && S_ALLOC && S_RESHAPE && S_PEAK))
        return -1;
    KW_OUT = Py_BuildValue("(s)", "out");
    KW_OUT_SEGS = KW_OUT == NULL ? NULL : Py_BuildValue("(ss)", "out", "_segs");
    return KW_OUT_SEGS != NULL ? 0 : -1;
}

/* an input arena's buffer, looked up once a flush: (arena, buf) pairs, the buf owned */
#define BUF_CACHE 16
typedef struct {
    PyObject *arena[BUF_CACHE], *buf[BUF_CACHE];
    int n;
} buf_cache_t;

/* arena.buf, a new reference (from the cache when it has room) */
static PyObject *input_buf(buf_cache_t *c, PyObject *arena) {
    for (int i = 0; i < c->n; i++)
        if (c->arena[i] == arena) {
            Py_INCREF(c->buf[i]);
            return c->buf[i];
        }
    PyObject *buf = PyObject_GetAttr(arena, S_BUF);
    if (buf != NULL && c->n < BUF_CACHE) {
        c->arena[c->n] = arena; /* borrowed: the specs hold it */
        c->buf[c->n] = buf;
        Py_INCREF(buf);
        c->n++;
    }
    return buf;
}

/* obj.name = v (an int) */
static int set_ssize(PyObject *obj, PyObject *name, Py_ssize_t v) {
    PyObject *x = PyLong_FromSsize_t(v);
    int r = x == NULL ? -1 : PyObject_SetAttr(obj, name, x);
    Py_XDECREF(x);
    return r;
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* block_view's fast way: the view made directly by NumPy's C API (~4x cheaper than a
 * slice and a reshape, which parse their arguments and make a slice object and a shape
 * tuple each time: ~0.5 ms of a StackRNN run's ~1,700 views). NULL without an error set
 * when this way does not apply (no C API, not an array, rows out of range, a reshape of
 * rows that are not contiguous): the caller slices instead. */
static PyObject *direct_view(PyObject *buf, Py_ssize_t r0, Py_ssize_t n, PyObject *shape) {
    if (!numpy_api() || !PyArray_Check(buf))
        return NULL;
    PyArrayObject *b = (PyArrayObject *)buf;
    int nd = PyArray_NDIM(b);
    if (nd < 1 || r0 < 0 || n < 0 || r0 > PyArray_DIM(b, 0) - n)
        return NULL;
    npy_intp dims[NPY_MAXDIMS], strides[NPY_MAXDIMS];
    int d;
    dims[0] = n;
    strides[0] = PyArray_STRIDE(b, 0);
    if (shape == Py_None) {
        d = nd;
        for (int i = 1; i < nd; i++) {
            dims[i] = PyArray_DIM(b, i);
            strides[i] = PyArray_STRIDE(b, i);
        }
    } else {
        /* (n, *shape) of [R, width] rows, each row contiguous */
        Py_ssize_t k = PyTuple_GET_SIZE(shape), item = PyArray_ITEMSIZE(b);
        if (nd != 2 || k + 1 > NPY_MAXDIMS || PyArray_STRIDE(b, 1) != item)
            return NULL;
        d = (int)k + 1;
        npy_intp count = 1;
        for (Py_ssize_t i = 0; i < k; i++) {
            Py_ssize_t v = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
            if (v < 0) {
                PyErr_Clear();
                return NULL;
            }
            dims[i + 1] = v;
            count *= v;
        }
        if (count != PyArray_DIM(b, 1))
            return NULL;
        npy_intp step = item;
        for (int i = d - 1; i >= 1; i--) {
            strides[i] = step;
            step *= dims[i];
        }
    }
    PyArray_Descr *descr = PyArray_DESCR(b);
    Py_INCREF(descr); /* stolen */
    PyObject *view = PyArray_NewFromDescr(&PyArray_Type, descr, d, dims, strides,
                                          PyArray_BYTES(b) + r0 * PyArray_STRIDE(b, 0),
                                          PyArray_FLAGS(b) & NPY_ARRAY_WRITEABLE, NULL);
    if (view == NULL)
        return NULL;
    Py_INCREF(buf); /* stolen, also on failure */
    if (PyArray_SetBaseObject((PyArrayObject *)view, buf) < 0) {
        Py_DECREF(view);
        return NULL;
    }
    return view;
}

/* buf[r0:r0+n], reshaped to (n, *shape) unless shape is None; a new reference */
static PyObject *block_view(PyObject *buf, Py_ssize_t r0, Py_ssize_t n, PyObject *shape) {
    PyObject *fast = direct_view(buf, r0, n, shape);
    if (fast != NULL || PyErr_Occurred())
        return fast;
    PyObject *view = PySequence_GetSlice(buf, r0, r0 + n);
    if (view == NULL || shape == Py_None)
        return view;
    Py_ssize_t d = PyTuple_GET_SIZE(shape);
    PyObject *full = PyTuple_New(d + 1);
    PyObject *first = PyLong_FromSsize_t(n);
    if (full == NULL || first == NULL) {
        Py_XDECREF(full);
        Py_XDECREF(first);
        Py_DECREF(view);
        return NULL;
    }
    PyTuple_SET_ITEM(full, 0, first);
    for (Py_ssize_t i = 0; i < d; i++) {
        PyObject *v = PyTuple_GET_ITEM(shape, i);
        Py_INCREF(v);
        PyTuple_SET_ITEM(full, i + 1, v);
    }
    PyObject *out = PyObject_CallMethodOneArg(view, S_RESHAPE, full);
    Py_DECREF(full);
    Py_DECREF(view);
    return out;
}

static Py_ssize_t item_ssize(PyObject *tuple, Py_ssize_t i) {
    return PyLong_AsSsize_t(PyTuple_GET_ITEM(tuple, i));
}

/* a new int64 array of shape (a,) or (a, b) from alloc, and its writable buffer */
static PyObject *new_i64(PyObject *alloc, Py_ssize_t a, Py_ssize_t b, int two, Py_buffer *view) {
    PyObject *shape = two ? Py_BuildValue("(nn)", a, b) : Py_BuildValue("(n)", a);
    if (shape == NULL)
        return NULL;
    PyObject *arr = PyObject_CallOneArg(alloc, shape);
    Py_DECREF(shape);
    if (arr == NULL)
        return NULL;
    if (PyObject_GetBuffer(arr, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    if (view->itemsize != 8 || view->len != (two ? a * b : a) * 8) {
        PyBuffer_Release(view);
        Py_DECREF(arr);
        PyErr_SetString(PyExc_ValueError, "run_flush: alloc must make int64 arrays");
        return NULL;
    }
    return arr;
}

/* a new int64 array [a, b] from alloc holding a copy of p's a * b values */
static PyObject *as_array(PyObject *alloc, const int64_t *p, Py_ssize_t a, Py_ssize_t b) {
    Py_buffer view;
    PyObject *arr = new_i64(alloc, a, b, 1, &view);
    if (arr == NULL)
        return NULL;
    if (a * b != 0)
        memcpy(view.buf, p, (size_t)(a * b) * sizeof(int64_t));
    PyBuffer_Release(&view);
    return arr;
}

static int is_int64_buffer(const Py_buffer *v) {
    if (v->itemsize != 8 || v->format == NULL)
        return 0;
    size_t len = strlen(v->format);
    char c = len ? v->format[len - 1] : 0;
    return (c == 'l' || c == 'q') && (len == 1 || (len == 2 && strchr("<=@", v->format[0])));
}

/* row_of (int64 [cap]) and arena_of (int16 [cap]), writable */
static int get_row_buffers(PyObject *rows, PyObject *which, Py_buffer *rb, Py_buffer *ab,
                           int *have_r, int *have_a) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE;
    if (PyObject_GetBuffer(rows, rb, flags) < 0)
        return -1;
    *have_r = 1;
    if (rb->ndim != 1 || !is_int64_buffer(rb)) {
        PyErr_SetString(PyExc_ValueError, "run_flush: row_of must be a 1-d int64 array");
        return -1;
    }
    if (PyObject_GetBuffer(which, ab, flags) < 0)
        return -1;
    *have_a = 1;
    if (ab->ndim != 1 || ab->itemsize != 2 || ab->format == NULL || strchr(ab->format, 'h') == NULL) {
        PyErr_SetString(PyExc_ValueError, "run_flush: arena_of must be a 1-d int16 array");
        return -1;
    }
    return 0;
}

static void free_job(kjob_t *j, Py_ssize_t n_args) {
    PyMem_Free(j->bidx);
    PyMem_Free(j->offsets);
    PyMem_Free(j->starts);
    if (j->has_rec)
        PyBuffer_Release(&j->recbuf);
    else
        PyMem_Free(j->recp);
    PyMem_Free(j->rowsp);
    Py_XDECREF(j->rec);
    Py_XDECREF(j->rows);
    if (j->cols != NULL) {
        for (Py_ssize_t a = 0; a < n_args; a++)
            Py_XDECREF(j->cols[a]);
        PyMem_Free(j->cols);
    }
    if (j->rowv != NULL) {
        for (Py_ssize_t a = 0; a < n_args; a++)
            Py_XDECREF(j->rowv[a]);
        PyMem_Free(j->rowv);
    }
    Py_XDECREF(j->segs);
}

/* run_flush's work; the batches are args[0]'s (Python tuples) or, when plan is not NULL,
 * the plan's (args[0] unread). 0: done, the bytes copied and kernel seconds in *moved_out
 * and *kernel_out; 1: declined before doing anything (batches it does not take); -1: a
 * Python error is set */
/* one launch's entry in a flush's log (see run_flush): (batch number, kernel, nodes, level,
 * begin, kernel start, kernel end, done, bytes copied, device ms = None) */
static int log_launch(PyObject *log, Py_ssize_t i, Py_ssize_t k, Py_ssize_t n, long long level,
                      double begin, double start, double end, double done, long long moved) {
    PyObject *entry = Py_BuildValue("(nnnLddddLO)", i, k, n, level, begin, start, end, done,
                                    moved, Py_None);
    if (entry == NULL)
        return -1;
    int r = PyList_Append(log, entry);
    Py_DECREF(entry);
    return r;
}

static int run_flush_impl(PyObject *const *args, const acrobat_plan_t *plan,
                          long long *moved_out, double *kernel_out, PyObject *log) {
    PyObject *alloc = args[6], *failed = args[7], *sync = args[8];
    if (names_ready() < 0)
        return -1;
    Py_ssize_t out_col = PyLong_AsSsize_t(args[5]);
    if (out_col < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "run_flush: OUT must be >= 0");
        return -1;
    }
    int status = -1;
    PyObject *batches = NULL, *records = NULL, *specs = NULL;
    Py_buffer row_buf, arena_buf, *nodes = NULL;
    const int64_t **node_ptr = NULL;
    buf_cache_t bufs = {.n = 0};
    int have_row = 0, have_arena = 0;
    Py_ssize_t nb = 0, n_nodes_got = 0, n_k = 0, n_arenas = 0, max_out = 0;
    kjob_t *jobs = NULL;
    arena_t *arenas = NULL;
    Py_ssize_t *kernel_of = NULL, *firsts = NULL, *sizes = NULL, *seen = NULL, cap = 0;
    int64_t *row_of = NULL;
    int16_t *arena_of = NULL;
    long long moved = 0;
    double kernel_s = 0.0;

    if (plan == NULL) {
        batches = PySequence_Fast(args[0], "run_flush: batches must be a sequence");
        if (batches == NULL)
            goto done;
        nb = PySequence_Fast_GET_SIZE(batches);
    } else {
        nb = (Py_ssize_t)plan->nb;
    }
    records = PySequence_Fast(args[1], "run_flush: records must be a sequence");
    specs = PySequence_Fast(args[2], "run_flush: specs must be a sequence");
    if (records == NULL || specs == NULL)
        goto done;
    n_k = PySequence_Fast_GET_SIZE(specs);
    if (PySequence_Fast_GET_SIZE(records) != n_k) {
        PyErr_SetString(PyExc_ValueError, "run_flush: one records table per spec");
        goto done;
    }
    if (get_row_buffers(args[3], args[4], &row_buf, &arena_buf, &have_row, &have_arena) < 0)
        goto done;
    cap = row_buf.shape[0] < arena_buf.shape[0] ? row_buf.shape[0] : arena_buf.shape[0];
    row_of = row_buf.buf;
    arena_of = arena_buf.buf;

    /* the specs: kernels' outputs and inputs, and the arenas they name */
    for (Py_ssize_t k = 0; k < n_k; k++) {
        PyObject *sp = PySequence_Fast_GET_ITEM(specs, k);
        if (!PyTuple_Check(sp) || PyTuple_GET_SIZE(sp) != 4 ||
            !PyTuple_Check(PyTuple_GET_ITEM(sp, 1)) || !PyTuple_Check(PyTuple_GET_ITEM(sp, 2))) {
            PyErr_SetString(PyExc_TypeError, "run_flush: a spec is (fn, outs, ins, members)");
            goto done;
        }
        PyObject *outs = PyTuple_GET_ITEM(sp, 1);
        if (PyTuple_GET_SIZE(outs) > max_out)
            max_out = PyTuple_GET_SIZE(outs);
        for (Py_ssize_t o = 0; o < PyTuple_GET_SIZE(outs); o++) {
            PyObject *ot = PyTuple_GET_ITEM(outs, o);
            if (!PyTuple_Check(ot) || PyTuple_GET_SIZE(ot) != 4) {
                PyErr_SetString(PyExc_TypeError, "run_flush: an output is (arena, number, "
                                                 "shape, row bytes)");
                goto done;
            }
            Py_ssize_t index = item_ssize(ot, 1);
            if (index < 0 || index > INT16_MAX) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "run_flush: an arena number out of range");
                goto done;
            }
            if (index + 1 > n_arenas)
                n_arenas = index + 1;
        }
        PyObject *ins = PyTuple_GET_ITEM(sp, 2);
        if (PyTuple_GET_SIZE(ins) + 3 > MAX_ARGS) {
            PyErr_SetString(PyExc_ValueError, "run_flush: too many kernel arguments");
            goto done;
        }
        for (Py_ssize_t a = 0; a < PyTuple_GET_SIZE(ins); a++) {
            PyObject *it = PyTuple_GET_ITEM(ins, a);
            if (!PyTuple_Check(it) || PyTuple_GET_SIZE(it) != 4) {
                PyErr_SetString(PyExc_TypeError, "run_flush: an input is (column, arena, "
                                                 "shape, row bytes)");
                goto done;
            }
        }
    }
    jobs = PyMem_Calloc(n_k ? n_k : 1, sizeof(kjob_t));
    arenas = PyMem_Calloc(n_arenas ? n_arenas : 1, sizeof(arena_t));
    kernel_of = PyMem_Calloc(nb ? nb : 1, sizeof(Py_ssize_t));
    sizes = PyMem_Calloc(nb ? nb : 1, sizeof(Py_ssize_t));
    firsts = PyMem_Calloc((nb ? nb : 1) * (max_out ? max_out : 1), sizeof(Py_ssize_t));
    nodes = plan == NULL ? PyMem_Calloc(nb ? nb : 1, sizeof(Py_buffer)) : NULL;
    node_ptr = PyMem_Calloc(nb ? nb : 1, sizeof(int64_t *));
    if (jobs == NULL || arenas == NULL || kernel_of == NULL || sizes == NULL || firsts == NULL ||
        (nodes == NULL && plan == NULL) || node_ptr == NULL) {
        PyErr_NoMemory();
        goto done;
    }

    /* the batches: kernel and nodes; anything unusual hands the flush back to Python */
    for (Py_ssize_t i = 0; i < nb; i++) {
        Py_ssize_t k;
        if (plan != NULL) {
            k = (Py_ssize_t)plan->kernel[i];
            if (k < 0 || k >= n_k) {
                PyErr_Format(PyExc_IndexError, "run_flush: kernel %zd of %zd", k, n_k);
                goto done;
            }
            node_ptr[i] = plan->local + plan->bounds[i];
            sizes[i] = (Py_ssize_t)(plan->bounds[i + 1] - plan->bounds[i]);
        } else {
            PyObject *batch = PySequence_Fast_GET_ITEM(batches, i);
            if (!PyTuple_Check(batch) || PyTuple_GET_SIZE(batch) < 2)
                goto python;
            k = PyLong_AsSsize_t(PyTuple_GET_ITEM(batch, 0));
            if (k == -1 && PyErr_Occurred())
                goto done;
            if (k < 0 || k >= n_k) {
                PyErr_Format(PyExc_IndexError, "run_flush: kernel %zd of %zd", k, n_k);
                goto done;
            }
            if (PyObject_GetBuffer(PyTuple_GET_ITEM(batch, 1), &nodes[i],
                                   PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
                PyErr_Clear();
                goto python;
            }
            n_nodes_got = i + 1;
            if (nodes[i].ndim != 1 || !is_int64_buffer(&nodes[i]))
                goto python;
            node_ptr[i] = nodes[i].buf;
            sizes[i] = nodes[i].shape[0];
        }
        kernel_of[i] = k;
        kjob_t *j = &jobs[k];
        if (j->nb == j->cap) {
            Py_ssize_t cap2 = j->cap ? 2 * j->cap : 4;
            Py_ssize_t *grown = PyMem_Realloc(j->bidx, cap2 * sizeof(Py_ssize_t));
            if (grown == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            j->bidx = grown;
            j->cap = cap2;
        }
        j->bidx[j->nb++] = i;
    }

    /* pass 1: each batch's outputs take the next block of their arenas' rows */
    for (Py_ssize_t i = 0; i < nb; i++) {
        PyObject *outs = PyTuple_GET_ITEM(PySequence_Fast_GET_ITEM(specs, kernel_of[i]), 1);
        for (Py_ssize_t o = 0; o < PyTuple_GET_SIZE(outs); o++) {
            PyObject *ot = PyTuple_GET_ITEM(outs, o);
            arena_t *a = &arenas[item_ssize(ot, 1)];
            if (!a->seen) {
                a->arena = PyTuple_GET_ITEM(ot, 0);
                PyObject *top = PyObject_GetAttr(a->arena, S_TOP);
                if (top == NULL)
                    goto done;
                a->top = PyLong_AsSsize_t(top);
                Py_DECREF(top);
                if (a->top == -1 && PyErr_Occurred())
                    goto done;
                a->seen = 1;
            }
            firsts[i * max_out + o] = a->top;
            a->top += sizes[i];
        }
    }
    /* grow each arena once (its buffer may move), then take its buffer */
    for (Py_ssize_t x = 0; x < n_arenas; x++) {
        arena_t *a = &arenas[x];
        if (!a->seen)
            continue;
        PyObject *top = PyObject_GetAttr(a->arena, S_TOP);
        if (top == NULL)
            goto done;
        Py_ssize_t now = PyLong_AsSsize_t(top);
        Py_DECREF(top);
        if (now == -1 && PyErr_Occurred())
            goto done;
        a->buf = PyObject_GetAttr(a->arena, S_BUF);
        Py_ssize_t room = a->buf == NULL ? -1 : PyObject_Length(a->buf);
        if (room < 0)
            goto done;
        if (a->top <= room) { /* Arena.alloc without growing: top and peak (no Python call) */
            if (set_ssize(a->arena, S_TOP, a->top) < 0)
                goto done;
            PyObject *peak = PyObject_GetAttr(a->arena, S_PEAK);
            Py_ssize_t was = peak == NULL ? -1 : PyLong_AsSsize_t(peak);
            Py_XDECREF(peak);
            if (was == -1 && PyErr_Occurred())
                goto done;
            if (a->top > was && set_ssize(a->arena, S_PEAK, a->top) < 0)
                goto done;
            continue;
        }
        Py_CLEAR(a->buf);
        PyObject *grow = PyLong_FromSsize_t(a->top - now);
        PyObject *r = grow == NULL ? NULL : PyObject_CallMethodOneArg(a->arena, S_ALLOC, grow);
        Py_XDECREF(grow);
        if (r == NULL)
            goto done;
        Py_DECREF(r);
        a->buf = PyObject_GetAttr(a->arena, S_BUF);
        if (a->buf == NULL)
            goto done;
    }

    /* per kernel: its records in launch order (a twin group's by member within each
     * batch), and every output's row */
    for (Py_ssize_t k = 0; k < n_k; k++) {
        kjob_t *j = &jobs[k];
        if (j->nb == 0)
            continue;
        PyObject *sp = PySequence_Fast_GET_ITEM(specs, k);
        Py_ssize_t members = item_ssize(sp, 3);
        if (members == -1 && PyErr_Occurred())
            goto done;
        Py_buffer tb;
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(records, k), &tb,
                               PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
            goto done;
        if (tb.ndim != 2 || !is_int64_buffer(&tb)) {
            PyBuffer_Release(&tb);
            PyErr_SetString(PyExc_ValueError, "run_flush: records must be 2-d int64 arrays");
            goto done;
        }
        const int64_t *table = tb.buf;
        Py_ssize_t N = tb.shape[0], W = tb.shape[1];
        if (members > 0 && W < 1) { /* a twin group's member is its records' last column */
            PyBuffer_Release(&tb);
            PyErr_SetString(PyExc_ValueError,
                            "run_flush: a twin group's records need a member column (width 0)");
            goto done;
        }
        j->offsets = PyMem_Calloc(j->nb + 1, sizeof(Py_ssize_t));
        if (j->offsets == NULL) {
            PyBuffer_Release(&tb);
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t b = 0; b < j->nb; b++)
            j->offsets[b + 1] = j->offsets[b] + sizes[j->bidx[b]];
        j->T = j->offsets[j->nb];
        j->W = W;
        /* an array only for a kernel that takes host ids (views of its columns); else a
           plain buffer (made an array only if a launch fails: new_i64 per kernel and
           flush was ~0.4 ms a StackRNN run) */
        PyObject *ins_k = PyTuple_GET_ITEM(sp, 2);
        j->n_t = 0; /* tensor inputs (the others take host ids) */
        for (Py_ssize_t a = 0; a < PyTuple_GET_SIZE(ins_k); a++)
            j->n_t += PyTuple_GET_ITEM(PyTuple_GET_ITEM(ins_k, a), 1) != Py_None;
        if (j->n_t < PyTuple_GET_SIZE(ins_k)) { /* host ids */
            j->rec = new_i64(alloc, j->T, W, 1, &j->recbuf);
            if (j->rec == NULL) {
                PyBuffer_Release(&tb);
                goto done;
            }
            j->has_rec = 1;
            j->recp = j->recbuf.buf;
        } else {
            j->recp = PyMem_Malloc((size_t)(j->T * W != 0 ? j->T * W : 1) * sizeof(int64_t));
            if (j->recp == NULL) {
                PyBuffer_Release(&tb);
                PyErr_NoMemory();
                goto done;
            }
        }
        int64_t *rec = j->recp;
        if (members > 0) {
            j->segs = PyList_New(j->nb);
            if (j->segs == NULL) {
                PyBuffer_Release(&tb);
                goto done;
            }
        }
        for (Py_ssize_t b = 0; b < j->nb; b++) {
            const int64_t *nd = node_ptr[j->bidx[b]];
            Py_ssize_t n = sizes[j->bidx[b]], s = j->offsets[b];
            for (Py_ssize_t t = 0; t < n; t++)
                if (nd[t] < 0 || nd[t] >= N) {
                    PyBuffer_Release(&tb);
                    PyErr_Format(PyExc_IndexError, "run_flush: record %lld of %zd",
                                 (long long)nd[t], N);
                    goto done;
                }
            if (members <= 0) {
                for (Py_ssize_t t = 0; t < n; t++)
                    memcpy(rec + (s + t) * W, table + nd[t] * W, (size_t)W * sizeof(int64_t));
                continue;
            }
            /* a twin group: member by member, each member's rows in their order */
            PyObject *pairs = PyList_New(0); /* made a tuple below (the kernels take one) */
            if (pairs == NULL) {
                PyBuffer_Release(&tb);
                goto done;
            }
            PyList_SET_ITEM(j->segs, b, pairs);
            Py_ssize_t at = s;
            for (Py_ssize_t m = 0; m < members; m++) {
                Py_ssize_t c = 0;
                for (Py_ssize_t t = 0; t < n; t++) {
                    const int64_t *row = table + nd[t] * W;
                    if (row[W - 1] < 0 || row[W - 1] >= members) {
                        PyBuffer_Release(&tb);
                        PyErr_SetString(PyExc_IndexError, "run_flush: a member out of range");
                        goto done;
                    }
                    if (row[W - 1] == m) {
                        memcpy(rec + at * W, row, (size_t)W * sizeof(int64_t));
                        at++;
                        c++;
                    }
                }
                if (c) {
                    PyObject *pair = Py_BuildValue("(nn)", m, c);
                    if (pair == NULL || PyList_Append(pairs, pair) < 0) {
                        Py_XDECREF(pair);
                        PyBuffer_Release(&tb);
                        goto done;
                    }
                    Py_DECREF(pair);
                }
            }
            PyObject *frozen = PyList_AsTuple(pairs);
            if (frozen == NULL) {
                PyBuffer_Release(&tb);
                goto done;
            }
            PyList_SetItem(j->segs, b, frozen); /* steals frozen, drops the list */
        }
        PyBuffer_Release(&tb);
        PyObject *outs = PyTuple_GET_ITEM(sp, 1);
        if (PyTuple_GET_SIZE(outs) && out_col >= W) {
            PyErr_SetString(PyExc_IndexError, "run_flush: OUT is past the records' columns");
            goto done;
        }
        for (Py_ssize_t o = 0; o < PyTuple_GET_SIZE(outs); o++) {
            int16_t index = (int16_t)item_ssize(PyTuple_GET_ITEM(outs, o), 1);
            for (Py_ssize_t b = 0; b < j->nb; b++) {
                Py_ssize_t s = j->offsets[b], n = sizes[j->bidx[b]];
                Py_ssize_t r0 = firsts[j->bidx[b] * max_out + o];
                for (Py_ssize_t t = 0; t < n; t++) {
                    int64_t id = rec[(s + t) * W + out_col] + o;
                    if (id < 0 || id >= cap) {
                        PyErr_Format(PyExc_IndexError, "run_flush: value id %lld past %zd",
                                     (long long)id, cap);
                        goto done;
                    }
                    row_of[id] = r0 + t;
                    arena_of[id] = index;
                }
            }
        }
    }

    /* every tensor input's rows (after every output is placed: an input may be the output
     * of another batch of this flush), which batches' are one block; host ids' columns */
    for (Py_ssize_t k = 0; k < n_k; k++) {
        kjob_t *j = &jobs[k];
        if (j->nb == 0)
            continue;
        PyObject *ins = PyTuple_GET_ITEM(PySequence_Fast_GET_ITEM(specs, k), 2);
        Py_ssize_t n_args = PyTuple_GET_SIZE(ins), n_t = j->n_t;
        j->cols = PyMem_Calloc(n_args ? n_args : 1, sizeof(PyObject *));
        j->rowv = PyMem_Calloc(n_args ? n_args : 1, sizeof(PyObject *));
        if (j->cols == NULL || j->rowv == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        j->starts = PyMem_Calloc(n_t > 0 ? j->nb * n_t : 1, sizeof(Py_ssize_t));
        if (j->starts == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        if (n_t) {
            j->rowsp = PyMem_Malloc((size_t)(n_t * j->T != 0 ? n_t * j->T : 1) * sizeof(int64_t));
            if (j->rowsp == NULL) {
                PyErr_NoMemory();
                goto done;
            }
        }
        const int64_t *rec = j->recp;
        Py_ssize_t i_t = 0;
        for (Py_ssize_t a = 0; a < n_args; a++) {
            PyObject *it = PyTuple_GET_ITEM(ins, a);
            Py_ssize_t col = item_ssize(it, 0);
            if (col < 0 || col >= j->W) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_IndexError, "run_flush: an input column out of range");
                goto done;
            }
            if (PyTuple_GET_ITEM(it, 1) == Py_None) { /* host ids: rec[:, col] */
                PyObject *key = Py_BuildValue("(On)", Py_None, col);
                PyObject *colon = key == NULL ? NULL : PySlice_New(NULL, NULL, NULL);
                if (colon == NULL) {
                    Py_XDECREF(key);
                    goto done;
                }
                PyTuple_SetItem(key, 0, colon); /* steals colon, drops the None */
                j->cols[a] = PyObject_GetItem(j->rec, key);
                Py_DECREF(key);
                if (j->cols[a] == NULL)
                    goto done;
                continue;
            }
            int64_t *out = j->rowsp + i_t * j->T;
            for (Py_ssize_t b = 0; b < j->nb; b++) {
                Py_ssize_t s = j->offsets[b], n = sizes[j->bidx[b]];
                int block = n > 0;
                for (Py_ssize_t t = s; t < s + n; t++) {
                    int64_t id = rec[t * j->W + col];
                    if (id < 0 || id >= cap) {
                        PyErr_Format(PyExc_IndexError, "run_flush: value id %lld past %zd",
                                     (long long)id, cap);
                        goto done;
                    }
                    out[t] = row_of[id];
                    if (t > s && out[t] != out[t - 1] + 1)
                        block = 0;
                }
                j->starts[b * n_t + i_t] = block ? (Py_ssize_t)out[s] : -1;
            }
            i_t++;
        }
    }

    /* the launches, in order */
    seen = PyMem_Calloc(n_k ? n_k : 1, sizeof(Py_ssize_t));
    if (seen == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nb; i++) {
        if (run_cancelled())
            goto done;
        Py_ssize_t k = kernel_of[i], n = sizes[i];
        kjob_t *j = &jobs[k];
        Py_ssize_t b = seen[k]++;
        long long level = plan != NULL ? (long long)plan->level[i] : -1;
        double begin = log != NULL ? mono_s() : 0.0, start = begin, end = begin;
        long long moved_before = moved;
        if (n == 0) { /* a batch of no nodes (a user's policy may form one): not launched */
            if (log != NULL && log_launch(log, i, k, 0, level, begin, begin, begin, begin, 0) < 0)
                goto done;
            continue;
        }
        PyObject *sp = PySequence_Fast_GET_ITEM(specs, k);
        PyObject *fn = PyTuple_GET_ITEM(sp, 0), *outs = PyTuple_GET_ITEM(sp, 1);
        PyObject *ins = PyTuple_GET_ITEM(sp, 2);
        Py_ssize_t n_args = PyTuple_GET_SIZE(ins), n_out = PyTuple_GET_SIZE(outs);
        Py_ssize_t n_t = j->n_t;
        Py_ssize_t s = j->offsets[b];
        PyObject *call[MAX_ARGS + 1]; /* [spare, n, args..., views, segs] (vectorcall) */
        Py_ssize_t at = 1, i_t = 0;
        int ok = (call[at++] = PyLong_FromSsize_t(n)) != NULL;
        for (Py_ssize_t a = 0; ok && a < n_args; a++) {
            PyObject *it = PyTuple_GET_ITEM(ins, a), *arg;
            if (j->cols[a] != NULL) { /* host ids */
                arg = block_view(j->cols[a], s, n, Py_None);
            } else {
                PyObject *buf = input_buf(&bufs, PyTuple_GET_ITEM(it, 1));
                Py_ssize_t r0 = j->starts[b * n_t + i_t];
                if (buf == NULL) {
                    arg = NULL;
                } else if (r0 >= 0) {
                    arg = block_view(buf, r0, n, PyTuple_GET_ITEM(it, 2));
                } else {
                    if (j->rows == NULL)
                        j->rows = as_array(alloc, j->rowsp, n_t, j->T);
                    if (j->rowv[a] == NULL && j->rows != NULL)
                        j->rowv[a] = PySequence_GetItem(j->rows, i_t);
                    PyObject *part =
                        j->rowv[a] == NULL ? NULL : block_view(j->rowv[a], s, n, Py_None);
                    arg = part == NULL ? NULL : PyTuple_Pack(2, buf, part);
                    Py_XDECREF(part);
                    moved += (long long)n * item_ssize(it, 3);
                }
                Py_XDECREF(buf);
                i_t++;
            }
            if (arg == NULL)
                ok = 0;
            else
                call[at++] = arg;
        }
        Py_ssize_t npos = at - 1, made = at;
        PyObject *views = ok ? PyList_New(n_out) : NULL;
        ok = ok && views != NULL;
        for (Py_ssize_t o = 0; ok && o < n_out; o++) {
            PyObject *ot = PyTuple_GET_ITEM(outs, o);
            arena_t *ar = &arenas[item_ssize(ot, 1)];
            PyObject *v = block_view(ar->buf, firsts[i * max_out + o], n, PyTuple_GET_ITEM(ot, 2));
            if (v == NULL)
                ok = 0;
            else
                PyList_SET_ITEM(views, o, v);
        }
        PyObject *ret = NULL;
        if (ok) {
            call[at++] = views;
            PyObject *kwnames = KW_OUT;
            if (j->segs != NULL) {
                call[at++] = PyList_GET_ITEM(j->segs, b); /* borrowed */
                kwnames = KW_OUT_SEGS;
            }
            start = mono_s();
            ret = PyObject_Vectorcall(fn, call + 1, npos | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
            if (ret != NULL && sync != Py_None) {
                Py_DECREF(ret);
                ret = PyObject_CallNoArgs(sync);
            }
            end = mono_s();
            kernel_s += end - start;
            if (ret == NULL) { /* which batch, and its records, for the caller's report */
                PyObject *et, *ev, *etb;
                PyErr_Fetch(&et, &ev, &etb);
                PyObject *recs = j->rec != NULL ? PySequence_GetSlice(j->rec, s, s + n)
                                                : as_array(alloc, j->recp + s * j->W, n, j->W);
                PyObject *where = recs == NULL ? NULL : Py_BuildValue("(nNn)", i, recs, k);
                if (where != NULL)
                    PyList_SetItem(failed, 0, where); /* steals where */
                PyErr_Clear();
                PyErr_Restore(et, ev, etb);
            }
        }
        for (Py_ssize_t a = 1; a < made; a++)
            Py_XDECREF(call[a]);
        Py_XDECREF(views);
        if (ret == NULL)
            goto done;
        Py_DECREF(ret);
        if (log != NULL &&
            log_launch(log, i, k, n, level, begin, start, end, mono_s(), moved - moved_before) < 0)
            goto done;
    }
    *moved_out = moved;
    *kernel_out = kernel_s;
    status = 0;
    goto done;
python:
    status = 1;
done:
    if (jobs != NULL) {
        for (Py_ssize_t k = 0; k < n_k; k++) {
            Py_ssize_t n_args = 0;
            if (specs != NULL)
                n_args = PyTuple_GET_SIZE(PyTuple_GET_ITEM(PySequence_Fast_GET_ITEM(specs, k), 2));
            free_job(&jobs[k], n_args);
        }
        PyMem_Free(jobs);
    }
    if (arenas != NULL) {
        for (Py_ssize_t x = 0; x < n_arenas; x++)
            Py_XDECREF(arenas[x].buf);
        PyMem_Free(arenas);
    }
    if (nodes != NULL) {
        for (Py_ssize_t i = 0; i < n_nodes_got; i++)
            PyBuffer_Release(&nodes[i]);
        PyMem_Free(nodes);
    }
    PyMem_Free(seen);
    PyMem_Free(node_ptr);
    for (int i = 0; i < bufs.n; i++)
        Py_DECREF(bufs.buf[i]);
    PyMem_Free(kernel_of);
    PyMem_Free(sizes);
    PyMem_Free(firsts);
    if (have_row)
        PyBuffer_Release(&row_buf);
    if (have_arena)
        PyBuffer_Release(&arena_buf);
    Py_XDECREF(batches);
    Py_XDECREF(records);
    Py_XDECREF(specs);
    return status;
}

/* a flush's log argument: None (no log) or a list; NULL with an error set otherwise */
static PyObject *log_arg(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t at, int *bad) {
    *bad = 0;
    if (nargs <= at || args[at] == Py_None)
        return NULL;
    if (!PyList_Check(args[at])) {
        PyErr_SetString(PyExc_TypeError, "a flush's log must be None or a list");
        *bad = 1;
        return NULL;
    }
    return args[at];
}

PyObject *acrobat_run_flush(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if ((nargs != 9 && nargs != 10) || !PyList_Check(args[7]) || PyList_GET_SIZE(args[7]) != 1) {
        PyErr_SetString(PyExc_TypeError, "run_flush(batches, records, specs, row_of, arena_of, "
                                         "OUT, alloc, failed: [x], sync[, log])");
        return NULL;
    }
    int bad;
    PyObject *log = log_arg(args, nargs, 9, &bad);
    if (bad)
        return NULL;
    long long moved = 0;
    double kernel_s = 0.0;
    int status = run_flush_impl(args, NULL, &moved, &kernel_s, log);
    if (status < 0)
        return NULL;
    if (status > 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(Ld)", moved, kernel_s);
}

/* schedule_flush(records, table, KEY, OUT, STRIDE, specs, row_of, arena_of, alloc, failed,
 *                sync) -> (bytes copied, kernel seconds, launches, schedule seconds) | None
 * list_schedule (sched.c) and run_flush in one call, the batches never Python objects:
 * what run_flush(list_schedule(records, table, KEY, OUT, STRIDE, Batch, alloc), records,
 * specs, row_of, arena_of, OUT, alloc, failed, sync) does, launch for launch (the seconds
 * the schedule took, CLOCK_MONOTONIC, are returned apart from the kernels'). None (nothing
 * done) where list_schedule declines the records; a failed kernel sets failed[0] to
 * (batch number, its record rows, kernel) as run_flush does. */
PyObject *acrobat_schedule_flush(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if ((nargs != 11 && nargs != 12) || !PyList_Check(args[9]) || PyList_GET_SIZE(args[9]) != 1) {
        PyErr_SetString(PyExc_TypeError, "schedule_flush(records, table, KEY, OUT, STRIDE, "
                                         "specs, row_of, arena_of, alloc, failed: [x], sync[, "
                                         "log])");
        return NULL;
    }
    int bad;
    PyObject *log = log_arg(args, nargs, 11, &bad);
    if (bad)
        return NULL;
    int64_t KEYc = PyLong_AsLongLong(args[2]), OUTc = PyLong_AsLongLong(args[3]);
    int64_t STRIDE = PyLong_AsLongLong(args[4]);
    if (PyErr_Occurred())
        return NULL;
    acrobat_plan_t plan;
    double t0 = mono_s();
    int status = acrobat_sched_core(args[0], args[1], KEYc, OUTc, STRIDE, &plan);
    double sched_s = mono_s() - t0;
    if (status < 0)
        return NULL;
    if (status > 0)
        Py_RETURN_NONE;
    PyObject *flush_args[9] = {Py_None, args[0], args[5], args[6], args[7],
                               args[3],  args[8], args[9], args[10]};
    long long moved = 0;
    double kernel_s = 0.0;
    status = run_flush_impl(flush_args, &plan, &moved, &kernel_s, log);
    PyObject *result = NULL;
    if (status == 0)
        result = Py_BuildValue("(Ldnd)", moved, kernel_s, (Py_ssize_t)plan.nb, sched_s);
    else if (status > 0) /* not reached: a plan's batches are always taken */
        result = Py_NewRef(Py_None);
    acrobat_plan_free(&plan);
    return result;
}

/* fiber_flush(take, take_args, next_value, executor, blank, table, KEY, OUT, STRIDE,
 *             specs, alloc, sync, slow, read_answers, reads_python, ARGMAX, mem_limit,
 *             max_out, schedule) -> FiberFlush
 * A compiled fiber program's flushes without Python per flush (Runtime.record_c_fibers,
 * acrobat/runtime/run.py). Called with no arguments when every fiber waits, it does what
 * the runtime's flush closure and Runtime.flush do on their common path, in C:
 *   records = take(*take_args)   the host program's rows since the last flush (take_all),
 *                                per DFG kernel; each kernel's slot of ``blank`` (its empty
 *                                records) where it recorded nothing
 *   no rows: nothing to do
 *   room and memory              next_value() must fit executor.row_of, and with a memory
 *                                limit the run's bound (mem_bound, the rows in use when last
 *                                counted plus max_out bytes per node recorded since) must stay
 *                                under it; otherwise (rare) slow(self, records, nodes) runs
 *                                Runtime.flush's general path on these records (it gets
 *                                this object as an argument: no reference cycle)
 *   schedule(records, ...)       schedule_flush (the executor's native_schedule_flush): the
 *                                acrobat policy's schedule and the launches in one call;
 *                                where it declines, slow(self, records, nodes) runs them
 * and keeps the statistics Runtime.flush keeps (bytes gathered, kernel, schedule, DFG and
 * execution seconds, launches, nodes, the time in flushes) and each fast pass's records
 * (``passes``: the run's DFGs are made from them once it is over). A kernel that raises
 * sets failed[0] as schedule_flush does; the exception propagates (the runtime reports an
 * embedding id out of range by its instance).
 * Its read_all(ops, vids) answers a round of reads by read_answers (plan.c) on the
 * executor's arenas as they are now; where it declines, by reads_python(ops, vids) (the
 * executor's answer_reads_numpy: no second native call). */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *take, *take_args, *next_value, *executor, *blank, *table, *KEY, *OUT, *STRIDE;
    PyObject *specs, *alloc, *failed, *sync, *slow, *read_answers, *reads_python, *ARGMAX;
    PyObject *schedule; /* schedule_flush (the executor's: normally this module's) */
    PyObject *log;      /* None, or a list: each launch's entry, then the pass's marker */
    PyObject *passes; /* list: each fast pass's records */
    long long mem_limit, mem_bound, max_out;
    long long gathered, launches, nodes, fast, slow_calls;
    double kernel_s, sched_s, gen_s, exe_s, flush_s;
} fflush_t;

static PyObject *S_ROW_OF, *S_ARENA_OF, *S_ARENA_LIST;

static int fflush_names(void) {
    if (S_ARENA_LIST != NULL)
        return 0;
    if (names_ready() < 0)
        return -1;
    S_ROW_OF = PyUnicode_InternFromString("row_of");
    S_ARENA_OF = PyUnicode_InternFromString("arena_of");
    S_ARENA_LIST = PyUnicode_InternFromString("arena_list");
    return (S_ROW_OF && S_ARENA_OF && S_ARENA_LIST) ? 0 : -1;
}

static PyObject *fflush_slow(fflush_t *ff, PyObject *recs, Py_ssize_t nodes) {
    ff->slow_calls++;
    PyObject *n = PyLong_FromSsize_t(nodes);
    if (n == NULL)
        return NULL;
    PyObject *r = PyObject_CallFunctionObjArgs(ff->slow, (PyObject *)ff, recs, n, NULL);
    Py_DECREF(n);
    return r;
}

static PyObject *fflush_call(PyObject *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames) {
    fflush_t *ff = (fflush_t *)self;
    (void)args;
    if (PyVectorcall_NARGS(nargsf) != 0 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "a FiberFlush takes no arguments");
        return NULL;
    }
    if (run_cancelled())
        return NULL;
    PyObject *taken = PyObject_Call(ff->take, ff->take_args, NULL);
    if (taken == NULL)
        return NULL;
    double t1 = mono_s();
    PyObject *recs = NULL, *result = NULL, *row_of = NULL, *arena_of = NULL, *nv = NULL;
    PyObject *seq = PySequence_Fast(taken, "take must return a sequence");
    Py_DECREF(taken);
    if (seq == NULL)
        return NULL;
    Py_ssize_t n_k = PyList_GET_SIZE(ff->blank);
    if (PySequence_Fast_GET_SIZE(seq) != n_k) {
        PyErr_SetString(PyExc_ValueError, "take gave records for another number of kernels");
        goto done;
    }
    recs = PyList_New(n_k);
    if (recs == NULL)
        goto done;
    Py_ssize_t nodes = 0;
    for (Py_ssize_t k = 0; k < n_k; k++) {
        PyObject *r = PySequence_Fast_GET_ITEM(seq, k);
        Py_ssize_t len = 0;
        if (r != Py_None) {
            len = PyObject_Length(r);
            if (len < 0)
                goto done;
        }
        PyList_SET_ITEM(recs, k, Py_NewRef(len > 0 ? r : PyList_GET_ITEM(ff->blank, k)));
        nodes += len;
    }
    if (nodes == 0) { /* e.g. a second read of a value the last pass made */
        result = Py_NewRef(Py_None);
        goto done;
    }
    /* room for the value ids recorded (Executor.reserve) and the memory bound
       (Runtime.check_memory): the slow path where either needs Python */
    nv = PyObject_CallNoArgs(ff->next_value);
    row_of = nv == NULL ? NULL : PyObject_GetAttr(ff->executor, S_ROW_OF);
    arena_of = row_of == NULL ? NULL : PyObject_GetAttr(ff->executor, S_ARENA_OF);
    if (arena_of == NULL)
        goto done;
    long long need = PyLong_AsLongLong(nv);
    Py_ssize_t cap = PyObject_Length(row_of);
    if ((need == -1 && PyErr_Occurred()) || cap < 0)
        goto done;
    long long extra = (long long)nodes * ff->max_out;
    int fits = need <= (long long)cap;
    if (fits && ff->mem_limit >= 0)
        fits = ff->mem_bound >= 0 && ff->mem_bound + extra <= ff->mem_limit;
    if (!fits) {
        double t = mono_s();
        ff->gen_s += t - t1;
        ff->flush_s += t - t1;
        result = fflush_slow(ff, recs, nodes);
        goto done;
    }
    double t2 = mono_s();
    /* (a log that is not a list is refused by schedule_flush, before anything runs) */
    PyObject *log = ff->log == NULL ? Py_None : ff->log;
    PyObject *fargs[12] = {recs,     ff->table, ff->KEY,   ff->OUT,    ff->STRIDE, ff->specs,
                           row_of,   arena_of,  ff->alloc, ff->failed, ff->sync, log};
    PyObject *got = PyObject_Vectorcall(ff->schedule, fargs, log == Py_None ? 11 : 12, NULL);
    if (got == NULL)
        goto done;
    if (got == Py_None) { /* the native scheduler declined: Python schedules them */
        Py_DECREF(got);
        double t = mono_s();
        ff->gen_s += t2 - t1;
        ff->sched_s += t - t2;
        ff->flush_s += t - t1;
        result = fflush_slow(ff, recs, nodes);
        goto done;
    }
    long long moved = 0;
    double kernel_s = 0.0, sched_s = 0.0;
    Py_ssize_t nb = 0;
    int ok = PyArg_ParseTuple(got, "Ldnd", &moved, &kernel_s, &nb, &sched_s);
    Py_DECREF(got);
    if (!ok)
        goto done;
    if (ff->mem_limit >= 0)
        ff->mem_bound += extra;
    if (PyList_Append(ff->passes, recs) < 0)
        goto done;
    double t4 = mono_s();
    if (log != Py_None && PyList_Check(log)) { /* the pass's marker: (None, t1, t2, t3, t4, nodes, launches) */
        PyObject *mark = Py_BuildValue("(Oddddnn)", Py_None, t1, t2, t2 + sched_s, t4, nodes, nb);
        int r = mark == NULL ? -1 : PyList_Append(log, mark);
        Py_XDECREF(mark);
        if (r < 0)
            goto done;
    }
    ff->gathered += moved;
    ff->kernel_s += kernel_s;
    ff->launches += nb;
    ff->nodes += nodes;
    ff->fast++;
    ff->gen_s += t2 - t1;
    ff->sched_s += sched_s;
    ff->exe_s += (t4 - t2) - sched_s;
    ff->flush_s += t4 - t1;
    result = Py_NewRef(Py_None);
done:
    Py_DECREF(seq);
    Py_XDECREF(recs);
    Py_XDECREF(nv);
    Py_XDECREF(row_of);
    Py_XDECREF(arena_of);
    return result;
}

/* ff.read_all(ops, vids): a round of fiber reads (Executor.answer_reads) */
static PyObject *fflush_read_all(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    fflush_t *ff = (fflush_t *)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "read_all(ops, vids)");
        return NULL;
    }
    if (ff->read_answers != Py_None) {
        PyObject *arenas = PyObject_GetAttr(ff->executor, S_ARENA_LIST);
        PyObject *row_of = arenas == NULL ? NULL : PyObject_GetAttr(ff->executor, S_ROW_OF);
        PyObject *arena_of = row_of == NULL ? NULL : PyObject_GetAttr(ff->executor, S_ARENA_OF);
        PyObject *got = NULL;
        if (arena_of != NULL) {
            PyObject *rargs[6] = {arenas, args[0], args[1], row_of, arena_of, ff->ARGMAX};
            got = PyObject_Vectorcall(ff->read_answers, rargs, 6, NULL);
        }
        Py_XDECREF(arenas);
        Py_XDECREF(row_of);
        Py_XDECREF(arena_of);
        if (got == NULL || got != Py_None)
            return got;
        Py_DECREF(got);
    }
    return PyObject_Vectorcall(ff->reads_python, args, 2, NULL);
}

static int fflush_traverse(PyObject *self, visitproc visit, void *arg) {
    fflush_t *ff = (fflush_t *)self;
    Py_VISIT(ff->take);
    Py_VISIT(ff->take_args);
    Py_VISIT(ff->next_value);
    Py_VISIT(ff->executor);
    Py_VISIT(ff->blank);
    Py_VISIT(ff->specs);
    Py_VISIT(ff->alloc);
    Py_VISIT(ff->failed);
    Py_VISIT(ff->sync);
    Py_VISIT(ff->slow);
    Py_VISIT(ff->read_answers);
    Py_VISIT(ff->reads_python);
    Py_VISIT(ff->passes);
    Py_VISIT(ff->schedule);
    Py_VISIT(ff->log);
    return 0;
}

static int fflush_clear(PyObject *self) {
    fflush_t *ff = (fflush_t *)self;
    Py_CLEAR(ff->take);
    Py_CLEAR(ff->take_args);
    Py_CLEAR(ff->next_value);
    Py_CLEAR(ff->executor);
    Py_CLEAR(ff->blank);
    Py_CLEAR(ff->table);
    Py_CLEAR(ff->KEY);
    Py_CLEAR(ff->OUT);
    Py_CLEAR(ff->STRIDE);
    Py_CLEAR(ff->specs);
    Py_CLEAR(ff->alloc);
    Py_CLEAR(ff->failed);
    Py_CLEAR(ff->sync);
    Py_CLEAR(ff->slow);
    Py_CLEAR(ff->read_answers);
    Py_CLEAR(ff->reads_python);
    Py_CLEAR(ff->ARGMAX);
    Py_CLEAR(ff->passes);
    Py_CLEAR(ff->schedule);
    Py_CLEAR(ff->log);
    return 0;
}

static void fflush_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    fflush_clear(self);
    PyObject_GC_Del(self);
}

#include <structmember.h>
static PyMemberDef fflush_members[] = {
    {"passes", T_OBJECT, offsetof(fflush_t, passes), READONLY, "each fast pass's records"},
    {"failed", T_OBJECT, offsetof(fflush_t, failed), READONLY,
     "[x]: (batch, record rows, kernel) of a kernel that raised"},
    {"log", T_OBJECT, offsetof(fflush_t, log), 0,
     "None, or a list the flushes log their launches and passes to (a traced run)"},
    {"mem_bound", T_LONGLONG, offsetof(fflush_t, mem_bound), 0,
     "bytes the arenas may hold (-1: not counted yet; Runtime.check_memory's bound)"},
    {"gathered", T_LONGLONG, offsetof(fflush_t, gathered), READONLY, "bytes copied"},
    {"launches", T_LONGLONG, offsetof(fflush_t, launches), READONLY, "launches"},
    {"nodes", T_LONGLONG, offsetof(fflush_t, nodes), READONLY, "nodes run"},
    {"fast", T_LONGLONG, offsetof(fflush_t, fast), READONLY, "flushes done here"},
    {"slow_calls", T_LONGLONG, offsetof(fflush_t, slow_calls), READONLY,
     "flushes given to slow"},
    {"kernel_s", T_DOUBLE, offsetof(fflush_t, kernel_s), READONLY, "kernel seconds"},
    {"sched_s", T_DOUBLE, offsetof(fflush_t, sched_s), READONLY, "schedule seconds"},
    {"gen_s", T_DOUBLE, offsetof(fflush_t, gen_s), READONLY, "seconds making the records"},
    {"exe_s", T_DOUBLE, offsetof(fflush_t, exe_s), READONLY, "execution seconds"},
    {"flush_s", T_DOUBLE, offsetof(fflush_t, flush_s), READONLY,
     "seconds in flushes (here and in slow), take excluded"},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef fflush_methods[] = {
    {"read_all", (PyCFunction)(void (*)(void))fflush_read_all, METH_FASTCALL,
     "read_all(ops, vids) -> answers: a round of fiber reads"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject fflush_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_acrobat_native.FiberFlush",
    .tp_basicsize = sizeof(fflush_t),
    .tp_dealloc = fflush_dealloc,
    .tp_vectorcall_offset = offsetof(fflush_t, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = fflush_traverse,
    .tp_clear = fflush_clear,
    .tp_doc = "a compiled fiber program's flush, run in C (fiber_flush)",
    .tp_members = fflush_members,
    .tp_methods = fflush_methods,
};

PyObject *acrobat_fiber_flush(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 19 || !PyTuple_Check(args[1]) || !PyList_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError,
                        "fiber_flush(take, take_args: tuple, next_value, executor, blank: list, "
                        "table, KEY, OUT, STRIDE, specs, alloc, sync, slow, read_answers, "
                        "reads_python, ARGMAX, mem_limit, max_out, schedule)");
        return NULL;
    }
    if (fflush_names() < 0 || PyType_Ready(&fflush_type) < 0)
        return NULL;
    long long mem_limit = PyLong_AsLongLong(args[16]), max_out = PyLong_AsLongLong(args[17]);
    if (PyErr_Occurred())
        return NULL;
    fflush_t *ff = PyObject_GC_New(fflush_t, &fflush_type);
    if (ff == NULL)
        return NULL;
    ff->vectorcall = fflush_call;
    PyObject **slots[] = {&ff->take,   &ff->take_args, &ff->next_value, &ff->executor,
                          &ff->blank,  &ff->table,     &ff->KEY,        &ff->OUT,
                          &ff->STRIDE, &ff->specs,     &ff->alloc,      &ff->sync,
                          &ff->slow,   &ff->read_answers, &ff->reads_python, &ff->ARGMAX};
    for (int i = 0; i < 16; i++)
        *slots[i] = Py_NewRef(args[i]);
    ff->failed = Py_BuildValue("[O]", Py_None);
    ff->passes = PyList_New(0);
    ff->mem_limit = mem_limit;
    ff->mem_bound = -1;
    ff->max_out = max_out;
    ff->schedule = Py_NewRef(args[18]);
    ff->log = Py_NewRef(Py_None);
    ff->gathered = ff->launches = ff->nodes = ff->fast = ff->slow_calls = 0;
    ff->kernel_s = ff->sched_s = ff->gen_s = ff->exe_s = ff->flush_s = 0.0;
    if (ff->failed == NULL || ff->passes == NULL) {
        Py_DECREF(ff);
        return NULL;
    }
    PyObject_GC_Track(ff);
    return (PyObject *)ff;
}

/* new_int64s(shape) -> numpy.empty(shape, numpy.int64): the allocator the native calls
 * take (take_all, run_flush, list_schedule), without a Python frame per call (~600 calls
 * a StackRNN small b64 run: ~0.14 us each saved); an int or a pair of ints (every call the
 * module makes) through NumPy's C API, the rest through numpy.empty */
static PyObject *NP_EMPTY, *NP_INT64;

/* dims of a shape that is an int or a tuple of at most two ints, all >= 0: their number,
 * or -1 (anything else: numpy.empty says what is wrong with it) */
static int small_shape(PyObject *shape, npy_intp *dims) {
    int tuple = PyTuple_CheckExact(shape);
    if (tuple && PyTuple_GET_SIZE(shape) > 2)
        return -1;
    int nd = tuple ? (int)PyTuple_GET_SIZE(shape) : 1;
    for (int i = 0; i < nd; i++) {
        PyObject *item = tuple ? PyTuple_GET_ITEM(shape, i) : shape;
        if (!PyLong_CheckExact(item))
            return -1;
        Py_ssize_t v = PyLong_AsSsize_t(item);
        if (v < 0) {
            PyErr_Clear();
            return -1;
        }
        dims[i] = (npy_intp)v;
    }
    return nd;
}

PyObject *acrobat_new_int64s(PyObject *self, PyObject *shape) {
    (void)self;
    npy_intp dims[2];
    int nd;
    if (numpy_api() && (nd = small_shape(shape, dims)) >= 0) /* numpy.empty's array, in C */
        return PyArray_SimpleNew(nd, dims, NPY_INT64);
    if (NP_INT64 == NULL) {
        PyObject *np = PyImport_ImportModule("numpy");
        if (np == NULL)
            return NULL;
        NP_EMPTY = PyObject_GetAttrString(np, "empty");
        NP_INT64 = NP_EMPTY == NULL ? NULL : PyObject_GetAttrString(np, "int64");
        Py_DECREF(np);
        if (NP_INT64 == NULL) {
            Py_CLEAR(NP_EMPTY);
            return NULL;
        }
    }
    PyObject *args[2] = {shape, NP_INT64};
    return PyObject_Vectorcall(NP_EMPTY, args, 2, NULL);
}

/* read_rows(arenas, heads, row_of, arena_of) -> list | None: Executor.read_many of every
 * value id in ``heads`` (a list of lists of ids: the elements of the run's list-of-tensor
 * results, list_heads), flattened in order, in one call: the rows copied into one new
 * [n, width] array of the arena's dtype and each id's tensor a view of its row, shaped as
 * the arena's tensors (what read_many's take and ``list(data.reshape(...))`` make).
 * None (nothing done, no error) where that way does not apply: no NumPy C API, a head
 * that is not an exact list, an id that is not an exact int or not a value, ids in more
 * than one arena, an arena whose buffer is not a C-contiguous [rows, width] array or
 * whose shape is () or does not hold ``width`` items; the caller reads them as before.
 * BiRNN small b64's 1,289 output tensors, timed alone: 0.18 ms through read_many (its
 * list of ids made an array, the gather, the list of views) against 0.13 here, most of it
 * NumPy making the views. */
PyObject *acrobat_read_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "read_rows(arenas, heads, row_of, arena_of)");
        return NULL;
    }
    PyObject *arenas = args[0], *heads = args[1];
    if (!numpy_api() || !PyList_CheckExact(arenas) || !PyList_CheckExact(heads) ||
        !PyArray_Check(args[2]) || !PyArray_Check(args[3]))
        Py_RETURN_NONE;
    PyArrayObject *rows_a = (PyArrayObject *)args[2], *which_a = (PyArrayObject *)args[3];
    if (PyArray_NDIM(rows_a) != 1 || PyArray_TYPE(rows_a) != NPY_INT64 ||
        !PyArray_IS_C_CONTIGUOUS(rows_a) || PyArray_NDIM(which_a) != 1 ||
        PyArray_TYPE(which_a) != NPY_INT16 || !PyArray_IS_C_CONTIGUOUS(which_a))
        Py_RETURN_NONE;
    const int64_t *row_of = PyArray_DATA(rows_a);
    const int16_t *arena_of = PyArray_DATA(which_a);
    npy_intp cap = PyArray_DIM(rows_a, 0) < PyArray_DIM(which_a, 0) ? PyArray_DIM(rows_a, 0)
                                                                     : PyArray_DIM(which_a, 0);
    Py_ssize_t n = 0, n_heads = PyList_GET_SIZE(heads);
    int arena = -1, seen = 0;
    for (Py_ssize_t h = 0; h < n_heads; h++) { /* every id checked before anything is made */
        PyObject *ids = PyList_GET_ITEM(heads, h);
        if (!PyList_CheckExact(ids))
            Py_RETURN_NONE;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(ids); j++) {
            PyObject *x = PyList_GET_ITEM(ids, j);
            if (!PyLong_CheckExact(x))
                Py_RETURN_NONE;
            long long v = PyLong_AsLongLong(x);
            if (v == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                Py_RETURN_NONE;
            }
            if (v < 0 || v >= cap || (seen && arena_of[v] != arena))
                Py_RETURN_NONE;
            arena = arena_of[v];
            seen = 1;
        }
        n += PyList_GET_SIZE(ids);
    }
    if (n == 0)
        return PyList_New(0);
    if (arena < 0 || arena >= PyList_GET_SIZE(arenas)) /* no such arena: read_many says */
        Py_RETURN_NONE;
    PyObject *a = PyList_GET_ITEM(arenas, arena);
    PyObject *buf = PyObject_GetAttrString(a, "buf");
    PyObject *shape = buf == NULL ? NULL : PyObject_GetAttrString(a, "shape");
    PyObject *data = NULL, *out = NULL;
    if (shape == NULL)
        goto done;
    npy_intp dims[NPY_MAXDIMS];
    Py_ssize_t nd = PyTuple_Check(shape) ? PyTuple_GET_SIZE(shape) : 0;
    if (nd < 1 || nd > NPY_MAXDIMS || !PyArray_Check(buf))
        goto none;
    PyArrayObject *b = (PyArrayObject *)buf;
    if (PyArray_NDIM(b) != 2 || !PyArray_IS_C_CONTIGUOUS(b))
        goto none;
    npy_intp count = 1, width = PyArray_DIM(b, 1), rows = PyArray_DIM(b, 0);
    for (Py_ssize_t i = 0; i < nd; i++) {
        PyObject *d = PyTuple_GET_ITEM(shape, i);
        Py_ssize_t v = PyLong_CheckExact(d) ? PyLong_AsSsize_t(d) : -1;
        if (v < 0) {
            PyErr_Clear();
            goto none;
        }
        dims[i] = v;
        count *= v;
    }
    if (count != width || width == 0)
        goto none;
    PyArray_Descr *descr = PyArray_DESCR(b);
    size_t row_bytes = (size_t)width * (size_t)PyArray_ITEMSIZE(b);
    npy_intp all[2] = {n, width};
    Py_INCREF(descr); /* stolen */
    data = PyArray_NewFromDescr(&PyArray_Type, descr, 2, all, NULL, NULL, 0, NULL);
    if (data == NULL)
        goto done;
    const char *src = PyArray_BYTES(b);
    char *dst = PyArray_BYTES((PyArrayObject *)data);
    Py_ssize_t k = 0;
    for (Py_ssize_t h = 0; h < n_heads; h++) {
        PyObject *ids = PyList_GET_ITEM(heads, h);
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(ids); j++, k++) {
            int64_t r = row_of[PyLong_AsLongLong(PyList_GET_ITEM(ids, j))];
            if (r < 0 || r >= rows) { /* a row the arena does not have: read_many decides */
                Py_CLEAR(data);
                goto none;
            }
            memcpy(dst + (size_t)k * row_bytes, src + (size_t)r * row_bytes, row_bytes);
        }
    }
    out = PyList_New(n);
    if (out == NULL)
        goto done;
    for (k = 0; k < n; k++) {
        Py_INCREF(descr);
        PyObject *view = PyArray_NewFromDescr(&PyArray_Type, descr, (int)nd, dims, NULL,
                                              dst + (size_t)k * row_bytes, NPY_ARRAY_WRITEABLE,
                                              NULL);
        if (view == NULL)
            goto fail;
        Py_INCREF(data); /* stolen, also on failure */
        if (PyArray_SetBaseObject((PyArrayObject *)view, data) < 0) {
            Py_DECREF(view);
            goto fail;
        }
        PyList_SET_ITEM(out, k, view);
    }
    goto done;
fail:
    Py_CLEAR(out);
    goto done;
none:
    out = Py_None;
    Py_INCREF(out);
done:
    Py_XDECREF(data);
    Py_XDECREF(shape);
    Py_XDECREF(buf);
    return out;
}

/* tensors_fit(instances, specs, one) -> int: the entry check of a program whose every
 * parameter is a tensor (acrobat.ir.values.entry_args_all), for a list of instances in
 * one call. ``specs``: per parameter (shape: tuple of ints, dtype: numpy.dtype); ``one``:
 * True when there is one parameter (the instance is its array), else each instance must
 * be an exact tuple of one array per parameter. An array fits when it is a NumPy array
 * (or a subclass's) of that shape whose dtype is that very dtype object (the one NumPy
 * gives arrays of a builtin type). Returns -1 when every instance certainly fits, else
 * the index of the first it cannot vouch for (the caller checks them in Python then,
 * which explains a misfit or accepts, say, an equal dtype of another object). DRNN small
 * b64's 64 pairs: ~60 us of Python lambdas a run. */
PyObject *acrobat_tensors_fit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3 || !PyList_CheckExact(args[0]) || !PyTuple_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "tensors_fit(instances: list, specs: tuple, one)");
        return NULL;
    }
    PyObject *instances = args[0], *specs = args[1];
    int one = PyObject_IsTrue(args[2]);
    if (one < 0)
        return NULL;
    Py_ssize_t n_p = PyTuple_GET_SIZE(specs);
    if (n_p < 1 || n_p > 64 || (one && n_p != 1)) {
        PyErr_SetString(PyExc_ValueError, "tensors_fit: 1..64 specs, one when one is set");
        return NULL;
    }
    int nd[64];
    npy_intp dims[64][NPY_MAXDIMS];
    PyObject *descr[64]; /* borrowed from specs */
    for (Py_ssize_t j = 0; j < n_p; j++) {
        PyObject *s = PyTuple_GET_ITEM(specs, j);
        if (!PyTuple_CheckExact(s) || PyTuple_GET_SIZE(s) != 2 ||
            !PyTuple_CheckExact(PyTuple_GET_ITEM(s, 0)) ||
            PyTuple_GET_SIZE(PyTuple_GET_ITEM(s, 0)) > NPY_MAXDIMS) {
            PyErr_SetString(PyExc_TypeError, "tensors_fit: a spec is (shape tuple, dtype)");
            return NULL;
        }
        PyObject *shape = PyTuple_GET_ITEM(s, 0);
        nd[j] = (int)PyTuple_GET_SIZE(shape);
        for (int k = 0; k < nd[j]; k++) {
            dims[j][k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, k));
            if (dims[j][k] == -1 && PyErr_Occurred())
                return NULL;
        }
        descr[j] = PyTuple_GET_ITEM(s, 1);
    }
    if (!numpy_api())
        return PyLong_FromLong(PyList_GET_SIZE(instances) ? 0 : -1);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(instances); i++) {
        PyObject *x = PyList_GET_ITEM(instances, i);
        if (!one && (!PyTuple_CheckExact(x) || PyTuple_GET_SIZE(x) != n_p))
            return PyLong_FromSsize_t(i);
        for (Py_ssize_t j = 0; j < n_p; j++) {
            PyObject *a = one ? x : PyTuple_GET_ITEM(x, j);
            if (!PyArray_Check(a))
                return PyLong_FromSsize_t(i);
            PyArrayObject *arr = (PyArrayObject *)a;
            if ((PyObject *)PyArray_DESCR(arr) != descr[j] || PyArray_NDIM(arr) != nd[j])
                return PyLong_FromSsize_t(i);
            for (int k = 0; k < nd[j]; k++)
                if (PyArray_DIM(arr, k) != dims[j][k])
                    return PyLong_FromSsize_t(i);
        }
    }
    return PyLong_FromLong(-1);
}

/* set_cancel(flag, error) / set_cancel(None): the running run's cancel flag (the one-byte
 * bytearray of its acrobat.CancelToken) and the exception to raise once it is set, or
 * none. A flush checks it before each launch (and a FiberFlush before each flush), so a
 * cancel stops a run within one launch, with no Python call per launch. One run at a time
 * holds the process (acrobat/runtime/process.py), so one flag for the module is enough. */
static PyObject *CANCEL_FLAG, *CANCEL_ERROR;

static int run_cancelled(void) {
    if (CANCEL_FLAG == NULL || PyByteArray_AS_STRING(CANCEL_FLAG)[0] == 0)
        return 0;
    PyErr_SetNone(CANCEL_ERROR);
    return 1;
}

PyObject *acrobat_set_cancel(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    int off = nargs == 1 && args[0] == Py_None;
    if (!off && (nargs != 2 || !PyByteArray_Check(args[0]) || PyByteArray_GET_SIZE(args[0]) != 1 ||
                 !PyExceptionClass_Check(args[1]))) {
        PyErr_SetString(PyExc_TypeError, "set_cancel(flag: bytearray(1), error) or set_cancel(None)");
        return NULL;
    }
    Py_CLEAR(CANCEL_FLAG);
    Py_CLEAR(CANCEL_ERROR);
    if (!off) {
        CANCEL_FLAG = Py_NewRef(args[0]);
        CANCEL_ERROR = Py_NewRef(args[1]);
    }
    Py_RETURN_NONE;
}
