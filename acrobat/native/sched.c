/* acrobat's leveling scheduler in C: the acrobat policy's schedule of one pass.
 *
 * The same algorithm, step for step, as acrobat/runtime/leveling.py's _list_schedule
 * (whose module docstring describes it): the critical-path list schedule of each phase,
 * or the key buckets where those launch no more batches. That function runs compiled by
 * numba where this module is not available; here it also takes the records as the DFG
 * holds them (no concatenation first) and returns the batches themselves, so that a
 * fiber program's hundred small passes a run pay no per-call dispatch or allocation of
 * a dozen arrays each.
 *
 * list_schedule(records, table, KEY, OUT, STRIDE, batch, alloc) -> [batch] | None
 *   records  per kernel id, its rows: int64 [N_k, W_k], C-contiguous (N_k may be 0)
 *   table    int64 [kernels, 3 + wide]: (row width, outputs, batched arguments, their
 *            columns...) per kernel id (leveling._Tables)
 *   KEY, OUT the record columns of a node's depth key and first output value id
 *   STRIDE   keys are phase * STRIDE + depth
 *   batch    the Batch type (a tuple subclass of three: kernel, nodes, level)
 *   alloc    alloc(n) -> a new int64 NumPy array of n items
 * Returns the batches in launch order: batch(kernel, local rows ascending (a view of one
 * int64 array), level). None (nothing done) for anything it does not take: records that
 * are not int64 C-contiguous of their kernel's width, a table too narrow for a kernel's
 * columns, value ids spread far wider than the pass. The caller then runs the Python
 * (numba) function, which gives the same schedule. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "batchplan.h"

typedef int64_t i64;
_Static_assert(sizeof(void *) <= sizeof(i64), "a scratch array of i64 holds row pointers");

static i64 floordiv(i64 a, i64 b) {
    i64 q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q -= 1;
    return q;
}

/* a >> s rounded down (floor division by 2^s), negative a included */
static i64 floor_shift(i64 a, int s) { return a >= 0 ? a >> s : -((-(a + 1)) >> s) - 1; }

static int cmp_i64(const void *a, const void *b) {
    i64 x = *(const i64 *)a, y = *(const i64 *)b;
    return (x > y) - (x < y);
}

#define SMALL 32

/* ascending: insertion sort for a few, else qsort */
static void sort_i64(i64 *a, i64 n) {
    if (n > SMALL) {
        qsort(a, (size_t)n, sizeof(i64), cmp_i64);
        return;
    }
    for (i64 i = 1; i < n; i++) {
        i64 v = a[i], j = i - 1;
        while (j >= 0 && a[j] > v) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
}

/* a stable order of the nodes by phase (qsort on (phase, node)) */
static const i64 *sort_phase;
static int cmp_by_phase(const void *a, const void *b) {
    i64 x = *(const i64 *)a, y = *(const i64 *)b;
    i64 px = sort_phase[x], py = sort_phase[y];
    if (px != py)
        return (px > py) - (px < py);
    return (x > y) - (x < y);
}

static i64 lower_index(const i64 *a, i64 n, i64 v) { /* searchsorted(a, v), left */
    i64 lo = 0, hi = n;
    while (lo < hi) {
        i64 mid = (lo + hi) / 2;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* a buffer of native int64s ('l' or 'q', no byte order given) */
static int is_i64(const Py_buffer *b) {
    const char *f = b->format;
    return b->itemsize == 8 && f && (f[0] == 'l' || f[0] == 'q') && f[1] == 0;
}

/* Scratch arrays kept from call to call (a pass's dozen arrays of its nodes, fresh from
 * malloc each call, cost a page fault per page: 16% of a 22,000-node pass). Only
 * schedule() and the loop that prepares it use them, with the GIL held and no call into
 * Python between, so one set serves every caller. Given back when they grow past
 * SCRATCH_KEEP bytes in all. */
enum {
    S_KEY, S_OUT, S_PHASE, S_WAITING, S_HEIGHT, S_NXT, S_CELL, S_DEG, S_HEAD, S_CNT, S_HMAX,
    S_PRODUCER, S_USE, S_CONS, S_FILL, S_BY_PHASE, S_RANK, S_COUNT, S_UK, S_START_OF,
    S_KG, S_LG, S_ROWP, S_BOUNDS, S_BKERNEL, S_BLEVEL, S_MARK, N_SCRATCH
};
#define SCRATCH_KEEP ((size_t)64 << 20)
static i64 *scratch_p[N_SCRATCH];
static size_t scratch_cap[N_SCRATCH];

/* slot's array of at least m items (zeroed when zero), or NULL when out of memory */
static i64 *scratch(int slot, i64 m, int zero) {
    size_t want = (size_t)(m > 0 ? m : 1);
    if (scratch_cap[slot] < want) {
        size_t cap = want + want / 4;
        free(scratch_p[slot]);
        scratch_p[slot] = (i64 *)malloc(cap * sizeof(i64));
        scratch_cap[slot] = scratch_p[slot] ? cap : 0;
        if (!scratch_p[slot])
            return NULL;
    }
    if (zero)
        memset(scratch_p[slot], 0, want * sizeof(i64));
    return scratch_p[slot];
}

static void scratch_trim(void) {
    size_t total = 0;
    for (int i = 0; i < N_SCRATCH; i++)
        total += scratch_cap[i] * sizeof(i64);
    if (total <= SCRATCH_KEEP)
        return;
    for (int i = 0; i < N_SCRATCH; i++) {
        free(scratch_p[i]);
        scratch_p[i] = NULL;
        scratch_cap[i] = 0;
    }
}

/* a batch's local rows (distinct) ascending: insertion sort for a few, marks over their
 * range where it is dense, else a radix sort; -1 when out of memory */
static int sort_rows(i64 *a, i64 n) {
    if (n <= SMALL) {
        sort_i64(a, n);
        return 0;
    }
    i64 lo = a[0], hi = a[0];
    for (i64 i = 1; i < n; i++) {
        if (a[i] < lo)
            lo = a[i];
        if (a[i] > hi)
            hi = a[i];
    }
    i64 range = hi - lo + 1;
    if (range > 8 * n) { /* sparse: radix sort of (row - lo), a byte a pass */
        i64 *tmp = scratch(S_MARK, n, 0);
        if (!tmp)
            return -1;
        i64 *src = a, *dst = tmp;
        for (int shift = 0; shift < 64 && ((range - 1) >> shift) > 0; shift += 8) {
            i64 count[257] = {0};
            for (i64 i = 0; i < n; i++)
                count[(((src[i] - lo) >> shift) & 255) + 1]++;
            for (int d = 0; d < 256; d++)
                count[d + 1] += count[d];
            for (i64 i = 0; i < n; i++)
                dst[count[((src[i] - lo) >> shift) & 255]++] = src[i];
            i64 *t = src;
            src = dst;
            dst = t;
        }
        if (src != a)
            memcpy(a, src, (size_t)n * sizeof(i64));
        return 0;
    }
    unsigned char *mark = (unsigned char *)scratch(S_MARK, range / 8 + 1, 1);
    if (!mark)
        return -1;
    for (i64 i = 0; i < n; i++)
        mark[a[i] - lo] = 1;
    i64 j = 0;
    for (i64 v = 0; v < range; v++)
        if (mark[v])
            a[j++] = lo + v;
    return 0;
}

/* the schedule: fills local (n) and the batches (kernel, level, bounds); returns nb, or
 * -1 on a failed allocation */
static i64 schedule(i64 n, i64 n_k, const i64 *kg, const i64 *lg, const i64 *const *rowp,
                    const i64 *table, i64 tw, i64 KEYc, i64 OUTc, i64 STRIDE, i64 *local,
                    i64 *bounds, i64 *bkernel, i64 *blevel) {
    i64 *key = NULL, *out = NULL, *phase = NULL, *waiting = NULL, *height = NULL;
    i64 *nxt = NULL, *cell = NULL, *deg = NULL, *head = NULL, *cnt = NULL, *hmax = NULL;
    i64 *producer = NULL, *use = NULL, *cons = NULL, *fill = NULL, *by_phase = NULL;
    i64 *rank = NULL, *count = NULL, *uk = NULL, *start_of = NULL;
    i64 nb = -1;
    i64 g, k;
#define ALLOC(p, slot, m, zero) \
    if (!((p) = scratch((slot), (m), (zero)))) goto done
    ALLOC(key, S_KEY, n, 0);
    ALLOC(out, S_OUT, n, 0);
    ALLOC(phase, S_PHASE, n, 0);
    ALLOC(waiting, S_WAITING, n, 1);
    ALLOC(height, S_HEIGHT, n, 1);
    ALLOC(nxt, S_NXT, n, 0);
    ALLOC(cell, S_CELL, n, 0);
    ALLOC(deg, S_DEG, n + 1, 1);
    ALLOC(head, S_HEAD, n_k, 0);
    ALLOC(cnt, S_CNT, n_k, 1);
    ALLOC(hmax, S_HMAX, n_k, 0);
    ALLOC(by_phase, S_BY_PHASE, n, 0);
    for (k = 0; k < n_k; k++) {
        head[k] = -1;
        hmax[k] = -1;
    }
    int shift = -1; /* STRIDE a power of two (it is): a shift, not a division */
    if ((STRIDE & (STRIDE - 1)) == 0)
        for (shift = 0; ((i64)1 << shift) != STRIDE; shift++)
            ;
    i64 lo = (i64)1 << 62, hi = -1;
    for (g = 0; g < n; g++) {
        const i64 *row = rowp[g];
        key[g] = row[KEYc];
        phase[g] = shift >= 0 ? floor_shift(key[g], shift) : floordiv(key[g], STRIDE);
        out[g] = row[OUTc];
        i64 last = table[kg[g] * tw + 1] - 1;
        if (out[g] < lo)
            lo = out[g];
        if (out[g] + last > hi)
            hi = out[g] + last;
    }
    /* the producer of every value this pass makes */
    ALLOC(producer, S_PRODUCER, hi - lo + 1, 0);
    for (i64 v = 0; v < hi - lo + 1; v++)
        producer[v] = -1;
    for (g = 0; g < n; g++)
        for (i64 j = 0; j < table[kg[g] * tw + 1]; j++)
            producer[out[g] + j - lo] = g;
    /* edges producer -> consumer as a CSR of consumers (one entry per argument use) */
    i64 n_uses = 0;
    for (g = 0; g < n; g++)
        n_uses += table[kg[g] * tw + 2];
    ALLOC(use, S_USE, n_uses, 0);
    i64 u = 0, n_edges = 0;
    for (g = 0; g < n; g++) {
        const i64 *t = table + kg[g] * tw;
        for (i64 a = 0; a < t[2]; a++) {
            i64 v = rowp[g][t[3 + a]];
            i64 p = -1;
            if (lo <= v && v <= hi) {
                p = producer[v - lo];
                if (p >= 0) {
                    deg[p + 1] += 1;
                    waiting[g] += 1;
                    n_edges += 1;
                }
            }
            use[u++] = p;
        }
    }
    for (g = 0; g < n; g++)
        deg[g + 1] += deg[g];
    ALLOC(cons, S_CONS, n_edges, 0);
    ALLOC(fill, S_FILL, n, 0);
    memcpy(fill, deg, (size_t)n * sizeof(i64));
    u = 0;
    for (g = 0; g < n; g++) {
        i64 na = table[kg[g] * tw + 2];
        for (i64 a = 0; a < na; a++) {
            i64 p = use[u++];
            if (p >= 0)
                cons[fill[p]++] = g;
        }
    }
    /* heights: the longest chain of same-phase consumers below each node; value ids grow
     * in recording order, so walking the ids down visits consumers before producers */
    for (i64 v = hi; v >= lo; v--) {
        g = producer[v - lo];
        if (g < 0 || out[g] != v)
            continue;
        i64 best = 0;
        for (i64 e = deg[g]; e < deg[g + 1]; e++) {
            i64 c = cons[e];
            if (phase[c] == phase[g] && height[c] + 1 > best)
                best = height[c] + 1;
        }
        height[g] = best;
    }
    /* the nodes phase by phase, each phase's in segment order */
    i64 pmin = phase[0], pmax = phase[0];
    for (g = 1; g < n; g++) {
        if (phase[g] < pmin)
            pmin = phase[g];
        if (phase[g] > pmax)
            pmax = phase[g];
    }
    i64 span = pmax - pmin + 1;
    if (span == 1) {
        for (g = 0; g < n; g++)
            by_phase[g] = g;
    } else if (span <= 2 * n) {
        ALLOC(start_of, S_START_OF, span + 1, 1);
        for (g = 0; g < n; g++)
            start_of[phase[g] - pmin + 1] += 1;
        for (i64 p = 0; p < span; p++)
            start_of[p + 1] += start_of[p];
        for (g = 0; g < n; g++)
            by_phase[start_of[phase[g] - pmin]++] = g;
    } else {
        for (g = 0; g < n; g++)
            by_phase[g] = g;
        sort_phase = phase; /* under the GIL: one caller at a time */
        qsort(by_phase, (size_t)n, sizeof(i64), cmp_by_phase);
    }
    /* list scheduling, phase by phase */
    nb = 0;
    bounds[0] = 0;
    i64 pos = 0, s = 0;
    while (s < n) {
        i64 ph = phase[by_phase[s]];
        i64 e_ = s;
        while (e_ < n && phase[by_phase[e_]] == ph)
            e_++;
        i64 left = e_ - s;
        for (i64 t = s; t < e_; t++) {
            g = by_phase[t];
            if (waiting[g] == 0) {
                k = kg[g];
                nxt[g] = head[k];
                head[k] = g;
                cnt[k] += 1;
                if (height[g] > hmax[k])
                    hmax[k] = height[g];
            }
        }
        while (left > 0) {
            i64 pick = -1;
            for (k = 0; k < n_k; k++)
                if (cnt[k] > 0 && (pick < 0 || hmax[k] > hmax[pick]))
                    pick = k;
            if (pick < 0) { /* a cycle (not a DFG): no schedule from here */
                nb = -2;
                goto done;
            }
            g = head[pick];
            head[pick] = -1;
            cnt[pick] = 0;
            hmax[pick] = -1;
            i64 start = pos, lev = key[g];
            while (g >= 0) {
                local[pos++] = lg[g];
                if (key[g] < lev)
                    lev = key[g];
                i64 nx = nxt[g];
                for (i64 e = deg[g]; e < deg[g + 1]; e++) {
                    i64 c = cons[e];
                    waiting[c] -= 1;
                    if (waiting[c] == 0 && phase[c] == ph) {
                        i64 kc = kg[c];
                        nxt[c] = head[kc];
                        head[kc] = c;
                        cnt[kc] += 1;
                        if (height[c] > hmax[kc])
                            hmax[kc] = height[c];
                    }
                }
                g = nx;
            }
            left -= pos - start;
            int down = 1, up = 1;
            for (i64 t = start + 1; t < pos; t++) {
                if (local[t] > local[t - 1])
                    down = 0;
                else
                    up = 0;
            }
            if (down) {
                for (i64 a = start, b = pos - 1; a < b; a++, b--) {
                    i64 tmp = local[a];
                    local[a] = local[b];
                    local[b] = tmp;
                }
            } else if (!up && sort_rows(local + start, pos - start) < 0) {
                nb = -1;
                goto done;
            }
            bkernel[nb] = pick;
            blevel[nb] = lev;
            nb++;
            bounds[nb] = pos;
        }
        s = e_;
    }
    /* the key buckets and how many there are: a stable counting sort by (key, kernel) */
    i64 first = 0;
    s = 0;
    while (s < n) {
        i64 ph = phase[by_phase[s]];
        i64 e_ = s, kmin = key[by_phase[s]], kmax = kmin;
        while (e_ < n && phase[by_phase[e_]] == ph) {
            i64 kk = key[by_phase[e_]];
            if (kk < kmin)
                kmin = kk;
            if (kk > kmax)
                kmax = kk;
            e_++;
        }
        if (kmax - kmin <= 4 * (e_ - s) + 64) { /* depths close together: rank by counting */
                    rank = NULL;
            ALLOC(rank, S_RANK, kmax - kmin + 2, 1);
            for (i64 t = s; t < e_; t++)
                rank[key[by_phase[t]] - kmin + 1] = 1;
            for (i64 d = 0; d < kmax - kmin + 1; d++)
                rank[d + 1] += rank[d];
            for (i64 t = s; t < e_; t++) {
                g = by_phase[t];
                cell[g] = first + rank[key[g] - kmin] * n_k + kg[g];
            }
            first += rank[kmax - kmin + 1] * n_k;
        } else { /* far apart: rank by sorting the distinct keys */
                    uk = NULL;
            ALLOC(uk, S_UK, e_ - s, 0);
            i64 m = 0;
            for (i64 t = s; t < e_ && m <= SMALL; t++) { /* usually a few: collect them */
                i64 kk = key[by_phase[t]], j = 0;
                while (j < m && uk[j] != kk)
                    j++;
                if (j == m)
                    uk[m++] = kk;
            }
            if (m > SMALL) { /* many: sort them all */
                for (i64 t = s; t < e_; t++)
                    uk[t - s] = key[by_phase[t]];
                m = e_ - s;
            }
            sort_i64(uk, m);
            i64 d = 0;
            for (i64 t = 0; t < m; t++)
                if (t == 0 || uk[t] != uk[d - 1])
                    uk[d++] = uk[t];
            m = d;
            for (i64 t = s; t < e_; t++) {
                g = by_phase[t];
                cell[g] = first + lower_index(uk, m, key[g]) * n_k + kg[g];
            }
            first += m * n_k;
        }
        s = e_;
    }
    ALLOC(count, S_COUNT, first + 1, 1);
    for (g = 0; g < n; g++)
        count[cell[g] + 1] += 1;
    i64 buckets = 0;
    for (i64 c = 1; c <= first; c++)
        if (count[c] > 0)
            buckets++;
    if (!(nb < buckets)) { /* leveling launches no fewer: the key buckets */
        nb = 0;
        for (i64 c = 0; c < first; c++) {
            if (count[c + 1] > 0) {
                bounds[nb] = count[c];
                bkernel[nb] = c % n_k;
                nb++;
            }
            count[c + 1] += count[c];
        }
        bounds[nb] = n;
        for (g = 0; g < n; g++) {
            i64 at = count[cell[g]]++;
            local[at] = lg[g];
            nxt[at] = g; /* which node sits at `at` */
        }
        for (i64 b = 0; b < nb; b++)
            blevel[b] = key[nxt[bounds[b]]];
    }
done:
#undef ALLOC
    return nb;
}

/* The schedule of one pass, by the records as the DFG holds them: fills *plan (its
 * arrays malloc'ed, the caller frees them with acrobat_plan_free) and returns 0; 1 when it
 * declines the records (see list_schedule), -1 with a Python error set. Calls no Python:
 * the GIL is held throughout, so the scratch arrays serve every caller. */
int acrobat_sched_core(PyObject *records, PyObject *table_obj, i64 KEYc, i64 OUTc, i64 STRIDE,
                       acrobat_plan_t *plan) {
    memset(plan, 0, sizeof *plan);
    if (!PyList_Check(records) || STRIDE <= 0) {
        PyErr_SetString(PyExc_TypeError, "list_schedule: records a list, STRIDE > 0");
        return -1;
    }
    int status = 1;
    Py_buffer tb = {0};
    Py_ssize_t n_k = PyList_GET_SIZE(records), nrec = 0;
    Py_buffer *rb = (Py_buffer *)calloc((size_t)(n_k > 0 ? n_k : 1), sizeof(Py_buffer));
    const i64 **rowp = NULL;
    if (!rb) {
        PyErr_NoMemory();
        return -1;
    }
    if (PyObject_GetBuffer(table_obj, &tb, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        status = -1;
        goto out;
    }
    if (tb.ndim != 2 || !is_i64(&tb) || tb.shape[0] < n_k || tb.shape[1] < 3)
        goto out;
    const i64 *table = (const i64 *)tb.buf;
    i64 tw = tb.shape[1];
    i64 n = 0;
    for (Py_ssize_t k = 0; k < n_k; k++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(records, k), &rb[k],
                               PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            PyErr_Clear();
            goto out;
        }
        nrec = k + 1;
        Py_buffer *b = &rb[k];
        const i64 *t = table + k * tw;
        if (!is_i64(b) || b->ndim != 2)
            goto out;
        if (b->shape[0] == 0)
            continue;
        /* the row width, the outputs and every column read must fit the row */
        if (b->shape[1] != t[0] || t[1] < 1 || t[2] < 0 || 3 + t[2] > tw || KEYc < 0 ||
            KEYc >= t[0] || OUTc < 0 || OUTc >= t[0])
            goto out;
        for (i64 a = 0; a < t[2]; a++)
            if (t[3 + a] < 0 || t[3 + a] >= t[0])
                goto out;
        n += b->shape[0];
    }
    plan->n = n;
    if (n == 0) {
        status = 0;
        goto out;
    }
    /* scratch (see scratch()): no call into Python until schedule() is done with them */
    i64 *kg = scratch(S_KG, n, 0);
    i64 *lg = scratch(S_LG, n, 0);
    rowp = (const i64 **)scratch(S_ROWP, n, 0);
    i64 *bounds_s = scratch(S_BOUNDS, n + 1, 0);
    i64 *bkernel_s = scratch(S_BKERNEL, n, 0);
    i64 *blevel_s = scratch(S_BLEVEL, n, 0);
    plan->local = (i64 *)malloc((size_t)n * sizeof(i64));
    if (!kg || !lg || !rowp || !bounds_s || !bkernel_s || !blevel_s || !plan->local) {
        PyErr_NoMemory();
        status = -1;
        goto out;
    }
    i64 g = 0, lo = (i64)1 << 62, hi = -((i64)1 << 62);
    for (Py_ssize_t k = 0; k < n_k; k++) {
        Py_buffer *b = &rb[k];
        i64 w = b->shape[1];
        const i64 *base = (const i64 *)b->buf;
        for (i64 r = 0; r < b->shape[0]; r++) {
            kg[g] = k;
            lg[g] = r;
            rowp[g] = base + r * w;
            i64 o = rowp[g][OUTc];
            if (o < lo)
                lo = o;
            if (o > hi)
                hi = o;
            g++;
        }
    }
    /* value ids spread far wider than the pass (not a recorded DFG): the Python path */
    if (hi - lo > 64 * n + (1 << 20))
        goto out;
    i64 nb = schedule(n, n_k, kg, lg, rowp, table, tw, KEYc, OUTc, STRIDE, plan->local,
                      bounds_s, bkernel_s, blevel_s);
    if (nb == -1) {
        PyErr_NoMemory();
        status = -1;
        goto out;
    }
    if (nb == -2)
        goto out;
    /* the batches out of the scratch */
    plan->bounds = (i64 *)malloc((size_t)(nb + 1) * sizeof(i64));
    plan->kernel = (i64 *)malloc((size_t)(nb + 1) * sizeof(i64));
    plan->level = (i64 *)malloc((size_t)(nb + 1) * sizeof(i64));
    if (!plan->bounds || !plan->kernel || !plan->level) {
        PyErr_NoMemory();
        status = -1;
        goto out;
    }
    memcpy(plan->bounds, bounds_s, (size_t)(nb + 1) * sizeof(i64));
    memcpy(plan->kernel, bkernel_s, (size_t)nb * sizeof(i64));
    memcpy(plan->level, blevel_s, (size_t)nb * sizeof(i64));
    plan->nb = nb;
    status = 0;
out:
    scratch_trim();
    for (Py_ssize_t k = 0; k < nrec; k++)
        PyBuffer_Release(&rb[k]);
    free(rb);
    if (tb.obj)
        PyBuffer_Release(&tb);
    if (status != 0)
        acrobat_plan_free(plan);
    return status;
}

void acrobat_plan_free(acrobat_plan_t *plan) {
    free(plan->local);
    free(plan->bounds);
    free(plan->kernel);
    free(plan->level);
    memset(plan, 0, sizeof *plan);
}

PyObject *acrobat_list_schedule(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError,
                        "list_schedule(records, table, KEY, OUT, STRIDE, batch, alloc)");
        return NULL;
    }
    PyObject *records = args[0], *batch = args[5], *alloc = args[6];
    i64 KEYc = PyLong_AsLongLong(args[2]), OUTc = PyLong_AsLongLong(args[3]);
    i64 STRIDE = PyLong_AsLongLong(args[4]);
    if (PyErr_Occurred())
        return NULL;
    if (!PyList_Check(records) || !PyType_Check(batch) ||
        !PyType_IsSubtype((PyTypeObject *)batch, &PyTuple_Type) || STRIDE <= 0) {
        PyErr_SetString(PyExc_TypeError, "list_schedule: records a list, batch a tuple type");
        return NULL;
    }
    acrobat_plan_t plan;
    int status = acrobat_sched_core(records, args[1], KEYc, OUTc, STRIDE, &plan);
    if (status < 0)
        return NULL;
    if (status > 0)
        Py_RETURN_NONE;
    PyObject *result = NULL, *local_arr = NULL;
    Py_buffer lb = {0};
    if (plan.n == 0) {
        result = PyList_New(0);
        goto out;
    }
    local_arr = PyObject_CallFunction(alloc, "n", (Py_ssize_t)plan.n);
    if (!local_arr || PyObject_GetBuffer(local_arr, &lb,
                                         PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        goto out;
    if (lb.len != plan.n * 8 || !is_i64(&lb)) {
        PyErr_SetString(PyExc_ValueError, "list_schedule: alloc(n) must make n int64s");
        goto out;
    }
    memcpy(lb.buf, plan.local, (size_t)plan.n * sizeof(i64));
    PyBuffer_Release(&lb);
    result = PyList_New((Py_ssize_t)plan.nb);
    if (!result)
        goto out;
    PyTypeObject *bt = (PyTypeObject *)batch;
    for (i64 b = 0; b < plan.nb; b++) {
        PyObject *nodes = PySequence_GetSlice(local_arr, (Py_ssize_t)plan.bounds[b],
                                              (Py_ssize_t)plan.bounds[b + 1]);
        PyObject *kk = PyLong_FromLongLong(plan.kernel[b]);
        PyObject *lv = PyLong_FromLongLong(plan.level[b]);
        PyObject *t = (nodes && kk && lv) ? bt->tp_alloc(bt, 3) : NULL;
        if (!t) {
            Py_XDECREF(nodes);
            Py_XDECREF(kk);
            Py_XDECREF(lv);
            Py_CLEAR(result);
            goto out;
        }
        PyTuple_SET_ITEM(t, 0, kk);
        PyTuple_SET_ITEM(t, 1, nodes);
        PyTuple_SET_ITEM(t, 2, lv);
        PyList_SET_ITEM(result, (Py_ssize_t)b, t);
    }
out:
    if (lb.obj)
        PyBuffer_Release(&lb);
    Py_XDECREF(local_arr);
    acrobat_plan_free(&plan);
    return result;
}
