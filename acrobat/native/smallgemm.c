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
 * Two threads: with ``threads`` = 2 a product is cut into pieces (blocks of its rows and
 * columns, ~PIECE_MACS each) that the calling thread and a helper thread of this module
 * (started on first use, one per process) share. Cutting rows or columns keeps every
 * output element's summation order, so the result is the same bit for bit on one thread
 * or two. A piece the helper holds too long (preempted by another process) is taken back
 * by the caller (see "tasks, pieces and the helper thread" below), and the helper keeps
 * off the caller's CPU. The helper
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

/* The rows one tile takes (6 AVX2, MR512 AVX-512). */
static Py_ssize_t tile_rows(void) { return use512 == 1 ? MR512 : 6; }

/* The rows of a block (whole tiles, at most BLOCK_BYTES of x of width K, at least a tile):
 * ``gemm_avx2`` streams the weight once per block, and ``cut_task`` cuts rows there. */
static Py_ssize_t row_block(Py_ssize_t K) {
    Py_ssize_t mr = tile_rows(), block = BLOCK_BYTES / (4 * (K > 0 ? K : 1));
    return block < mr ? mr : block - block % mr;
}

static void gemm_avx2(const task_t *t, Py_ssize_t m0, Py_ssize_t m1, Py_ssize_t n0,
                      Py_ssize_t n1) {
    Py_ssize_t K = t->K, ldo = t->ldo;
    const Py_ssize_t mrmax = tile_rows();
    const tile_fn *tiles = use512 == 1 ? TILESZ : TILES;
    Py_ssize_t block = row_block(K);
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
 * piece of the next one.
 *
 * Nor does the caller wait long for a piece the helper holds: the helper computes its
 * pieces into a scratch buffer of its own and copies one into ``out`` only after it wins
 * the piece's state (HELPER -> COMMITTING, a compare-and-swap). A caller that has run out
 * of pieces and whose helper has not finished within STEAL_GRACE_NS and twice the caller's
 * own time per piece (a helper preempted by
 * another process can be away for milliseconds) takes the helper's pieces back
 * (HELPER -> CALLER) and computes them itself; the helper, when it runs again, loses the
 * swap and drops its result. Every piece is computed by one tile code in one order, so
 * whoever computes it writes the same bits. A helper still computing a taken-back piece
 * reads that call's inputs: the call keeps them (``late``, its buffers held, see
 * ``call_t``) until the helper has left the job, and no two-thread job starts before then. */
#define MAX_TASKS 16
#define MAX_PIECES 256
#define PIECE_MACS 4e6 /* a piece's work: ~0.1-0.2 ms on one core (a late helper's loss) */
typedef struct {
    int task;
    Py_ssize_t m0, m1, n0, n1; /* rows [m0, m1) x columns [n0, n1) of the task's output */
} piece_t;

/* a piece's state: the job's number << 8 | one of these */
enum { P_FREE, P_HELPER, P_COMMITTING, P_DONE, P_CALLER };
#define PSTATE(job, st) ((unsigned long long)(job) << 8 | (st))

static task_t tasks[MAX_TASKS];
static piece_t pieces[MAX_PIECES];
static atomic_ullong state[MAX_PIECES];
static pthread_mutex_t call_mu = PTHREAD_MUTEX_INITIALIZER; /* one two-thread job at once */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;      /* guards sleeping, the wake */
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static atomic_long posted;  /* the number of the latest job */
static atomic_ullong next;  /* job number << 32 | pieces << 16 | the next piece to take */
static atomic_int finished; /* pieces of the latest job done */
static atomic_long active;  /* the job the helper is taking pieces of (0: none) */
static long late_job;       /* a job whose helper kept a taken-back piece (call_mu held) */
static int sleeping;
static atomic_int parked; /* 1: the helper sleeps at once after its job (park()) */
static pid_t helper_pid; /* the process that started the helper (0: none) */
static atomic_long stall_ns; /* tests: the helper sleeps this long in each piece it takes */
static atomic_int caller_cpu = -1; /* the CPU the latest job was posted from */
static float *scratch;       /* the helper's results before they are committed */
static size_t scratch_cap;   /* floats */

#define SPIN_NS 2000000L /* how long the helper spins for the next job before sleeping */
#define STEAL_GRACE_NS 20000L /* + twice the caller's time per piece: then it takes back */

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void run_task(const task_t *t) { gemm_avx2(t, 0, t->M, 0, t->N); }

/* The caller's piece: straight into out. */
static void run_piece(int i) {
    const piece_t *p = &pieces[i];
    gemm_avx2(&tasks[p->task], p->m0, p->m1, p->n0, p->n1);
}

/* The helper's piece ``i`` of job ``s``: computed into scratch (rows [m0, m1) of the
 * task's row pointers, its panels from n0 / 16: each element the same FMA chain as in
 * place), then copied into out if the piece is still the helper's. */
static void helper_piece(long s, int i) {
    const piece_t *p = &pieces[i];
    const task_t *t = &tasks[p->task];
    Py_ssize_t m0 = p->m0, n0 = p->n0;
    Py_ssize_t rows = p->m1 - m0, cols = p->n1 - n0;
    long stall = atomic_load_explicit(&stall_ns, memory_order_relaxed);
    if (stall > 0) {
        struct timespec d = {stall / 1000000000L, stall % 1000000000L};
        nanosleep(&d, NULL);
    }
    if (rows > 0 && cols > 0) {
        size_t need = (size_t)rows * (size_t)cols;
        if (need > scratch_cap) {
            float *grown = realloc(scratch, need * sizeof(float));
            if (grown == NULL)
                return; /* left as the helper's: the caller takes it back */
            scratch = grown;
            scratch_cap = need;
        }
        task_t u = *t;
        u.xp = t->xp + m0;
        u.w = t->w + (n0 / 16) * t->K * 16;
        u.bias = t->bias ? t->bias + n0 : NULL;
        u.o = scratch;
        u.ldo = cols;
        u.M = rows;
        u.N = cols;
        gemm_avx2(&u, 0, rows, 0, cols);
    }
    unsigned long long held = PSTATE(s, P_HELPER);
    if (!atomic_compare_exchange_strong(&state[i], &held, PSTATE(s, P_COMMITTING)))
        return; /* taken back: the caller computed it */
    for (Py_ssize_t m = 0; m < rows; m++)
        memcpy(t->o + (m0 + m) * t->ldo + n0, scratch + m * cols, sizeof(float) * (size_t)cols);
    atomic_store(&state[i], PSTATE(s, P_DONE));
    atomic_fetch_add_explicit(&finished, 1, memory_order_release);
}

/* The next untaken piece of job ``s``, or -1. */
static int claim(long s) {
    for (;;) {
        unsigned long long v = atomic_load(&next);
        int piece = (int)(v & 0xffff), count = (int)((v >> 16) & 0xffff);
        if ((long)(v >> 32) != (s & 0xffffffffL) || piece >= count)
            return -1;
        if (atomic_compare_exchange_weak(&next, &v, v + 1))
            return piece;
    }
}

/* The helper leaves the CPU its caller runs on: two threads sharing one CPU take turns
 * instead of working side by side, and a neighbour holding the other CPU (one busy
 * process) makes the scheduler put them there (a woken thread goes to its waker's CPU).
 * It keeps to the process's CPUs but that one, until the caller is found on another. */
static void leave_caller_cpu(void) {
#ifdef __linux__
    int c = atomic_load_explicit(&caller_cpu, memory_order_relaxed);
    if (c < 0 || sched_getcpu() != c)
        return;
    cpu_set_t set;
    if (sched_getaffinity(getpid(), sizeof set, &set) != 0 || !CPU_ISSET(c, &set))
        return;
    CPU_CLR(c, &set);
    if (CPU_COUNT(&set) > 0)
        sched_setaffinity(0, sizeof set, &set); /* this thread; it moves at once */
#endif
}

/* The helper: take and run pieces of job ``s`` until none is left. ``active`` says it
 * may be reading the job's inputs (set before its first claim, cleared after its last
 * piece). */
static void helper_pieces(long s) {
    atomic_store(&active, s);
    for (int i; (i = claim(s)) >= 0;) {
        unsigned long long free_ = PSTATE(s, P_FREE);
        if (atomic_compare_exchange_strong(&state[i], &free_, PSTATE(s, P_HELPER)))
            helper_piece(s, i);
    }
    atomic_store(&active, 0);
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
                    /* a thread woken beside its waker shares its CPU: move off it rather
                     * than spin in the caller's way */
                    leave_caller_cpu();
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
        leave_caller_cpu();
        helper_pieces(s);
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
    atomic_store(&active, 0); /* a parent's helper is not here to leave its job */
    late_job = 0;
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

/* Cut task ``i`` into about ``want`` pieces (at least one, at most ``room``), appended at
 * ``pieces[n]``; returns the new count. Rows go first in the blocks ``gemm_avx2`` streams
 * the weight once for (so a piece of rows costs no extra pass over the weight), then
 * columns in panels of 16, then rows again in smaller groups (whole tiles) when the
 * columns are too few. Where the output is cut, each element is still the same chain of
 * FMAs, so the pieces give the bits of the whole. */
static int cut_task(int i, int want, int room, int n) {
    const task_t *t = &tasks[i];
    Py_ssize_t mr = tile_rows(), block = row_block(t->K);
    Py_ssize_t tiles = (t->M + mr - 1) / mr, panels = (t->N + 15) / 16;
    if (want > room)
        want = room;
    if (want < 1)
        want = 1;
    Py_ssize_t nr = (t->M + block - 1) / block, nc = 1;
    if (nr >= want) {
        nr = want;
    } else {
        nc = (want + nr - 1) / nr;
        if (nc > panels)
            nc = panels;
        if (nr * nc < want)
            nr = (want + nc - 1) / nc;
        if (nr > tiles)
            nr = tiles;
        while (nr * nc > room) { /* never past the room left */
            if (nc > 1)
                nc--;
            else
                nr--;
        }
    }
    if (nr < 1)
        nr = 1;
    if (nc < 1)
        nc = 1;
    for (Py_ssize_t r = 0; r < nr; r++) {
        Py_ssize_t m0 = (tiles * r / nr) * mr, m1 = (tiles * (r + 1) / nr) * mr;
        for (Py_ssize_t c = 0; c < nc; c++) {
            Py_ssize_t n0 = (panels * c / nc) * 16, n1 = (panels * (c + 1) / nc) * 16;
            pieces[n++] = (piece_t){i, m0 < t->M ? m0 : t->M, m1 < t->M ? m1 : t->M,
                                    n0 < t->N ? n0 : t->N, n1 < t->N ? n1 : t->N};
        }
    }
    return n;
}

/* Take back the pieces of job ``s`` the helper holds (or claimed and has not marked) and
 * compute them; returns how many. */
static int take_back(long s, int count) {
    int n = 0;
    for (int i = 0; i < count; i++) {
        unsigned long long v = atomic_load(&state[i]);
        if ((v == PSTATE(s, P_FREE) || v == PSTATE(s, P_HELPER)) &&
            atomic_compare_exchange_strong(&state[i], &v, PSTATE(s, P_CALLER))) {
            run_piece(i);
            atomic_fetch_add_explicit(&finished, 1, memory_order_release);
            n++;
        }
    }
    return n;
}

/* Run the ``ntasks`` tasks ``mine`` (1..MAX_TASKS) on two threads; 0 (nothing done) when
 * the helper is taken (by another thread's call, or still inside a job whose piece was
 * taken back) or cannot start. ``*late`` = the job's number when a piece was taken back
 * from a helper that may still be computing it (its inputs must outlive that), else 0. */
static int run_two(const task_t *mine, int ntasks, double total_macs, long *late) {
    *late = 0;
    if (pthread_mutex_trylock(&call_mu) != 0)
        return 0;
    if (!helper_ready() || (late_job != 0 && atomic_load(&active) == late_job)) {
        pthread_mutex_unlock(&call_mu);
        return 0;
    }
    late_job = 0;
    memcpy(tasks, mine, sizeof(task_t) * (size_t)ntasks);
    /* pieces of about PIECE_MACS (at least four), each task's in proportion to its
     * share of the work, at least one a task */
    double total = total_macs / PIECE_MACS;
    total = total < 4 ? 4 : total > MAX_PIECES ? MAX_PIECES : total;
    int count = 0;
    for (int i = 0; i < ntasks; i++) {
        const task_t *t = &tasks[i];
        double share = total_macs > 0 ? (double)t->M * t->N * t->K / total_macs : 1.0;
        count = cut_task(i, (int)(share * total + 0.5), MAX_PIECES - count - (ntasks - 1 - i),
                         count);
    }
    long s = atomic_load_explicit(&posted, memory_order_relaxed) + 1;
#ifdef __linux__
    atomic_store_explicit(&caller_cpu, sched_getcpu(), memory_order_relaxed);
#endif
    for (int i = 0; i < count; i++)
        atomic_store_explicit(&state[i], PSTATE(s, P_FREE), memory_order_relaxed);
    atomic_store_explicit(&finished, 0, memory_order_relaxed);
    atomic_store(&next, ((unsigned long long)(s & 0xffffffffL) << 32) |
                            ((unsigned long long)count << 16));
    atomic_store_explicit(&parked, 0, memory_order_relaxed);
    pthread_mutex_lock(&mu);
    atomic_store_explicit(&posted, s, memory_order_release);
    if (sleeping)
        pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    long t0 = now_ns();
    int ran = 0;
    for (int i; (i = claim(s)) >= 0; ran++) {
        atomic_store(&state[i], PSTATE(s, P_CALLER));
        run_piece(i);
        atomic_fetch_add_explicit(&finished, 1, memory_order_release);
    }
    long t1 = now_ns(), grace = STEAL_GRACE_NS + (ran ? 2 * (t1 - t0) / ran : 0);
    int tried = 0, took = 0, spins = 0;
    while (atomic_load_explicit(&finished, memory_order_acquire) != count) {
        _mm_pause();
        if (++spins % 256 == 0) {
            if (!tried && now_ns() - t1 > grace) {
                tried = 1;
                took = take_back(s, count);
            } else {
                sched_yield(); /* the helper may be waiting for this core */
            }
        }
    }
    /* a helper that computed none of the taken-back pieces may still be computing one */
    if (took && atomic_load(&active) == s)
        *late = late_job = s;
    pthread_mutex_unlock(&call_mu);
    return 1;
}

static int have_avx2(void) {
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        /* ACROBAT_NATIVE_ISA=portable: as on a CPU without AVX2 (products on NumPy) */
        const char *isa = getenv("ACROBAT_NATIVE_ISA");
        known = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                !(isa && strcmp(isa, "portable") == 0);
        if (use512 < 0) /* AVX-512 where the CPU has it, unless ACROBAT_NATIVE_ISA=avx2 */
            use512 = known && have_avx512() && !(isa && strcmp(isa, "avx2") == 0);
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

/* What one call holds: x's views and row pointers, out's view, the weights' and biases'
 * views (``held[m]``: 1 the weight, 2 the weight and the bias). A two-thread call whose
 * helper may still read its inputs (``run_two``'s ``late``) is kept on ``late_calls``,
 * everything held, until the helper has left that job (``reap``, the GIL held). */
#ifdef ACROBAT_X86
typedef struct call {
    xrows_t x;
    Py_buffer o;
    int has_o, nw;
    Py_buffer w[MAX_TASKS], b[MAX_TASKS];
    int held[MAX_TASKS];
    long job;
    struct call *next;
} call_t;

static call_t *late_calls; /* the GIL guards this list and ``spare`` */
static call_t *spare;

static call_t *new_call(void) {
    call_t *c = spare ? spare : malloc(sizeof(call_t));
    spare = NULL;
    if (c) {
        c->x.held = 0;
        c->x.ptr = NULL;
        c->has_o = c->nw = 0;
        c->next = NULL;
    }
    return c;
}

static void release_call(call_t *c) {
    release_x(&c->x);
    if (c->has_o)
        PyBuffer_Release(&c->o);
    for (int m = 0; m < c->nw; m++) {
        if (c->held[m])
            PyBuffer_Release(&c->w[m]);
        if (c->held[m] == 2)
            PyBuffer_Release(&c->b[m]);
    }
    c->has_o = c->nw = 0;
}

/* Release the late calls whose helper has left their job (all of them in a process the
 * helper was not started in: a fork copies no threads). */
static void reap(void) {
    if (late_calls == NULL)
        return; /* the usual case, on every call: no getpid() system call for nothing */
    long at = atomic_load(&active);
    pid_t me = getpid();
    for (call_t **p = &late_calls; *p;) {
        call_t *c = *p;
        if (helper_pid != me || at != c->job) {
            *p = c->next;
            release_call(c);
            free(c);
        } else {
            p = &c->next;
        }
    }
}

/* The call is over: release what it holds, or keep it while a late helper may read it. */
static void end_call(call_t *c, long late) {
    if (late) {
        c->job = late;
        c->next = late_calls;
        late_calls = c;
        return;
    }
    release_call(c);
    if (spare == NULL)
        spare = c;
    else
        free(c);
}
#endif /* ACROBAT_X86 */

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
/* Run the tasks ``mine`` (K > 0 in each) on ``threads`` threads, the GIL released;
 * returns run_two's ``late`` (0 on one thread). */
static long run_tasks(const task_t *mine, int ntasks, long threads) {
    double macs = 0;
    long late = 0;
    for (int i = 0; i < ntasks; i++)
        macs += (double)mine[i].M * mine[i].N * mine[i].K;
    Py_BEGIN_ALLOW_THREADS
    if (threads < 2 || !run_two(mine, ntasks, macs, &late))
        for (int i = 0; i < ntasks; i++)
            run_task(&mine[i]);
    Py_END_ALLOW_THREADS
    return late;
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
    reap();
    call_t *c = new_call();
    if (c == NULL)
        return PyErr_NoMemory();
    int ok = get_rows(args[0], args[2], &c->x, &c->o) == 0;
    c->has_o = ok;
    Py_ssize_t M = c->x.M, K = c->x.K, N = ok ? c->o.shape[1] : 0;
    int has_bias = args[3] != Py_None;
    if (ok && get_weight(args[1], args[3], K, N, &c->w[0], &c->b[0]) < 0)
        ok = 0;
    else if (ok) {
        c->held[0] = has_bias ? 2 : 1;
        c->nw = 1;
        ok = !out_overlaps_weight(&c->o, &c->w[0]);
    }
    long late = 0;
    if (ok && M > 0 && N > 0) {
        const float *bb = has_bias ? (const float *)c->b[0].buf : NULL;
        if (K == 0) {
            fill_bias((char *)c->o.buf, c->o.strides[0], M, N, bb);
        } else {
            task_t t = {M,           N,    K, M, c->o.strides[0] / 4, c->x.n, c->x.kw, c->x.ptr,
                        (const float *)c->w[0].buf, bb, (float *)c->o.buf};
            late = run_tasks(&t, 1, threads);
        }
    }
    end_call(c, late);
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
    reap();
    call_t *c = new_call();
    if (c == NULL)
        return PyErr_NoMemory();
    if (get_rows(args[0], args[2], &c->x, &c->o) < 0) {
        end_call(c, 0);
        Py_RETURN_FALSE;
    }
    c->has_o = 1;
    c->nw = (int)nmem;
    for (Py_ssize_t m = 0; m < nmem; m++)
        c->held[m] = 0;
    Py_ssize_t M = c->x.M, K = c->x.K, N = c->o.shape[1];
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
        if (!c->held[m]) {
            PyObject *bobj = biases == Py_None ? Py_None : PyTuple_GET_ITEM(biases, m);
            if (get_weight(PyTuple_GET_ITEM(panels, m), bobj, K, N, &c->w[m], &c->b[m]) < 0) {
                ok = 0;
                break;
            }
            c->held[m] = bobj == Py_None ? 1 : 2;
            if (out_overlaps_weight(&c->o, &c->w[m])) {
                ok = 0;
                break;
            }
        }
        if (rows > 0 && N > 0) /* checked first, computed once everything is checked */
            mine[ntasks++] = (task_t){rows,
                                      N,
                                      K,
                                      M,
                                      c->o.strides[0] / 4,
                                      c->x.n,
                                      c->x.kw,
                                      (const float *const *)c->x.ptr + at,
                                      (const float *)c->w[m].buf,
                                      c->held[m] == 2 ? (const float *)c->b[m].buf : NULL,
                                      (float *)c->o.buf + at * (c->o.strides[0] / 4)};
        at += rows;
    }
    if (ok && at != M)
        ok = 0; /* the segments must cover the rows */
    long late = 0;
    if (ok && ntasks) {
        if (K == 0)
            for (int i = 0; i < ntasks; i++)
                fill_bias((char *)mine[i].o, c->o.strides[0], mine[i].M, N, mine[i].bias);
        else
            late = run_tasks(mine, ntasks, threads);
    }
    end_call(c, late);
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
    reap();
#endif
    Py_RETURN_NONE;
}

/* Tests: _stall_helper(ns) makes the helper sleep ``ns`` in each piece it takes (0: not),
 * so that the caller takes pieces back; _late_calls() -> the calls still kept for a late
 * helper, after releasing those it has left. */
static PyObject *stall_helper(PyObject *self, PyObject *arg) {
    (void)self;
    long ns = PyLong_AsLong(arg);
    if (ns == -1 && PyErr_Occurred())
        return NULL;
#ifdef ACROBAT_X86
    atomic_store(&stall_ns, ns < 0 ? 0 : ns);
#endif
    Py_RETURN_NONE;
}

static PyObject *late_count(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    long n = 0;
#ifdef ACROBAT_X86
    reap();
    for (call_t *c = late_calls; c; c = c->next)
        n++;
#endif
    return PyLong_FromLong(n);
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
PyObject *acrobat_schedule_flush(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *acrobat_fiber_flush(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *acrobat_new_int64s(PyObject *self, PyObject *shape);
PyObject *acrobat_read_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *acrobat_tensors_fit(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *acrobat_set_cancel(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
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
    {"schedule_flush", (PyCFunction)(void (*)(void))acrobat_schedule_flush, METH_FASTCALL,
     "schedule_flush(records, table, KEY, OUT, STRIDE, specs, row_of, arena_of, alloc, "
     "failed, sync) -> (bytes copied, kernel seconds, launches, schedule seconds) | None: "
     "list_schedule and "
     "run_flush in one call, no Python object per batch (flush.c)"},
    {"fiber_flush", (PyCFunction)(void (*)(void))acrobat_fiber_flush, METH_FASTCALL,
     "fiber_flush(take, take_args, next_value, executor, blank, table, KEY, OUT, STRIDE, "
     "specs, alloc, sync, slow, read_answers, reads_python, ARGMAX, mem_limit, max_out, "
     "schedule) -> "
     "FiberFlush: a compiled fiber program's flushes and reads without Python (flush.c)"},
    {"new_int64s", acrobat_new_int64s, METH_O,
     "new_int64s(shape) -> numpy.empty(shape, numpy.int64), called from C (flush.c)"},
    {"read_rows", (PyCFunction)(void (*)(void))acrobat_read_rows, METH_FASTCALL,
     "read_rows(arenas, heads, row_of, arena_of) -> list | None: the tensors of lists of "
     "value ids, flattened, as views of one copy of their rows (flush.c)"},
    {"tensors_fit", (PyCFunction)(void (*)(void))acrobat_tensors_fit, METH_FASTCALL,
     "tensors_fit(instances, specs, one) -> int: the entry check of tensor parameters, -1 "
     "when every instance fits, else the first index it cannot vouch for (flush.c)"},
    {"set_cancel", (PyCFunction)(void (*)(void))acrobat_set_cancel, METH_FASTCALL,
     "set_cancel(flag, error) | set_cancel(None): the running run's cancel flag, checked "
     "before each launch of a flush (flush.c)"},
    {"adt_maker", acrobat_adt_maker, METH_O,
     "adt_maker(cls) -> maker: maker(ctor, fields) makes cls's value in C (values.c)"},
    {"park", park, METH_NOARGS, "the helper thread sleeps until the next two-thread call"},
    {"_stall_helper", stall_helper, METH_O,
     "tests: the helper sleeps this many ns in each piece it takes (0: not)"},
    {"_late_calls", late_count, METH_NOARGS,
     "tests: calls kept for a helper still computing a piece taken back from it"},
    {"available", available, METH_NOARGS, "whether this CPU runs the AVX2/FMA kernel"},
    {"isa", (PyCFunction)(void (*)(void))isa, METH_FASTCALL,
     "isa([name]) -> str: the products' instruction set, \"avx512\" or \"avx2\"; with a "
     "name, switch to it"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_acrobat_native",
                                    "acrobat's native kernels", -1, methods};

/* setup.py defines it when it builds the installed module: the SHA-256 of the sources it
   was built from, which acrobat.native compares with the sources beside it */
#ifndef ACROBAT_SOURCES_SHA
#define ACROBAT_SOURCES_SHA ""
#endif

PyMODINIT_FUNC PyInit__acrobat_native(void) {
    PyObject *mod = PyModule_Create(&module);
    if (mod != NULL && PyModule_AddStringConstant(mod, "sources_sha", ACROBAT_SOURCES_SHA) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
