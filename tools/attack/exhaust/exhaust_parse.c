/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "exhaust_parse.h"

/* Decimal digits only, no sign or blanks, at most 19 of them (fits in u64). */
static bool dec_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 19)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return true;
}

static bool dev_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '-' || c == '.';
}

/* The next blank-separated token of s[*pos..n); false at the end. */
static bool next_token(const char *s, size_t n, size_t *pos, const char **tok, size_t *len)
{
	size_t i = *pos;

	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (i == n)
		return false;
	*tok = s + i;
	while (i < n && s[i] != ' ' && s[i] != '\t')
		i++;
	*len = (size_t)(s + i - *tok);
	*pos = i;
	return true;
}

/* The line's first token, the device name. */
static bool take_dev(const char *tok, size_t len, struct exh_rdma_limit *out, const char **why)
{
	if (len >= EXH_DEV_MAX) {
		*why = "device name too long";
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		if (!dev_char(tok[i])) {
			*why = "bad character in the device name";
			return false;
		}
	}
	memcpy(out->dev, tok, len);
	out->dev[len] = '\0';
	return true;
}

/* One hca_handle=V or hca_object=V (V a number or `max'), each at most once (seen[]). */
static bool take_limit(const char *tok, size_t len, struct exh_rdma_limit *out, bool seen[2], const char **why)
{
	const char *eq = memchr(tok, '=', len);
	uint64_t *dst;
	size_t klen, vlen;
	int k;

	if (!eq) {
		*why = "expected KEY=VALUE";
		return false;
	}
	klen = (size_t)(eq - tok);
	vlen = len - klen - 1;
	if (klen == 10 && !memcmp(tok, "hca_handle", 10)) {
		dst = &out->hca_handle;
		k = 0;
	} else if (klen == 10 && !memcmp(tok, "hca_object", 10)) {
		dst = &out->hca_object;
		k = 1;
	} else {
		*why = "unknown key (expected hca_handle or hca_object)";
		return false;
	}
	if (seen[k]) {
		*why = "key given twice";
		return false;
	}
	seen[k] = true;
	if (vlen == 3 && !memcmp(eq + 1, "max", 3))
		*dst = EXH_UNLIMITED;
	else if (!dec_u64(eq + 1, vlen, dst) || *dst > INT32_MAX) {
		/* The kernel keeps these as int: anything larger is not from it. */
		*why = "value is neither `max' nor a number 0..2147483647";
		return false;
	}
	return true;
}

bool exh_rdma_line_parse(const char *s, size_t n, struct exh_rdma_limit *out, const char **why)
{
	const char *tok;
	size_t len, pos = 0;
	bool seen[2] = { false, false }; /* hca_handle, hca_object */

	*out = (struct exh_rdma_limit){ .hca_handle = EXH_UNLIMITED, .hca_object = EXH_UNLIMITED };
	if (n && s[n - 1] == '\n')
		n--;
	if (memchr(s, '\0', n) || memchr(s, '\n', n)) {
		*why = "embedded NUL or newline";
		return false;
	}
	if (!next_token(s, n, &pos, &tok, &len)) {
		*why = "empty line";
		return false;
	}
	if (!take_dev(tok, len, out, why))
		return false;
	while (next_token(s, n, &pos, &tok, &len))
		if (!take_limit(tok, len, out, seen, why))
			return false;
	return true;
}

int exh_rdma_find(const char *text, size_t n, const char *dev, struct exh_rdma_limit *out, const char **why)
{
	size_t pos = 0;

	while (pos < n) {
		const char *nl = memchr(text + pos, '\n', n - pos);
		size_t len = nl ? (size_t)(nl - (text + pos)) : n - pos;
		struct exh_rdma_limit l;

		if (len > 0) {
			if (!exh_rdma_line_parse(text + pos, len, &l, why))
				return -1;
			if (!strcmp(l.dev, dev)) {
				*out = l;
				return 1;
			}
		}
		pos += len + 1;
	}
	return 0;
}

static int fmt_val(char *buf, size_t cap, const char *key, uint64_t v, const char *sep)
{
	if (v == EXH_UNLIMITED)
		return snprintf(buf, cap, "%s%s=max", sep, key);
	return snprintf(buf, cap, "%s%s=%llu", sep, key, (unsigned long long)v);
}

size_t exh_rdma_format(const struct exh_rdma_limit *l, char *buf, size_t cap)
{
	int a, b;

	a = fmt_val(buf, cap, "hca_handle", l->hca_handle, "");
	if (a < 0 || (size_t)a >= cap)
		return 0;
	b = fmt_val(buf + a, cap - (size_t)a, "hca_object", l->hca_object, " ");
	if (b < 0 || (size_t)b >= cap - (size_t)a)
		return 0;
	return (size_t)a + (size_t)b;
}

bool exh_cgroup_v2_path(const char *text, size_t n, char *out, size_t cap)
{
	size_t pos = 0;

	while (pos < n) {
		const char *nl = memchr(text + pos, '\n', n - pos);
		size_t len = nl ? (size_t)(nl - (text + pos)) : n - pos;

		/* v2's entry is "0::PATH"; v1 entries name their controllers between the colons. */
		if (len > 3 && !memcmp(text + pos, "0::", 3)) {
			const char *p = text + pos + 3;
			size_t plen = len - 3;
			if (p[0] != '/' || plen >= cap || memchr(p, '\0', plen))
				return false;
			memcpy(out, p, plen);
			out[plen] = '\0';
			return true;
		}
		pos += len + 1;
	}
	return false;
}

bool exh_meminfo_kib(const char *text, size_t n, const char *key, uint64_t *kib)
{
	size_t klen = strlen(key), pos = 0;

	while (pos < n) {
		const char *line = text + pos, *nl = memchr(line, '\n', n - pos);
		size_t len = nl ? (size_t)(nl - line) : n - pos;

		if (len > klen && !memcmp(line, key, klen) && line[klen] == ':') {
			size_t i = klen + 1, start;
			while (i < len && line[i] == ' ')
				i++;
			start = i;
			while (i < len && line[i] >= '0' && line[i] <= '9')
				i++;
			if (!dec_u64(line + start, i - start, kib))
				return false;
			/* Either nothing more (counts like HugePages_Total) or exactly " kB". */
			return i == len || (len - i == 3 && !memcmp(line + i, " kB", 3));
		}
		pos += len + 1;
	}
	return false;
}

static const char *const kind_names[EXH_KINDS] = { "qp", "cq", "mr", "pd" };

const char *exh_kind_name(enum exh_kind k)
{
	return (unsigned)k < EXH_KINDS ? kind_names[k] : "?";
}

bool exh_kinds_parse(const char *s, unsigned *mask)
{
	const char *p = s;

	*mask = 0;
	if (!strcmp(s, "all")) {
		*mask = (1u << EXH_KINDS) - 1;
		return true;
	}
	for (;;) {
		size_t len = strcspn(p, ",");
		unsigned k;
		for (k = 0; k < EXH_KINDS; k++)
			if (len == strlen(kind_names[k]) && !strncmp(p, kind_names[k], len))
				break;
		if (k == EXH_KINDS) {
			fprintf(stderr, "rdmasec-attack: invalid --objects: `%s' (expected qp, cq, mr, pd, "
				"a comma list of them, or all)\n", s);
			*mask = 0;
			return false;
		}
		*mask |= 1u << k;
		if (!p[len])
			return true;
		p += len + 1;
	}
}

bool exh_one_qp_parse(const char *s, size_t n, struct exh_one_qp *out)
{
	static const char created[] = "one-qp: created", refused[] = "one-qp: refused at ";
	static const char *const steps[] = { "open", "pd", "cq", "qp" };
	size_t i, len = 0;

	*out = (struct exh_one_qp){ 0 };
	if (n && s[n - 1] == '\n')
		n--;
	if (n == sizeof(created) - 1 && !memcmp(s, created, n)) {
		out->created = true;
		return true;
	}
	if (n <= sizeof(refused) - 1 || memcmp(s, refused, sizeof(refused) - 1))
		return false;
	s += sizeof(refused) - 1;
	n -= sizeof(refused) - 1;
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		len = strlen(steps[i]);
		if (n > len + 2 && !memcmp(s, steps[i], len) && s[len] == ':' && s[len + 1] == ' ')
			break;
	}
	if (i == sizeof(steps) / sizeof(steps[0]))
		return false;
	memcpy(out->step, steps[i], len + 1);
	s += len + 2;
	n -= len + 2;
	if (n == 0 || n >= sizeof(out->err))
		return false;
	for (size_t k = 0; k < n; k++)
		if (!((s[k] >= 'A' && s[k] <= 'Z') || (s[k] >= '0' && s[k] <= '9')))
			return false;
	memcpy(out->err, s, n);
	out->err[n] = '\0';
	return true;
}

const char *exh_remote_verdict(const struct exh_remote_tally *t)
{
	if (t->legit == 0)
		return "exhausted";
	if (t->resources_seen > 0)
		return "resources-spent";
	if (t->legit == 1)
		return "served";
	return t->connected ? "no-resources-seen" : "unknown";
}

const char *exh_errno_name(int e, char buf[static 16])
{
	static const struct {
		int e;
		const char *name;
	} names[] = {
		{ EAGAIN, "EAGAIN" }, { ENOMEM, "ENOMEM" }, { EDQUOT, "EDQUOT" }, { ENOSPC, "ENOSPC" },
		{ EINVAL, "EINVAL" }, { EPERM, "EPERM" },   { EACCES, "EACCES" }, { EMFILE, "EMFILE" },
		{ ENFILE, "ENFILE" }, { EFAULT, "EFAULT" }, { ENOSYS, "ENOSYS" }, { EBUSY, "EBUSY" },
		{ ENODEV, "ENODEV" }, { EOPNOTSUPP, "EOPNOTSUPP" },
	};

	if (e == 0)
		return "";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == e)
			return names[i].name;
	snprintf(buf, 16, "E%d", e);
	return buf;
}
