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
 * Two threads: with ``threads`` = 2 the weight's panels are split in two halves, the
 * calling thread computing the first and a helper thread of this module (started on first
 * use, one per process) the second. Splitting by columns keeps every output element's
 * summation order, so the result is the same bit for bit on one thread or two. The helper
 * spins briefly after a job (the next launch of a run usually follows within
 * microseconds) and then sleeps on a condition variable; a call that finds it taken by
 * another thread, or a process forked from the one that started it, runs on one thread.
 *
 * sgemm(x, panels, out, bias[, threads]) -> bool
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
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

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

/* Panels outermost within a block of rows, so that each panel of the weight is read once
 * per block and reused from cache by every tile of rows in it; a block's rows (at most
 * BLOCK_BYTES of x) stay in cache across the panels. ``w`` is [ceil(N / 16), K, 16];
 * N % 8 == 0. Computes the columns [n0, n1) (n0 a multiple of 16). */
#define BLOCK_BYTES (192 * 1024)
static void gemm_avx2(Py_ssize_t M, Py_ssize_t N, Py_ssize_t K, const float *x,
                      Py_ssize_t ldx, const float *w, float *o, Py_ssize_t ldo,
                      const float *bias, Py_ssize_t n0, Py_ssize_t n1) {
    (void)N;
    Py_ssize_t block = BLOCK_BYTES / (4 * (K > 0 ? K : 1));
    block = block < 6 ? 6 : block - block % 6;
    for (Py_ssize_t m0 = 0; m0 < M; m0 += block) {
        Py_ssize_t m1 = M - m0 < block ? M : m0 + block;
        for (Py_ssize_t n = n0; n < n1; n += 16) {
            const float *panel = w + (n / 16) * K * 16;
            int full = n1 - n >= 16;
            for (Py_ssize_t m = m0; m < m1; m += 6) {
                Py_ssize_t mr = m1 - m < 6 ? m1 - m : 6;
                TILES[mr](K, x + m * ldx, ldx, panel, o + m * ldo + n, ldo,
                          bias ? bias + n : NULL, full);
            }
        }
    }
}

/* -- the helper thread ------------------------------------------------------------------
 * A two-thread product is cut into CHUNKS pieces (column panels, or blocks of rows); the
 * caller and the helper each take the next untaken piece until none is left, so a helper
 * that is late (asleep, or waiting for a core another process holds) only takes fewer
 * pieces: the caller never waits for work nobody has started. A piece is claimed with
 * one compare-and-swap on ``next`` = job number << 32 | next piece, so a helper still
 * looking at a finished job cannot take a piece of the next one. */
#define CHUNKS 4
typedef struct {
    Py_ssize_t M, N, K, ldx, ldo;
    const float *x, *w, *bias;
    float *o;
    int by_cols;
    Py_ssize_t cut[CHUNKS + 1]; /* piece i: columns or rows [cut[i], cut[i + 1]) */
} job_t;

static pthread_mutex_t call_mu = PTHREAD_MUTEX_INITIALIZER; /* one two-thread call at once */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;      /* guards sleeping, the wake */
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static job_t job;
static atomic_long posted;   /* the number of the latest job */
static atomic_ullong next;   /* job number << 32 | pieces << 16 | the next piece to take */
static atomic_int finished;  /* pieces of the latest job done */
static int sleeping;
static pid_t helper_pid;     /* the process that started the helper (0: none) */

#define SPIN_NS 2000000L /* how long the helper spins for the next job before sleeping */

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void run_piece(int i) {
    Py_ssize_t a = job.cut[i], b = job.cut[i + 1];
    if (job.by_cols)
        gemm_avx2(job.M, job.N, job.K, job.x, job.ldx, job.w, job.o, job.ldo, job.bias, a, b);
    else
        gemm_avx2(b - a, job.N, job.K, job.x + a * job.ldx, job.ldx, job.w, job.o + a * job.ldo,
                  job.ldo, job.bias, 0, job.N);
}

/* Take and run pieces of job ``s`` until none is left. */
static void take_pieces(long s) {
    for (;;) {
        unsigned long long v = atomic_load_explicit(&next, memory_order_acquire);
        int piece = (int)(v & 0xffff), pieces = (int)((v >> 16) & 0xffff);
        if ((long)(v >> 32) != (s & 0xffffffffL) || piece >= pieces)
            return;
        if (!atomic_compare_exchange_weak_explicit(&next, &v, v + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        run_piece(piece);
        atomic_fetch_add_explicit(&finished, 1, memory_order_release);
    }
}

static void *helper_main(void *arg) {
    (void)arg;
    long seen = atomic_load(&posted);
    for (;;) {
        long s = atomic_load_explicit(&posted, memory_order_acquire);
        if (s == seen) {
            long until = now_ns() + SPIN_NS;
            int i = 0;
            while ((s = atomic_load_explicit(&posted, memory_order_acquire)) == seen) {
                _mm_pause();
                if (++i % 64 == 0 && now_ns() > until)
                    break;
            }
        }
        if (s == seen) {
            pthread_mutex_lock(&mu);
            sleeping = 1;
            while ((s = atomic_load_explicit(&posted, memory_order_acquire)) == seen)
                pthread_cond_wait(&cv, &mu);
            sleeping = 0;
            pthread_mutex_unlock(&mu);
        }
        seen = s;
        take_pieces(s);
    }
    return NULL;
}

/* Whether a helper runs in this process (started now if not). */
static int helper_ready(void) {
    pid_t me = getpid();
    if (helper_pid == me)
        return 1;
    /* none yet, or one of the parent's (a fork copies no threads): start ours */
    pthread_mutex_init(&mu, NULL);
    pthread_cond_init(&cv, NULL);
    sleeping = 0;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int err = pthread_create(&t, &attr, helper_main, NULL);
    pthread_attr_destroy(&attr);
    if (err != 0)
        return 0;
    helper_pid = me;
    return 1;
}

/* out = x @ w on two threads: CHUNKS pieces of the panels (columns) when there are four or
 * more, else of the rows (multiples of 6); returns 0 (nothing done) when the product is
 * too narrow and short to cut or the helper is not available. */
static int gemm_two(Py_ssize_t M, Py_ssize_t N, Py_ssize_t K, const float *x, Py_ssize_t ldx,
                    const float *w, float *o, Py_ssize_t ldo, const float *bias) {
    Py_ssize_t panels = (N + 15) / 16;
    int by_cols = panels >= 4 || (panels >= 2 && M < 12);
    Py_ssize_t units = by_cols ? panels : (M + 5) / 6; /* panels, or tiles of 6 rows */
    if (units < 2 || pthread_mutex_trylock(&call_mu) != 0)
        return 0;
    if (!helper_ready()) {
        pthread_mutex_unlock(&call_mu);
        return 0;
    }
    int pieces = units < CHUNKS ? (int)units : CHUNKS;
    Py_ssize_t unit = by_cols ? 16 : 6, end = by_cols ? N : M;
    for (int i = 0; i <= pieces; i++) {
        Py_ssize_t c = (units * i / pieces) * unit;
        job.cut[i] = c < end ? c : end;
    }
    job.M = M, job.N = N, job.K = K, job.ldx = ldx, job.ldo = ldo;
    job.x = x, job.w = w, job.bias = bias, job.o = o, job.by_cols = by_cols;
    long s = atomic_load_explicit(&posted, memory_order_relaxed) + 1;
    atomic_store_explicit(&finished, 0, memory_order_relaxed);
    atomic_store_explicit(&next,
                          ((unsigned long long)(s & 0xffffffffL) << 32) |
                              ((unsigned long long)pieces << 16),
                          memory_order_release);
    pthread_mutex_lock(&mu);
    atomic_store_explicit(&posted, s, memory_order_release);
    if (sleeping)
        pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    take_pieces(s);
    int i = 0;
    while (atomic_load_explicit(&finished, memory_order_acquire) != pieces) {
        _mm_pause();
        if (++i % 256 == 0)
            sched_yield(); /* the helper may be waiting for this core */
    }
    pthread_mutex_unlock(&call_mu);
    return 1;
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
    if (nargs != 4 && nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "sgemm(x, panels, out, bias[, threads]) takes 4 or 5 arguments");
        return NULL;
    }
    long threads = 1;
    if (nargs == 5) {
        threads = PyLong_AsLong(args[4]);
        if (threads == -1 && PyErr_Occurred())
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
            const float *xb = (const float *)x.buf, *wb = (const float *)w.buf;
            const float *bb = has_bias ? (const float *)b.buf : NULL;
            float *ob = (float *)o.buf;
            Py_BEGIN_ALLOW_THREADS
            if (threads < 2 || !gemm_two(M, N, K, xb, ldx, wb, ob, ldo, bb))
                gemm_avx2(M, N, K, xb, ldx, wb, ob, ldo, bb, 0, N);
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
     "sgemm(x, panels, out, bias[, threads]) -> bool: out = x @ W^T (+ bias), float32, "
     "few rows, on one thread or two"},
    {"available", available, METH_NOARGS, "whether this CPU runs the AVX2/FMA kernel"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_acrobat_native",
                                    "acrobat's native kernels", -1, methods};

PyMODINIT_FUNC PyInit__acrobat_native(void) { return PyModule_Create(&module); }
