/* The acrobat policy's schedule of one pass in C arrays (sched.c), for the flush runner
 * (flush.c) that launches it without making a Python object per batch. */
#ifndef ACROBAT_BATCHPLAN_H
#define ACROBAT_BATCHPLAN_H

#include <Python.h>
#include <stdint.h>

typedef struct {
    int64_t n;       /* nodes */
    int64_t nb;      /* batches */
    int64_t *local;  /* [n] each batch's local record rows, ascending, batch after batch */
    int64_t *bounds; /* [nb + 1] batch b's rows are local[bounds[b]:bounds[b + 1]] */
    int64_t *kernel; /* [nb] */
    int64_t *level;  /* [nb] */
} acrobat_plan_t;

/* 0: *plan filled (free it with acrobat_plan_free); 1: declined (records it does not
 * take, *plan empty); -1: a Python error is set */
int acrobat_sched_core(PyObject *records, PyObject *table, int64_t KEYc, int64_t OUTc,
                       int64_t STRIDE, acrobat_plan_t *plan);
void acrobat_plan_free(acrobat_plan_t *plan);

#endif
