/* SPDX-License-Identifier: MIT */
/* The library's version and the text of its error codes. */
#include "base/errtext.h"
#include "config.h"
#include "rdmasec.h"

const char *rsec_version(void)
{
	return RSEC_VERSION;
}

const char *rsec_strerror(int code)
{
	return rsec_error_text(code);
}
