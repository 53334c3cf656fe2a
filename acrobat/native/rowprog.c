/* acrobat's fused elementwise kernel: a chain of elementwise ops run row by row.
 *
 * A generated NumPy kernel computes an elementwise tail such as an LSTM cell's gates
 * (sigmoid, tanh, mul, add over [B, n] arrays) as one NumPy call per op: every call pays
 * its overhead and streams whole arrays through memory. rowprog runs the whole chain
 * for one row at a time in a few L1-resident vectors, one call for the chain
 * (acrobat.codegen.numpy_kernels writes the program; docs/architecture.md measures it).
 *
 * rowprog(B, code, consts, arrays) -> bool
 *   B       the rows
 *   code    int32 buffer: n, nin, nconst, ntemp, ninstr, then ninstr x (op, dst, a, b),
 *           then nout, then nout temp numbers. Operands: 0..nin-1 the inputs
 *           (arrays[0..nin-1]), then nconst constants (consts[k] in every lane), then the
 *           temps; ``dst`` is always a temp. Outputs: arrays[nin + k] gets temp out[k].
 *   consts  float32 buffer of nconst values
 *   arrays  tuple: nin inputs, each [B, n] (any row stride, unit element stride), [n]
 *           (contiguous: the same for every row) or a pair (buf [R, n], rows [B] int64,
 *           every row in [0, R)) meaning buf[rows] (rows read where they lie, no gather
 *           first), then nout writable outputs [B, n]; an input pair's rows may not
 *           overlap an output (the call declines)
 *   Returns True when it computed every output; False, with nothing written, when an
 *   argument's layout is not one it takes (the caller then runs its NumPy code).
 *
 * Every row computes all instructions into temps and only then writes its outputs, so
 * an output may be the very memory of an input (an op done in place in NumPy terms);
 * rows are independent (elementwise), so an output row only ever meets its own row.
 *
 * The float results equal NumPy's up to the last bits of exp/tanh: add, sub, mul, div,
 * neg, maximum, minimum, relu and sqrt are IEEE operations (bit for bit); exp is the
 * classic Cephes polynomial (about 1 ulp) with its overflow, underflow and denormal
 * range handled; sigmoid is 1 / (1 + exp(-x)) as the NumPy kernels compute it; tanh is
 * Cephes' odd polynomial below 0.625 and 1 - 2 / (exp(2|x|) + 1) above. NaN propagates
 * as in NumPy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
    OP_ADD = 1,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_NEG,
    OP_MAX,
    OP_MIN,
    OP_RELU,
    OP_TANH,
    OP_SIGMOID,
    OP_EXP,
    OP_SQRT,
    OP_LAST = OP_SQRT,
};

#define MAX_OPERANDS 256

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RP_TARGET __attribute__((target("avx2,fma")))

/* exp(x), float32: Cephes' polynomial on x - n ln 2, scaled by 2^n. A vector with a lane
 * at |x| >= 87 or NaN takes the careful path: 2^n applied in two exact halves (results
 * near overflow and in the denormal range round once, as they should), +inf past
 * overflow, 0 past underflow, NaN kept. */
RP_TARGET static inline __m256 rp_exp(__m256 x) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    int careful = _mm256_movemask_ps(
        _mm256_cmp_ps(_mm256_andnot_ps(sign, x), _mm256_set1_ps(87.0f), _CMP_NLT_UQ));
    __m256 xc = x;
    if (careful)
        xc = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.8f)), _mm256_set1_ps(-104.0f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 y = _mm256_set1_ps(1.9875691500e-4f);
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.3981999507e-3f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073e-3f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894e-2f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459e-1f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201e-1f));
    y = _mm256_fmadd_ps(_mm256_mul_ps(y, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i bias = _mm256_set1_epi32(127);
    if (!careful)
        return _mm256_mul_ps(
            y, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(ni, bias), 23)));
    __m256i n1 = _mm256_srai_epi32(ni, 1);
    __m256i n2 = _mm256_sub_epi32(ni, n1);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    y = _mm256_mul_ps(_mm256_mul_ps(y, s1), s2);
    y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY),
                         _mm256_cmp_ps(x, _mm256_set1_ps(88.8f), _CMP_GT_OQ));
    y = _mm256_blendv_ps(y, _mm256_setzero_ps(),
                         _mm256_cmp_ps(x, _mm256_set1_ps(-104.0f), _CMP_LT_OQ));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

RP_TARGET static inline __m256 rp_tanh(__m256 x) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 a = _mm256_andnot_ps(sign, x);
    __m256 is_small = _mm256_cmp_ps(a, _mm256_set1_ps(0.625f), _CMP_LT_OQ);
    int small_lanes = _mm256_movemask_ps(is_small);
    __m256 small = x, big = x;
    if (small_lanes) { /* |x| < 0.625: x + x^3 P(x^2) */
        __m256 z = _mm256_mul_ps(x, x);
        __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
        p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
        p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
        p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
        p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
        small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
        if (small_lanes == 0xff)
            return small;
    }
    /* else 1 - 2 / (exp(2|x|) + 1) with x's sign (NaN stays NaN through exp) */
    __m256 e = rp_exp(_mm256_add_ps(a, a));
    big = _mm256_sub_ps(_mm256_set1_ps(1.0f),
                        _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
    big = _mm256_or_ps(big, _mm256_and_ps(sign, x));
    return small_lanes ? _mm256_blendv_ps(big, small, is_small) : big;
}

RP_TARGET static inline __m256 rp_sigmoid(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 e = rp_exp(_mm256_xor_ps(x, _mm256_set1_ps(-0.0f)));
    return _mm256_div_ps(one, _mm256_add_ps(one, e));
}

/* the first n - j (< 8) floats at p + j, zeros after */
RP_TARGET static inline __m256 rp_tail(const float *p, Py_ssize_t j, Py_ssize_t n) {
    __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - j)),
                                      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_maskload_ps(p + j, mask);
}

/* one op over a row: whole vectors, then the tail (masked loads; dst is a temp with room
 * for whole vectors) */
#define RP_UNARY(EXPR)                                                                     \
    do {                                                                                   \
        Py_ssize_t j = 0;                                                                  \
        for (; j + 8 <= n; j += 8) {                                                       \
            __m256 x = _mm256_loadu_ps(a + j);                                             \
            _mm256_storeu_ps(dst + j, (EXPR));                                             \
        }                                                                                  \
        if (j < n) {                                                                       \
            __m256 x = rp_tail(a, j, n);                                                   \
            _mm256_storeu_ps(dst + j, (EXPR));                                             \
        }                                                                                  \
    } while (0)
#define RP_BINARY(EXPR)                                                                    \
    do {                                                                                   \
        Py_ssize_t j = 0;                                                                  \
        for (; j + 8 <= n; j += 8) {                                                       \
            __m256 x = _mm256_loadu_ps(a + j), y = _mm256_loadu_ps(b + j);                 \
            _mm256_storeu_ps(dst + j, (EXPR));                                             \
        }                                                                                  \
        if (j < n) {                                                                       \
            __m256 x = rp_tail(a, j, n), y = rp_tail(b, j, n);                             \
            _mm256_storeu_ps(dst + j, (EXPR));                                             \
        }                                                                                  \
    } while (0)

RP_TARGET static inline __m256 rp_nanmax(__m256 x, __m256 y) {
    return _mm256_blendv_ps(_mm256_max_ps(x, y), x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
RP_TARGET static inline __m256 rp_nanmin(__m256 x, __m256 y) {
    return _mm256_blendv_ps(_mm256_min_ps(x, y), x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* One instruction over a row of n floats into dst. */
RP_TARGET static void rp_instr(int op, float *dst, const float *a, const float *b, Py_ssize_t n) {
    const __m256 zero = _mm256_setzero_ps();
    const __m256 signbit = _mm256_set1_ps(-0.0f);
    switch (op) {
    case OP_ADD:
        RP_BINARY(_mm256_add_ps(x, y));
        break;
    case OP_SUB:
        RP_BINARY(_mm256_sub_ps(x, y));
        break;
    case OP_MUL:
        RP_BINARY(_mm256_mul_ps(x, y));
        break;
    case OP_DIV: /* the tail's unused lanes divide 0 by 0: a NaN nobody stores */
        RP_BINARY(_mm256_div_ps(x, y));
        break;
    case OP_NEG:
        RP_UNARY(_mm256_xor_ps(x, signbit));
        break;
    case OP_MAX:
        RP_BINARY(rp_nanmax(x, y));
        break;
    case OP_MIN:
        RP_BINARY(rp_nanmin(x, y));
        break;
    case OP_RELU: /* max(0, x): x when x is NaN, as np.maximum(x, 0) */
        RP_UNARY(_mm256_max_ps(zero, x));
        break;
    case OP_TANH:
        RP_UNARY(rp_tanh(x));
        break;
    case OP_SIGMOID:
        RP_UNARY(rp_sigmoid(x));
        break;
    case OP_EXP:
        RP_UNARY(rp_exp(x));
        break;
    default: /* OP_SQRT */
        RP_UNARY(_mm256_sqrt_ps(x));
        break;
    }
}

int acrobat_have_avx2(void); /* smallgemm.c */
int acrobat_row_numbers(PyObject *obj, Py_buffer *r, Py_ssize_t count, Py_ssize_t R);
#define RP_X86 1
#endif

static int rp_binary(int op) { return op <= OP_DIV || op == OP_MAX || op == OP_MIN; }

PyObject *acrobat_rowprog(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "rowprog(B, code, consts, arrays) takes 4 arguments");
        return NULL;
    }
    Py_ssize_t B = PyLong_AsSsize_t(args[0]);
    if (B == -1 && PyErr_Occurred())
        return NULL;
    if (!PyTuple_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "rowprog: arrays must be a tuple");
        return NULL;
    }
#ifndef RP_X86
    Py_RETURN_FALSE;
#else
    if (!acrobat_have_avx2() || B < 0)
        Py_RETURN_FALSE;
    Py_buffer code, cbuf;
    if (PyObject_GetBuffer(args[1], &code, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[2], &cbuf, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&code);
        return NULL;
    }
    PyObject *result = Py_False;
    Py_buffer views[MAX_OPERANDS], idx[MAX_OPERANDS]; /* idx: input pairs' row numbers */
    int held = 0, nidx = 0;
    float *scratch = NULL;
    const int32_t *c = (const int32_t *)code.buf;
    Py_ssize_t words = code.len / 4;
    if (code.itemsize != 4 || cbuf.itemsize != 4 || words < 6)
        goto done;
    Py_ssize_t n = c[0];
    int nin = c[1], nconst = c[2], ntemp = c[3], ninstr = c[4];
    int nops = nin + nconst + ntemp;
    if (n < 1 || nin < 0 || nconst < 0 || ntemp < 1 || ninstr < 1 || nops > MAX_OPERANDS ||
        nconst * 4 > cbuf.len || words < 6 + 4 * (Py_ssize_t)ninstr)
        goto done;
    const int32_t *ins = c + 5;
    int nout = ins[4 * ninstr];
    const int32_t *outs = ins + 4 * ninstr + 1;
    if (nout < 1 || words < 6 + 4 * (Py_ssize_t)ninstr + nout ||
        PyTuple_GET_SIZE(args[3]) != nin + nout)
        goto done;
    for (int i = 0; i < ninstr; i++) {
        int op = ins[4 * i], d = ins[4 * i + 1], a = ins[4 * i + 2], b = ins[4 * i + 3];
        if (op < OP_ADD || op > OP_LAST || d < nin + nconst || d >= nops || a < 0 ||
            a >= nops || (rp_binary(op) && (b < 0 || b >= nops)))
            goto done;
    }
    for (int k = 0; k < nout; k++)
        if (outs[k] < nin + nconst || outs[k] >= nops)
            goto done;
    /* the arrays: inputs [B, n] or [n], outputs [B, n] writable; float32, unit element
     * stride */
    const char *base[MAX_OPERANDS];
    Py_ssize_t stride[MAX_OPERANDS];
    const int64_t *rows[MAX_OPERANDS]; /* an input's row numbers, or NULL */
    for (int i = 0; i < nin + nout; i++) {
        PyObject *obj = PyTuple_GET_ITEM(args[3], i);
        int out = i >= nin;
        rows[i] = NULL;
        PyObject *numbers = NULL; /* an input pair's row numbers */
        if (!out && PyTuple_Check(obj)) { /* (buf [R, n], rows [B]) */
            if (PyTuple_GET_SIZE(obj) != 2)
                goto done;
            numbers = PyTuple_GET_ITEM(obj, 1);
            obj = PyTuple_GET_ITEM(obj, 0);
        }
        Py_buffer *v = &views[i];
        if (PyObject_GetBuffer(obj, v, PyBUF_STRIDES | PyBUF_FORMAT |
                                           (out ? PyBUF_WRITABLE : 0)) < 0) {
            PyErr_Clear();
            goto done;
        }
        held++;
        if (v->itemsize != 4 || v->format == NULL || strcmp(v->format, "f") != 0)
            goto done;
        if (numbers != NULL) {
            if (v->ndim != 2 || v->shape[1] != n || (n > 1 && v->strides[1] != 4) ||
                v->strides[0] % 4 != 0 || v->strides[0] < 0 ||
                acrobat_row_numbers(numbers, &idx[nidx], B, v->shape[0]) < 0)
                goto done;
            rows[i] = (const int64_t *)idx[nidx++].buf;
            stride[i] = v->strides[0];
        } else if (v->ndim == 2) {
            if (v->shape[0] != B || v->shape[1] != n || (n > 1 && v->strides[1] != 4) ||
                v->strides[0] % 4 != 0)
                goto done;
            stride[i] = v->strides[0];
        } else if (v->ndim == 1 && !out) {
            if (v->shape[0] != n || (n > 1 && v->strides[0] != 4))
                goto done;
            stride[i] = 0;
        } else {
            goto done;
        }
        base[i] = (const char *)v->buf;
    }
    /* an output is written row by row after its row's inputs are read: an input pair's
     * row elsewhere in an output would be read after it was written */
    for (int i = 0; i < nin && B > 0; i++) {
        if (rows[i] == NULL)
            continue;
        for (int k = nin; k < nin + nout; k++) {
            const char *o0 = base[k], *o1 = o0 + (B - 1) * stride[k] + 4 * n;
            for (Py_ssize_t r = 0; r < B; r++) {
                const char *a = base[i] + rows[i][r] * stride[i];
                if (a < o1 && o0 < a + 4 * n)
                    goto done;
            }
        }
    }
    Py_ssize_t width = (n + 7) / 8 * 8; /* a temp holds whole vectors */
    scratch = aligned_alloc(32, (size_t)(nconst + ntemp) * width * sizeof(float));
    if (scratch == NULL) {
        result = PyErr_NoMemory();
        goto done;
    }
    const float *cv = (const float *)cbuf.buf;
    for (int k = 0; k < nconst; k++)
        for (Py_ssize_t j = 0; j < width; j++)
            scratch[k * width + j] = cv[k];
    const float *ptr[MAX_OPERANDS];
    for (int k = 0; k < nconst + ntemp; k++)
        ptr[nin + k] = scratch + k * width;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < B; r++) {
        for (int i = 0; i < nin; i++)
            ptr[i] = (const float *)(base[i] + (rows[i] ? rows[i][r] : r) * stride[i]);
        for (int i = 0; i < ninstr; i++) {
            const int32_t *in = ins + 4 * i;
            rp_instr(in[0], (float *)ptr[in[1]], ptr[in[2]], rp_binary(in[0]) ? ptr[in[3]] : NULL,
                     n);
        }
        for (int k = 0; k < nout; k++)
            memcpy((char *)base[nin + k] + r * stride[nin + k], ptr[outs[k]], n * sizeof(float));
    }
    Py_END_ALLOW_THREADS
    result = Py_True;
done:
    free(scratch);
    for (int i = 0; i < held; i++)
        PyBuffer_Release(&views[i]);
    for (int i = 0; i < nidx; i++)
        PyBuffer_Release(&idx[i]);
    PyBuffer_Release(&code);
    PyBuffer_Release(&cbuf);
    if (result == NULL)
        return NULL;
    Py_INCREF(result);
    return result;
#endif
}
