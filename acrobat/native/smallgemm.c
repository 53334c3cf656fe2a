/* acrobat's native small-row GEMM: out[m, :] = x[m, :] @ wt (+ bias), float32.
 *
 * Why: OpenBLAS packs the whole weight for every sgemm call, so a product of a few rows
 * (the top levels of a tree, the last steps of a batch of sentences, a batch of 8) pays
 * for packing a 256 KB - 2.6 MB weight at each launch: 2 rows can cost 4-5x one row (see
 * docs/architecture.md, "Small GEMMs"). Weights are constants here, so they are packed
 * once, when a kernel is compiled, into panels of 16 columns ([ceil(N / 16), K, 16],
 * zero-padded); this kernel streams each panel once and keeps up to 6 x 16 accumulators
 * in AVX2 registers (12 x 16 in AVX-512 registers where the CPU has AVX-512F: isa()), so
 * its cost is the FMAs plus one pass over the weight.
 *
 * Built by acrobat.native on first use (the host's C compiler, cached on disk); the AVX2
 * path is chosen at run time when the CPU has AVX2 and FMA (AVX-512 tiles when it has
 * AVX-512F too, unless ACROBAT_NATIVE_ISA=avx2; both give the same bits), else the call
 * answers False and the caller uses NumPy. Each output row is summed in the same order whatever the
 * number of rows, so a row's result does not depend on the batch it ran in.
 *
 * Two threads: with ``threads`` = 2 a product is cut into pieces (of its columns, or of
 * its rows) that the calling thread and a helper thread of this module (started on first
 * use, one per process) share. Cutting columns or rows keeps every output element's
 * summation order, so the result is the same bit for bit on one thread or two. The helper
 * spins briefly after a job (the next launch of a run usually follows within
 * microseconds) and then sleeps on a condition variable, at once after park() (the end of
 * a run); a call that finds it taken by
 * another thread, or a process forked from the one that started it, runs on one thread.
 *
 * sgemm(x, panels, out, bias[, threads]) -> bool
 *   x      [M, K] float32, unit stride along K (any row stride); or a tuple of at most 8
 *          parts, concatenated along K, each an [M, Kp] array or a pair (buf [R, Kp],
 *          rows [M] int64, every row in [0, R)) meaning buf[rows]: the gather (and the
 *          concatenation) is fused into the product, rows are read where they lie
 *   panels [ceil(N / 16), K, 16] float32, C-contiguous (acrobat.native.pack of W^T)
 *   out    [M, N] float32, writable, unit stride along N (any row stride), N % 8 == 0,
 *          overlapping no input row
 *   bias   [N] float32 contiguous, or None
 * Returns True when it computed ``out``; False when a layout or the CPU is not supported
 * (nothing written). Raises only for arguments that are not buffers.
 *
 * sgemm_segs(x, panels, out, biases, segs[, threads]) -> bool
 *   a twin group's product (acrobat.codegen.twins), ``x`` as for sgemm: ``segs`` is
 *   ``((member, rows), ...)`` in row order, and each member's rows of ``x`` take its
 *   weight, ``panels[member]`` (and
 *   ``biases[member]`` unless ``biases`` is None); on two threads the members' products
 *   run side by side. True when it computed every row; False, with nothing written, when
 *   any part is not supported.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
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
 * The rows of x are read through pointers, one per row and part (``xp[p * ldp + i]``: row
 * i of part p; the parts are x's columns in order, ``kw[p]`` wide), so a row can live
 * anywhere: gathered rows are read where they are, not copied first. Each output element
 * is summed over k = 0 .. K - 1 in order, parts or not. The accumulators are named
 * variables (an array of vectors is spilled by GCC); a row past MR is dead code the
 * compiler drops. ``full`` = 0 stores only the first 8 columns (the last panel of an N
 * that is 8 modulo 16). */
#define ROW(i)                                                                           \
    __m256 c##i##0 = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();                 \
    __m256 c##i##1 = bias && full ? _mm256_loadu_ps(bias + 8) : _mm256_setzero_ps();
#define XROW(i) const float *x##i = ROWS > i ? xp[i] : NULL;
#define FMA(i)                                                                           \
    if (ROWS > i) {                                                                      \
        __m256 b = _mm256_broadcast_ss(x##i + k);                                        \
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
    TARGET static void tile_##MR(int nparts, const Py_ssize_t *kw,                        \
                                 const float *const *xp, Py_ssize_t ldp, const float *w, \
                                 float *o, Py_ssize_t ldo, const float *bias, int full) { \
        enum { ROWS = MR };                                                              \
        ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)                                        \
        for (int p = 0; p < nparts; p++, xp += ldp) {                                    \
            XROW(0) XROW(1) XROW(2) XROW(3) XROW(4) XROW(5)                              \
            Py_ssize_t K = kw[p];                                                        \
            for (Py_ssize_t k = 0; k < K; k++) {                                         \
                __m256 w0 = _mm256_loadu_ps(w + 16 * k);                                 \
                __m256 w1 = _mm256_loadu_ps(w + 16 * k + 8);                             \
                FMA(0) FMA(1) FMA(2) FMA(3) FMA(4) FMA(5)                                \
            }                                                                            \
            w += 16 * K;                                                                 \
        }                                                                                \
        STORE(0) STORE(1) STORE(2) STORE(3) STORE(4) STORE(5)                            \
    }

TILE(1) TILE(2) TILE(3) TILE(4) TILE(5) TILE(6)

typedef void (*tile_fn)(int, const Py_ssize_t *, const float *const *, Py_ssize_t,
                        const float *, float *, Py_ssize_t, const float *, int);
static const tile_fn TILES[7] = {0, tile_1, tile_2, tile_3, tile_4, tile_5, tile_6};

/* The same tile with AVX-512 (where the CPU has it): a panel's 16 columns are one vector,
 * so a tile takes up to MR512 rows and twice the multiply-adds per instruction. Every
 * output element is the same chain of FMAs over k = 0 .. K - 1 from the bias (or 0) as
 * in the AVX2 tile, so the two give the same bits. ``full`` = 0: only the first 8
 * columns are loaded from the bias and stored (the weight's padding columns are zero). */
#define MR512 12
#define TARGET512 __attribute__((target("avx512f,avx2,fma")))
#define ROWZ(i)                                                                          \
    __m512 d##i = !bias ? _mm512_setzero_ps()                                            \
                        : full ? _mm512_loadu_ps(bias) : _mm512_maskz_loadu_ps(0xFF, bias);
#define FMAZ(i)                                                                          \
    if (ROWS > i)                                                                        \
        d##i = _mm512_fmadd_ps(_mm512_set1_ps(x##i[k]), w0, d##i);
#define STOREZ(i)                                                                        \
    if (ROWS > i) {                                                                      \
        if (full)                                                                        \
            _mm512_storeu_ps(o + i * ldo, d##i);                                         \
        else                                                                             \
            _mm512_mask_storeu_ps(o + i * ldo, 0xFF, d##i);                              \
    }
#define TILEZ(MR)                                                                        \
    TARGET512 static void tilez_##MR(int nparts, const Py_ssize_t *kw,                   \
                                     const float *const *xp, Py_ssize_t ldp,             \
                                     const float *w, float *o, Py_ssize_t ldo,           \
                                     const float *bias, int full) {                      \
        enum { ROWS = MR };                                                              \
        ROWZ(0) ROWZ(1) ROWZ(2) ROWZ(3) ROWZ(4) ROWZ(5) ROWZ(6) ROWZ(7) ROWZ(8) ROWZ(9)  \
        ROWZ(10) ROWZ(11)                                                                \
        for (int p = 0; p < nparts; p++, xp += ldp) {                                    \
            XROW(0) XROW(1) XROW(2) XROW(3) XROW(4) XROW(5) XROW(6) XROW(7) XROW(8)      \
            XROW(9) XROW(10) XROW(11)                                                    \
            Py_ssize_t K = kw[p];                                                        \
            for (Py_ssize_t k = 0; k < K; k++) {                                         \
                __m512 w0 = _mm512_loadu_ps(w + 16 * k);                                 \
                FMAZ(0) FMAZ(1) FMAZ(2) FMAZ(3) FMAZ(4) FMAZ(5) FMAZ(6) FMAZ(7) FMAZ(8)  \
                FMAZ(9) FMAZ(10) FMAZ(11)                                                \
            }                                                                            \
            w += 16 * K;                                                                 \
        }                                                                                \
        STOREZ(0) STOREZ(1) STOREZ(2) STOREZ(3) STOREZ(4) STOREZ(5) STOREZ(6) STOREZ(7)  \
        STOREZ(8) STOREZ(9) STOREZ(10) STOREZ(11)                                        \
    }

TILEZ(1) TILEZ(2) TILEZ(3) TILEZ(4) TILEZ(5) TILEZ(6) TILEZ(7) TILEZ(8) TILEZ(9) TILEZ(10)
TILEZ(11) TILEZ(12)

static const tile_fn TILESZ[MR512 + 1] = {0,       tilez_1, tilez_2,  tilez_3,  tilez_4,
                                          tilez_5, tilez_6, tilez_7,  tilez_8,  tilez_9,
                                          tilez_10, tilez_11, tilez_12};

static int use512 = -1; /* the tiles the products take: 1 AVX-512, 0 AVX2 (-1: not chosen) */

static int have_avx512(void) {
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
                __builtin_cpu_supports("fma");
    }
    return known;
}

/* Panels outermost within a block of rows, so that each panel of the weight is read once
 * per block and reused from cache by every tile of rows in it; a block's rows (at most
 * BLOCK_BYTES of x) stay in cache across the panels. ``w`` is [ceil(N / 16), K, 16];
 * N % 8 == 0. Computes the columns [n0, n1) (n0 a multiple of 16) of rows [m0, m1). */
#define BLOCK_BYTES (192 * 1024)
typedef struct {
    Py_ssize_t M, N, K, ldp, ldo;
    int nparts;
    const Py_ssize_t *kw;
    const float *const *xp; /* row pointers of this task's first row, part-major (ldp) */
    const float *w, *bias;
    float *o;
} task_t;

static void gemm_avx2(const task_t *t, Py_ssize_t m0, Py_ssize_t m1, Py_ssize_t n0,
                      Py_ssize_t n1) {
    Py_ssize_t K = t->K, ldo = t->ldo;
    const int wide = use512 == 1;
    const Py_ssize_t mrmax = wide ? MR512 : 6;
    const tile_fn *tiles = wide ? TILESZ : TILES;
    Py_ssize_t block = BLOCK_BYTES / (4 * (K > 0 ? K : 1));
    block = block < mrmax ? mrmax : block - block % mrmax;
    for (Py_ssize_t b0 = m0; b0 < m1; b0 += block) {
        Py_ssize_t b1 = m1 - b0 < block ? m1 : b0 + block;
        for (Py_ssize_t n = n0; n < n1; n += 16) {
            const float *panel = t->w + (n / 16) * K * 16;
            int full = n1 - n >= 16;
            for (Py_ssize_t m = b0; m < b1; m += mrmax) {
                Py_ssize_t mr = b1 - m < mrmax ? b1 - m : mrmax;
                tiles[mr](t->nparts, t->kw, t->xp + m, t->ldp, panel, t->o + m * ldo + n, ldo,
                          t->bias ? t->bias + n : NULL, full);
            }
        }
    }
}

/* -- tasks, pieces and the helper thread ----------------------------------------------
 * A call is a job of one or more tasks (products); on two threads each task is cut into
 * pieces (column panels, or blocks of rows) and the caller and the helper each take the
 * next untaken piece until none is left, so a helper that is late (asleep, or waiting for
 * a core another process holds) only takes fewer pieces: the caller never waits for work
 * nobody has started. A piece is claimed with one compare-and-swap on ``next`` (job
 * number, pieces, next piece), so a helper still looking at a finished job cannot take a
 * piece of the next one. */
#define CUTS 4         /* pieces of a job's largest task */
#define MAX_TASKS 16
#define MAX_PIECES (CUTS * MAX_TASKS)
typedef struct {
    int task, by_cols;
    Py_ssize_t a, b; /* columns or rows [a, b) */
} piece_t;

static task_t tasks[MAX_TASKS];
static piece_t pieces[MAX_PIECES];
static pthread_mutex_t call_mu = PTHREAD_MUTEX_INITIALIZER; /* one two-thread job at once */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;      /* guards sleeping, the wake */
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static atomic_long posted;  /* the number of the latest job */
static atomic_ullong next;  /* job number << 32 | pieces << 16 | the next piece to take */
static atomic_int finished; /* pieces of the latest job done */
static int sleeping;
static atomic_int parked; /* 1: the helper sleeps at once after its job (park()) */
static pid_t helper_pid; /* the process that started the helper (0: none) */

#define SPIN_NS 2000000L /* how long the helper spins for the next job before sleeping */

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void run_task(const task_t *t) { gemm_avx2(t, 0, t->M, 0, t->N); }

static void run_piece(int i) {
    const piece_t *p = &pieces[i];
    const task_t *t = &tasks[p->task];
    if (p->by_cols)
        gemm_avx2(t, 0, t->M, p->a, p->b);
    else
        gemm_avx2(t, p->a, p->b, 0, t->N);
}

/* Take and run pieces of job ``s`` until none is left. */
static void take_pieces(long s) {
    for (;;) {
        unsigned long long v = atomic_load_explicit(&next, memory_order_acquire);
        int piece = (int)(v & 0xffff), count = (int)((v >> 16) & 0xffff);
        if ((long)(v >> 32) != (s & 0xffffffffL) || piece >= count)
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
        if (s == seen && !atomic_load_explicit(&parked, memory_order_relaxed)) {
            long until = now_ns() + SPIN_NS;
            int i = 0;
            while ((s = atomic_load_explicit(&posted, memory_order_acquire)) == seen) {
                _mm_pause();
                if (++i % 64 == 0) {
                    if (now_ns() > until || atomic_load_explicit(&parked, memory_order_relaxed))
                        break;
                    /* a thread woken beside its waker shares its core until the kernel
                     * moves one: let the caller run rather than spin in its way */
                    sched_yield();
                }
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

/* Cut task ``i`` into at most ``want`` pieces, appended at ``pieces[n]``: of its panels
 * (columns) when it has four or more, or two or more and few rows, else of its tiles of 6
 * rows. Returns the new count. */
static int cut_task(int i, int want, int n) {
    const task_t *t = &tasks[i];
    Py_ssize_t panels = (t->N + 15) / 16;
    int by_cols = panels >= 4 || (panels >= 2 && t->M < 12);
    Py_ssize_t units = by_cols ? panels : (t->M + 5) / 6;
    Py_ssize_t unit = by_cols ? 16 : 6, end = by_cols ? t->N : t->M;
    int k = units < want ? (int)units : want;
    if (k < 1)
        k = 1;
    for (int j = 0; j < k; j++) {
        Py_ssize_t a = (units * j / k) * unit, b = (units * (j + 1) / k) * unit;
        pieces[n + j] = (piece_t){i, by_cols, a < end ? a : end, b < end ? b : end};
    }
    return n + k;
}

/* Run the ``ntasks`` tasks ``mine`` (1..MAX_TASKS) on two threads; 0 (nothing done) when
 * the helper is taken (by another thread's call) or cannot start. */
static int run_two(const task_t *mine, int ntasks, double total_macs) {
    if (pthread_mutex_trylock(&call_mu) != 0)
        return 0;
    if (!helper_ready()) {
        pthread_mutex_unlock(&call_mu);
        return 0;
    }
    memcpy(tasks, mine, sizeof(task_t) * (size_t)ntasks);
    /* each task's pieces in proportion to its share of the work, at least one */
    int count = 0;
    for (int i = 0; i < ntasks; i++) {
        const task_t *t = &tasks[i];
        double share = total_macs > 0 ? (double)t->M * t->N * t->K / total_macs : 1.0;
        int want = (int)(share * CUTS + 0.5);
        count = cut_task(i, want < 1 ? 1 : want, count);
    }
    long s = atomic_load_explicit(&posted, memory_order_relaxed) + 1;
    atomic_store_explicit(&finished, 0, memory_order_relaxed);
    atomic_store_explicit(&next,
                          ((unsigned long long)(s & 0xffffffffL) << 32) |
                              ((unsigned long long)count << 16),
                          memory_order_release);
    atomic_store_explicit(&parked, 0, memory_order_relaxed);
    pthread_mutex_lock(&mu);
    atomic_store_explicit(&posted, s, memory_order_release);
    if (sleeping)
        pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    take_pieces(s);
    int i = 0;
    while (atomic_load_explicit(&finished, memory_order_acquire) != count) {
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
        if (use512 < 0) { /* AVX-512 where the CPU has it, unless ACROBAT_NATIVE_ISA=avx2 */
            const char *isa = getenv("ACROBAT_NATIVE_ISA");
            use512 = known && have_avx512() && !(isa && strcmp(isa, "avx2") == 0);
        }
    }
    return known;
}

int acrobat_have_avx2(void) { return have_avx2(); } /* rowprog.c asks too */
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

/* Whether [a0, a1) and [b0, b1) share a byte. */
static int overlap(const char *a0, const char *a1, const char *b0, const char *b1) {
    return a0 < b1 && b0 < a1;
}

/* The weight's panels (and the bias) for a product of K inputs to N outputs, checked;
 * 0 with both held, -1 with nothing held. */
static int get_weight(PyObject *wobj, PyObject *bobj, Py_ssize_t K, Py_ssize_t N, Py_buffer *w,
                      Py_buffer *b) {
    if (get_f32(wobj, w, PyBUF_C_CONTIGUOUS, 3) < 0)
        return -1;
    if (w->shape[0] != (N + 15) / 16 || w->shape[1] != K || w->shape[2] != 16) {
        PyBuffer_Release(w);
        return -1;
    }
    if (bobj != Py_None) {
        if (get_f32(bobj, b, PyBUF_SIMPLE, 1) < 0) {
            PyBuffer_Release(w);
            return -1;
        }
        if (b->shape[0] != N || b->strides[0] != 4) {
            PyBuffer_Release(w);
            PyBuffer_Release(b);
            return -1;
        }
    }
    return 0;
}

/* The row numbers of an (arena buffer, rows) pair: a C-contiguous int64 vector of
 * ``count`` entries (any length when ``count`` < 0), each a row of a buffer of ``R`` rows,
 * so that nothing else is read. 0 with ``r`` held, -1 with nothing held. rowprog.c's input
 * pairs are checked here too. */
int acrobat_row_numbers(PyObject *obj, Py_buffer *r, Py_ssize_t count, Py_ssize_t R) {
    if (PyObject_GetBuffer(obj, r, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        return -1;
    }
    int ok = r->ndim == 1 && r->itemsize == 8 && r->format != NULL &&
             (strcmp(r->format, "l") == 0 || strcmp(r->format, "q") == 0) &&
             (count < 0 || r->shape[0] == count);
    const int64_t *rv = (const int64_t *)r->buf;
    for (Py_ssize_t m = 0; ok && m < r->shape[0]; m++)
        ok = rv[m] >= 0 && rv[m] < R;
    if (!ok) {
        PyBuffer_Release(r);
        return -1;
    }
    return 0;
}

/* x: one [M, K] array, or a tuple of parts concatenated along K, each an [M, Kp] array or
 * a pair (buf [R, Kp], rows [M] int64) whose row m is buf[rows[m]] (rows gathered where
 * they lie). Every array float32 with unit stride along its columns. */
#define MAX_PARTS 8
typedef struct {
    int n, held; /* parts; views held (buffers, then index arrays) */
    Py_buffer buf[MAX_PARTS], idx[MAX_PARTS];
    int has_idx[MAX_PARTS];
    Py_ssize_t kw[MAX_PARTS];
    Py_ssize_t M, K;
    const float **ptr; /* n x M row pointers, part-major */
} xrows_t;

static void release_x(xrows_t *x) {
    for (int i = 0; i < x->held; i++) {
        PyBuffer_Release(&x->buf[i]);
        if (x->has_idx[i])
            PyBuffer_Release(&x->idx[i]);
    }
    x->held = 0;
    free(x->ptr);
    x->ptr = NULL;
}

/* One part: 0 with its views held (x->held counts it), -1 with it not held. */
static int get_part(PyObject *obj, xrows_t *x, int i) {
    PyObject *arr = obj, *rows = NULL;
    if (PyTuple_Check(obj)) {
        if (PyTuple_GET_SIZE(obj) != 2)
            return -1;
        arr = PyTuple_GET_ITEM(obj, 0);
        rows = PyTuple_GET_ITEM(obj, 1);
    }
    Py_buffer *v = &x->buf[i], *r = &x->idx[i];
    if (get_f32(arr, v, PyBUF_SIMPLE, 2) < 0)
        return -1;
    if ((v->shape[1] > 1 && v->strides[1] != 4) || v->strides[0] % 4 != 0 || v->strides[0] < 0) {
        PyBuffer_Release(v);
        return -1;
    }
    Py_ssize_t M = v->shape[0];
    x->has_idx[i] = rows != NULL;
    if (rows != NULL) {
        if (acrobat_row_numbers(rows, r, -1, v->shape[0]) < 0) {
            PyBuffer_Release(v);
            return -1;
        }
        M = r->shape[0];
    }
    if (i > 0 && M != x->M) {
        if (rows != NULL)
            PyBuffer_Release(r);
        PyBuffer_Release(v);
        return -1;
    }
    x->M = M;
    x->kw[i] = v->shape[1];
    x->K += v->shape[1];
    x->held = i + 1;
    return 0;
}

/* x (see xrows_t) and out [M, N] (unit stride along N, N % 8 == 0) checked, x's row
 * pointers made, no row of x overlapping out; 0 with everything held, -1 with nothing. */
static int get_rows(PyObject *xobj, PyObject *oobj, xrows_t *x, Py_buffer *o) {
    memset(x, 0, sizeof(*x));
    if (PyTuple_Check(xobj)) {
        Py_ssize_t n = PyTuple_GET_SIZE(xobj);
        if (n < 1 || n > MAX_PARTS)
            return -1;
        x->n = (int)n;
        for (int i = 0; i < x->n; i++)
            if (get_part(PyTuple_GET_ITEM(xobj, i), x, i) < 0) {
                release_x(x);
                return -1;
            }
    } else {
        x->n = 1;
        if (get_part(xobj, x, 0) < 0)
            return -1;
    }
    if (get_f32(oobj, o, PyBUF_WRITABLE, 2) < 0) {
        release_x(x);
        return -1;
    }
    Py_ssize_t M = x->M, N = o->shape[1];
    int ok = o->shape[0] == M && N % 8 == 0 && o->strides[1] == 4 && o->strides[0] % 4 == 0 &&
             o->strides[0] >= 4 * N;
    if (ok && M > 0) {
        x->ptr = malloc(sizeof(float *) * (size_t)x->n * (size_t)M);
        ok = x->ptr != NULL;
    }
    if (ok && M > 0) {
        const char *o0 = (const char *)o->buf, *o1 = o0 + (M - 1) * o->strides[0] + 4 * N;
        for (int i = 0; i < x->n; i++) {
            const char *b = (const char *)x->buf[i].buf;
            Py_ssize_t ld = x->buf[i].strides[0], row = 4 * x->kw[i];
            const int64_t *rv = x->has_idx[i] ? (const int64_t *)x->idx[i].buf : NULL;
            const float **ptr = x->ptr + (size_t)i * (size_t)M;
            for (Py_ssize_t m = 0; m < M; m++) {
                const char *r = b + (rv ? rv[m] : m) * ld;
                ptr[m] = (const float *)r;
                if (N > 0 && row > 0 && overlap(r, r + row, o0, o1))
                    ok = 0;
            }
        }
    }
    if (!ok) {
        release_x(x);
        PyBuffer_Release(o);
        return -1;
    }
    return 0;
}

static int out_overlaps_weight(const Py_buffer *o, const Py_buffer *w) {
    Py_ssize_t M = o->shape[0], N = o->shape[1];
    if (M == 0 || N == 0)
        return 0;
    const char *o0 = (const char *)o->buf, *w0 = (const char *)w->buf;
    return overlap(o0, o0 + (M - 1) * o->strides[0] + 4 * N, w0, w0 + w->len);
}

static long threads_arg(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t at) {
    if (nargs <= at)
        return 1;
    return PyLong_AsLong(args[at]);
}

#ifdef ACROBAT_X86
/* Run the tasks ``mine`` (K > 0 in each) on ``threads`` threads, the GIL released. */
static void run_tasks(const task_t *mine, int ntasks, long threads) {
    double macs = 0;
    for (int i = 0; i < ntasks; i++)
        macs += (double)mine[i].M * mine[i].N * mine[i].K;
    Py_BEGIN_ALLOW_THREADS
    if (threads < 2 || !run_two(mine, ntasks, macs))
        for (int i = 0; i < ntasks; i++)
            run_task(&mine[i]);
    Py_END_ALLOW_THREADS
}
#endif

/* M rows of out = the bias (or 0): a product with K = 0 */
static void fill_bias(char *o, Py_ssize_t ldo_bytes, Py_ssize_t M, Py_ssize_t N,
                      const float *bias) {
    for (Py_ssize_t m = 0; m < M; m++) {
        float *row = (float *)(o + m * ldo_bytes);
        for (Py_ssize_t n = 0; n < N; n++)
            row[n] = bias ? bias[n] : 0.0f;
    }
}

static PyObject *sgemm(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4 && nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "sgemm(x, panels, out, bias[, threads]) takes 4 or 5 arguments");
        return NULL;
    }
    long threads = threads_arg(args, nargs, 4);
    if (threads == -1 && PyErr_Occurred())
        return NULL;
#ifndef ACROBAT_X86
    Py_RETURN_FALSE;
#else
    if (!have_avx2())
        Py_RETURN_FALSE;
    xrows_t x;
    Py_buffer o, w, b;
    if (get_rows(args[0], args[2], &x, &o) < 0)
        Py_RETURN_FALSE;
    Py_ssize_t M = x.M, K = x.K, N = o.shape[1];
    int has_bias = args[3] != Py_None;
    if (get_weight(args[1], args[3], K, N, &w, &b) < 0) {
        release_x(&x);
        PyBuffer_Release(&o);
        Py_RETURN_FALSE;
    }
    int ok = !out_overlaps_weight(&o, &w);
    if (ok && M > 0 && N > 0) {
        const float *bb = has_bias ? (const float *)b.buf : NULL;
        if (K == 0) {
            fill_bias((char *)o.buf, o.strides[0], M, N, bb);
        } else {
            task_t t = {M, N, K, M, o.strides[0] / 4, x.n, x.kw, x.ptr, (const float *)w.buf,
                        bb, (float *)o.buf};
            run_tasks(&t, 1, threads);
        }
    }
    release_x(&x);
    PyBuffer_Release(&o);
    PyBuffer_Release(&w);
    if (has_bias)
        PyBuffer_Release(&b);
    if (ok)
        Py_RETURN_TRUE;
    Py_RETURN_FALSE;
#endif
}

static PyObject *sgemm_segs(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 5 && nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "sgemm_segs(x, panels, out, biases, segs[, threads]) takes 5 or 6 "
                        "arguments");
        return NULL;
    }
    long threads = threads_arg(args, nargs, 5);
    if (threads == -1 && PyErr_Occurred())
        return NULL;
#ifndef ACROBAT_X86
    Py_RETURN_FALSE;
#else
    PyObject *panels = args[1], *biases = args[3], *segs = args[4];
    if (!have_avx2() || !PyTuple_Check(panels) || !PyTuple_Check(segs) ||
        (biases != Py_None && (!PyTuple_Check(biases) ||
                               PyTuple_GET_SIZE(biases) != PyTuple_GET_SIZE(panels))))
        Py_RETURN_FALSE;
    Py_ssize_t nseg = PyTuple_GET_SIZE(segs), nmem = PyTuple_GET_SIZE(panels);
    if (nseg > MAX_TASKS || nmem > MAX_TASKS)
        Py_RETURN_FALSE;
    xrows_t x;
    Py_buffer o;
    if (get_rows(args[0], args[2], &x, &o) < 0)
        Py_RETURN_FALSE;
    Py_ssize_t M = x.M, K = x.K, N = o.shape[1];
    Py_buffer w[MAX_TASKS], b[MAX_TASKS];
    int held[MAX_TASKS] = {0}; /* 1: w held, 2: w and b held */
    task_t mine[MAX_TASKS];
    int ntasks = 0, ok = 1;
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; ok && i < nseg; i++) {
        PyObject *seg = PyTuple_GET_ITEM(segs, i);
        if (!PyTuple_Check(seg) || PyTuple_GET_SIZE(seg) != 2) {
            ok = 0;
            break;
        }
        long m = PyLong_AsLong(PyTuple_GET_ITEM(seg, 0));
        Py_ssize_t rows = PyLong_AsSsize_t(PyTuple_GET_ITEM(seg, 1));
        if (PyErr_Occurred()) {
            PyErr_Clear();
            ok = 0;
            break;
        }
        if (m < 0 || m >= nmem || rows < 0 || at + rows > M) {
            ok = 0;
            break;
        }
        if (!held[m]) {
            PyObject *bobj = biases == Py_None ? Py_None : PyTuple_GET_ITEM(biases, m);
            if (get_weight(PyTuple_GET_ITEM(panels, m), bobj, K, N, &w[m], &b[m]) < 0) {
                ok = 0;
                break;
            }
            held[m] = bobj == Py_None ? 1 : 2;
            if (out_overlaps_weight(&o, &w[m])) {
                ok = 0;
                break;
            }
        }
        if (rows > 0 && N > 0) /* checked first, computed once everything is checked */
            mine[ntasks++] = (task_t){rows,
                                      N,
                                      K,
                                      M,
                                      o.strides[0] / 4,
                                      x.n,
                                      x.kw,
                                      (const float *const *)x.ptr + at,
                                      (const float *)w[m].buf,
                                      held[m] == 2 ? (const float *)b[m].buf : NULL,
                                      (float *)o.buf + at * (o.strides[0] / 4)};
        at += rows;
    }
    if (ok && at != M)
        ok = 0; /* the segments must cover the rows */
    if (ok && ntasks) {
        if (K == 0)
            for (int i = 0; i < ntasks; i++)
                fill_bias((char *)mine[i].o, o.strides[0], mine[i].M, N, mine[i].bias);
        else
            run_tasks(mine, ntasks, threads);
    }
    for (Py_ssize_t m = 0; m < nmem; m++) {
        if (held[m]) {
            PyBuffer_Release(&w[m]);
            if (held[m] == 2)
                PyBuffer_Release(&b[m]);
        }
    }
    release_x(&x);
    PyBuffer_Release(&o);
    if (ok)
        Py_RETURN_TRUE;
    Py_RETURN_FALSE;
#endif
}

/* park(): the helper stops spinning and sleeps until the next two-thread call (the
 * runtime calls it when a run ends, so that nothing of acrobat's spins between runs). */
static PyObject *park(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
#ifdef ACROBAT_X86
    atomic_store_explicit(&parked, 1, memory_order_relaxed);
#endif
    Py_RETURN_NONE;
}

/* isa([name]) -> str: the tiles the products take, "avx512" or "avx2" ("" off this CPU);
 * with a name, switch to it first (ValueError where the CPU lacks it) */
static PyObject *isa(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
#ifdef ACROBAT_X86
    if (!have_avx2())
        return PyUnicode_FromString("");
    if (nargs == 1) {
        const char *want = PyUnicode_AsUTF8(args[0]);
        if (!want)
            return NULL;
        if (strcmp(want, "avx2") == 0)
            use512 = 0;
        else if (strcmp(want, "avx512") == 0 && have_avx512())
            use512 = 1;
        else {
            PyErr_Format(PyExc_ValueError, "isa %R: this CPU runs \"avx2\"%s", args[0],
                         have_avx512() ? " or \"avx512\"" : "");
            return NULL;
        }
    }
    return PyUnicode_FromString(use512 == 1 ? "avx512" : "avx2");
#else
    (void)args;
    (void)nargs;
    return PyUnicode_FromString("");
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

/* rowprog.c: the fused elementwise kernel */
PyObject *acrobat_rowprog(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* plan.c: the executor's row bookkeeping of a flush */
PyObject *acrobat_plan_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *acrobat_read_answers(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* flush.c: a flush of host kernels in one call */
PyObject *acrobat_run_flush(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* sched.c: the acrobat policy's leveling scheduler */
PyObject *acrobat_list_schedule(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* values.c: ADT values made and walked in C for the host program */
PyObject *acrobat_adt_maker(PyObject *self, PyObject *cls);

static PyMethodDef methods[] = {
    {"sgemm", (PyCFunction)(void (*)(void))sgemm, METH_FASTCALL,
     "sgemm(x, panels, out, bias[, threads]) -> bool: out = x @ W^T (+ bias), float32, "
     "few rows, on one thread or two"},
    {"sgemm_segs", (PyCFunction)(void (*)(void))sgemm_segs, METH_FASTCALL,
     "sgemm_segs(x, panels, out, biases, segs[, threads]) -> bool: a twin group's product, "
     "each member's rows by its weight"},
    {"rowprog", (PyCFunction)(void (*)(void))acrobat_rowprog, METH_FASTCALL,
     "rowprog(B, code, consts, arrays) -> bool: a chain of elementwise ops, row by row"},
    {"plan_rows", (PyCFunction)(void (*)(void))acrobat_plan_rows, METH_FASTCALL,
     "plan_rows(jobs, row_of, arena_of, OUT) -> list: a flush's records, output rows and "
     "input rows (plan.c)"},
    {"read_answers", (PyCFunction)(void (*)(void))acrobat_read_answers, METH_FASTCALL,
     "read_answers(arenas, ops, vids, row_of, arena_of, ARGMAX) -> list | None: a round of "
     "fiber reads answered from host arenas (plan.c)"},
    {"run_flush", (PyCFunction)(void (*)(void))acrobat_run_flush, METH_FASTCALL,
     "run_flush(batches, records, specs, row_of, arena_of, OUT, alloc, failed, sync) -> "
     "(bytes copied, kernel seconds) | None: a flush of host kernels (flush.c)"},
    {"list_schedule", (PyCFunction)(void (*)(void))acrobat_list_schedule, METH_FASTCALL,
     "list_schedule(records, table, KEY, OUT, STRIDE, batch, alloc) -> [batch] | None: the "
     "acrobat policy's leveled schedule of one pass (sched.c)"},
    {"adt_maker", acrobat_adt_maker, METH_O,
     "adt_maker(cls) -> maker: maker(ctor, fields) makes cls's value in C (values.c)"},
    {"park", park, METH_NOARGS, "the helper thread sleeps until the next two-thread call"},
    {"available", available, METH_NOARGS, "whether this CPU runs the AVX2/FMA kernel"},
    {"isa", (PyCFunction)(void (*)(void))isa, METH_FASTCALL,
     "isa([name]) -> str: the products' instruction set, \"avx512\" or \"avx2\"; with a "
     "name, switch to it"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_acrobat_native",
                                    "acrobat's native kernels", -1, methods};

PyMODINIT_FUNC PyInit__acrobat_native(void) { return PyModule_Create(&module); }
