/* SPDX-License-Identifier: MIT */
/*
 * The daemons' Prometheus text-format files (for node_exporter's textfile
 * collector): rendered into PATH.tmp, synced, then renamed over PATH, so a
 * reader never sees half a file.
 */
#ifndef RSEC_TOOLS_PROM_FILE_H
#define RSEC_TOOLS_PROM_FILE_H

#include <stddef.h>
#include <stdio.h>

/* Writes the exposition of arg to out; 0, or -1 on an error. */
typedef int (*prom_render_fn)(FILE *out, const void *arg);

/* Replaces path with render's output. Returns 0 or -errno; err says why. */
int prom_file_write(const char *path, prom_render_fn render, const void *arg, char *err, size_t errlen);

#endif
