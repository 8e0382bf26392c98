/*
 * Scalar elements of dtypes: the one place where a C number becomes an
 * element of a tensor constant and back.
 *
 * float16 and bfloat16 are converted from a double in one step, rounding
 * to nearest with ties to even as IEEE 754 does (never through float, which
 * would round twice): dp.const, the text parser and every other producer
 * of such elements use these functions, so the same number always gives the
 * same bits. NaN stays a quiet NaN with its sign; a value beyond the largest
 * finite one becomes infinity (range checks, where the input must fit, are
 * dp_dtype_fits_int and dp_dtype_fits_real).
 */
#ifndef DEVPLAN_SCALAR_H
#define DEVPLAN_SCALAR_H

#include "type.h"

uint16_t dp_f16_from_double(double v);
uint16_t dp_bf16_from_double(double v);
double dp_f16_to_double(uint16_t h);
double dp_bf16_to_double(uint16_t h);

/* Does the integer (neg ? -mag : mag) fit the integer or bool dtype dt?
   (bool takes 0 and 1.) Magnitude and sign, so that every uint64 and every
   int64 can be asked about. */
int dp_dtype_fits_int(dp_dtype dt, int neg, uint64_t mag);
/* Is v within the range of the float dtype dt? A finite v larger in
   magnitude than dt's largest finite value does not fit (65505 as float16,
   as TVM's parser decides); infinities and NaN fit (they are written as
   such, never reached by rounding). */
int dp_dtype_fits_real(dp_dtype dt, double v);

/* Byte size of one element of dt, or 0 when dt has no element form here
   (several lanes, integers narrower than 8 bits, floats other than 16, 32
   and 64 bits). */
size_t dp_elem_bytes(dp_dtype dt);

/* Element i of buf, of the scalar (one lane) dtype dt. _set_int stores the
   low bits of v (any integer or bool dtype; a float dtype gets v as a
   real); _set_real stores v rounded (a float dtype) or truncated toward
   zero (an integer dtype). Both return -1 for a dtype with no element form
   (sub-byte integers, several lanes). */
int dp_elem_set_int(dp_dtype dt, void *buf, size_t i, int64_t v);
int dp_elem_set_real(dp_dtype dt, void *buf, size_t i, double v);
/* Reads element i: returns 1 with *f set for a float dtype, 0 with *v set
   for an integer or bool one (uint64 values above INT64_MAX come back as
   their bits), -1 for a dtype with no element form. */
int dp_elem_get(dp_dtype dt, const void *buf, size_t i, double *f, int64_t *v);

#endif
