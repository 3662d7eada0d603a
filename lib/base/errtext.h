/* SPDX-License-Identifier: MIT */
/* The text of an RSEC_E_* code, for the library's own messages (rsec_strerror is its exported face). */
#ifndef RSEC_BASE_ERRTEXT_H
#define RSEC_BASE_ERRTEXT_H

const char *rsec_error_text(int code);

#endif
