/* acrobat's native small-row GEMM: out[m, :] = x[m, :] @ wt (+ bias), float32.
 *
 * Why: OpenBLAS packs the whole weight for every sgemm call, so a product of a few rows
 * (the top levels of a tree, the last steps of a batch of sentences, a batch of 8) pays
 * for packing a 256 KB - 2.6 MB weight at each launch: 2 rows can cost 4-5x one row (see
 * docs/architecture.md, "Small GEMMs"). Weights are constants here, so they are packed
 * once, when a kernel is compiled, into panels of 16 columns ([ceil(N / 16), K, 16],
 * zero-padded); this kernel streams each panel once and keeps up to 6 x 16 accumulators
 * in AVX2 registers, so its cost is the FMAs plus one pass over the weight.
 *
 * Built by acrobat.native on first use (the host's C compiler, cached on disk); the AVX2
 * path is chosen at run time when the CPU has AVX2 and FMA, else the call answers False
 * and the caller uses NumPy. Each output row is summed in the same order whatever the
 * number of rows, so a row's result does not depend on the batch it ran in.
 *
 * sgemm(x, panels, out, bias) -> bool
 *   x      [M, K] float32, unit stride along K (any row stride)
 *   panels [ceil(N / 16), K, 16] float32, C-contiguous (acrobat.native.pack of W^T)
 *   out    [M, N] float32, writable, unit stride along N (any row stride), N % 8 == 0,
 *          overlapping no input
 *   bias   [N] float32 contiguous, or None
 * Returns True when it computed ``out``; False when a layout or the CPU is not supported
 * (nothing written). Raises only for arguments that are not buffers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#define ACROBAT_X86 1
#include <immintrin.h>
#endif

#ifdef ACROBAT_X86

#define TARGET __attribute__((target("avx2,fma")))

/* One tile: MR rows (1..6) x 16 columns, the weight's panel [K, 16] read contiguously.
 * The accumulators are named variables (an array of vectors is spilled by GCC); a row
 * past MR is dead code the compiler drops. ``full`` = 0 stores only the first 8 columns
 * (the last panel of an N that is 8 modulo 16). */
#define ROW(i)                                                                           \
    __m256 c##i##0 = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();                 \
    __m256 c##i##1 = bias && full ? _mm256_loadu_ps(bias + 8) : _mm256_setzero_ps();
#define FMA(i)                                                                           \
    if (ROWS > i) {                                                                      \
        __m256 b = _mm256_broadcast_ss(x + i * ldx + k);                                 \
        c##i##0 = _mm256_fmadd_ps(b, w0, c##i##0);                                       \
        c##i##1 = _mm256_fmadd_ps(b, w1, c##i##1);                                       \
    }
#define STORE(i)                                                                         \
    if (ROWS > i) {                                                                      \
        _mm256_storeu_ps(o + i * ldo, c##i##0);                                          \
        if (full)                                                                        \
            _mm256_storeu_ps(o + i * ldo + 8, c##i##1);                                  \
    }
#define TILE(MR)                                                                         \
    TARGET static void tile_##MR(Py_ssize_t K, const float *x, Py_ssize_t ldx,           \
                                 const float *w, float *o, Py_ssize_t ldo,               \
                                 const float *bias, int full) {                          \
        enum { ROWS = MR };                                                              \
        ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)                                        \
        for (Py_ssize_t k = 0; k < K; k++) {                                             \
            __m256 w0 = _mm256_loadu_ps(w + 16 * k);                                     \
            __m256 w1 = _mm256_loadu_ps(w + 16 * k + 8);                                 \
            FMA(0) FMA(1) FMA(2) FMA(3) FMA(4) FMA(5)                                    \
        }                                                                                \
        STORE(0) STORE(1) STORE(2) STORE(3) STORE(4) STORE(5)                            \
    }

TILE(1) TILE(2) TILE(3) TILE(4) TILE(5) TILE(6)

typedef void (*tile_fn)(Py_ssize_t, const float *, Py_ssize_t, const float *, float *,
                        Py_ssize_t, const float *, int);
static const tile_fn TILES[7] = {0, tile_1, tile_2, tile_3, tile_4, tile_5, tile_6};

/* Panels outermost, so that each panel of the weight is read from memory once and reused
 * from cache by every block of rows. ``w`` is [ceil(N / 16), K, 16]; N % 8 == 0. */
static void gemm_avx2(Py_ssize_t M, Py_ssize_t N, Py_ssize_t K, const float *x,
                      Py_ssize_t ldx, const float *w, float *o, Py_ssize_t ldo,
                      const float *bias) {
    for (Py_ssize_t n = 0; n < N; n += 16) {
        const float *panel = w + (n / 16) * K * 16;
        int full = N - n >= 16;
        for (Py_ssize_t m = 0; m < M; m += 6) {
            Py_ssize_t mr = M - m < 6 ? M - m : 6;
            TILES[mr](K, x + m * ldx, ldx, panel, o + m * ldo + n, ldo,
                      bias ? bias + n : NULL, full);
        }
    }
}

static int have_avx2(void) {
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return known;
}
#endif /* ACROBAT_X86 */

/* A float32 buffer's view, or -1 with nothing held (not float32 / wrong rank). */
static int get_f32(PyObject *obj, Py_buffer *view, int flags, int ndim) {
    if (PyObject_GetBuffer(obj, view, flags | PyBUF_STRIDES | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        return -1;
    }
    if (view->ndim != ndim || view->itemsize != 4 || view->format == NULL ||
        strcmp(view->format, "f") != 0) {
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *sgemm(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "sgemm(x, panels, out, bias) takes 4 arguments");
        return NULL;
    }
#ifndef ACROBAT_X86
    Py_RETURN_FALSE;
#else
    if (!have_avx2())
        Py_RETURN_FALSE;
    Py_buffer x, w, o, b;
    int has_bias = args[3] != Py_None;
    if (get_f32(args[0], &x, PyBUF_SIMPLE, 2) < 0)
        Py_RETURN_FALSE;
    if (get_f32(args[1], &w, PyBUF_C_CONTIGUOUS, 3) < 0) {
        PyBuffer_Release(&x);
        Py_RETURN_FALSE;
    }
    if (get_f32(args[2], &o, PyBUF_WRITABLE, 2) < 0) {
        PyBuffer_Release(&x);
        PyBuffer_Release(&w);
        Py_RETURN_FALSE;
    }
    if (has_bias && get_f32(args[3], &b, PyBUF_SIMPLE, 1) < 0) {
        PyBuffer_Release(&x);
        PyBuffer_Release(&w);
        PyBuffer_Release(&o);
        Py_RETURN_FALSE;
    }
    Py_ssize_t M = x.shape[0], K = x.shape[1], N = o.shape[1];
    int ok = w.shape[0] == (N + 15) / 16 && w.shape[1] == K && w.shape[2] == 16 &&
             o.shape[0] == M && N % 8 == 0 && x.strides[1] == 4 && x.strides[0] % 4 == 0 &&
             x.strides[0] >= 0 && o.strides[1] == 4 &&
             o.strides[0] % 4 == 0 && o.strides[0] >= 4 * N &&
             (!has_bias || (b.shape[0] == N && b.strides[0] == 4));
    if (ok && M > 0 && N > 0) {
        /* the output must not overlap an input (it is written while they are read) */
        const char *o0 = (const char *)o.buf;
        const char *o1 = o0 + (M - 1) * o.strides[0] + 4 * N;
        const char *x0 = (const char *)x.buf;
        const char *x1 = x0 + (M - 1) * x.strides[0] + 4 * K;
        const char *w0 = (const char *)w.buf;
        const char *w1 = w0 + 4 * K * 16 * w.shape[0];
        if ((o0 < x1 && x0 < o1) || (o0 < w1 && w0 < o1))
            ok = 0;
    }
    if (ok && M > 0 && N > 0) {
        Py_ssize_t ldx = x.strides[0] / 4, ldo = o.strides[0] / 4;
        if (K == 0) {
            for (Py_ssize_t m = 0; m < M; m++)
                for (Py_ssize_t n = 0; n < N; n++)
                    ((float *)o.buf)[m * ldo + n] = has_bias ? ((float *)b.buf)[n] : 0.0f;
        } else {
            Py_BEGIN_ALLOW_THREADS
            gemm_avx2(M, N, K, (const float *)x.buf, ldx, (const float *)w.buf, (float *)o.buf,
                      ldo, has_bias ? (const float *)b.buf : NULL);
            Py_END_ALLOW_THREADS
        }
    }
    PyBuffer_Release(&x);
    PyBuffer_Release(&w);
    PyBuffer_Release(&o);
    if (has_bias)
        PyBuffer_Release(&b);
    if (ok)
        Py_RETURN_TRUE;
    Py_RETURN_FALSE;
#endif
}

static PyObject *available(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
#ifdef ACROBAT_X86
    if (have_avx2())
        Py_RETURN_TRUE;
#endif
    Py_RETURN_FALSE;
}

static PyMethodDef methods[] = {
    {"sgemm", (PyCFunction)(void (*)(void))sgemm, METH_FASTCALL,
     "sgemm(x, panels, out, bias) -> bool: out = x @ W^T (+ bias), float32, few rows"},
    {"available", available, METH_NOARGS, "whether this CPU runs the AVX2/FMA kernel"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_acrobat_native",
                                    "acrobat's native kernels", -1, methods};

PyMODINIT_FUNC PyInit__acrobat_native(void) { return PyModule_Create(&module); }
