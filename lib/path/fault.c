/* SPDX-License-Identifier: MIT */
/* The first fault of a queue pair's engine, kept for the session (fault.h). */
#include <stdarg.h>
#include <stdio.h>

#include "fault.h"
#include "rdmasec.h"

static int record(struct rsec_fault *f, enum rsec_fault_kind kind, uint8_t why, int code, const char *fmt,
		  va_list ap) __attribute__((format(printf, 5, 0)));

static int record(struct rsec_fault *f, enum rsec_fault_kind kind, uint8_t why, int code, const char *fmt,
		  va_list ap)
{
	if (rsec_fault_pending(f))
		return f->code;
	f->kind = kind;
	f->code = code < 0 ? code : RSEC_E_INVAL; /* a caller's mistake, still a failure */
	f->why = why;
	vsnprintf(f->text, sizeof(f->text), fmt, ap);
	return f->code;
}

int rsec_fault_fail(struct rsec_fault *f, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = record(f, RSEC_FAULT_FAIL, 0, code, fmt, ap);
	va_end(ap);
	return rc;
}

int rsec_fault_data(struct rsec_fault *f, uint8_t why, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = record(f, RSEC_FAULT_DATA, why, code, fmt, ap);
	va_end(ap);
	return rc;
}

struct rsec_fault rsec_fault_take(struct rsec_fault *f)
{
	struct rsec_fault out = *f;
	*f = (struct rsec_fault){ .kind = RSEC_FAULT_NONE };
	return out;
}
