// SPDX-License-Identifier: GPL-2.0-or-later
/* Precedence of the kernel command line, persisted state and configuration. See precedence.h. */
#include "precedence.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "thp.h"

int thpd_cmdline_thp(const char *cmdline, char *out, size_t size)
{
	return thpd_cmdline_param(cmdline, "transparent_hugepage", out, size);
}

int thpd_cmdline_param(const char *cmdline, const char *name, char *out, size_t size)
{
	char key[64];
	const char *p = cmdline;
	int found = -ENOENT;

	if ((size_t)snprintf(key, sizeof(key), "%s=", name) >= sizeof(key))
		return -EINVAL;

	/* the last one wins, as for the kernel's own __setup() parsing */
	while (*p) {
		size_t len;

		while (*p == ' ' || *p == '\n' || *p == '\t')
			p++;
		len = strcspn(p, " \t\n");
		if (len > strlen(key) && strncmp(p, key, strlen(key)) == 0) {
			size_t vlen = len - strlen(key);

			if (vlen < size) {
				memcpy(out, p + strlen(key), vlen);
				out[vlen] = '\0';
				found = 0;
			}
		}
		p += len;
	}
	return found;
}

int thpd_target_compute(const struct thpd_config *cfg, const struct thpd_persist *persist,
			const char *cmdline_thp, struct thpd_target *t)
{
	struct thp_mode_req req;
	bool cmdline = cfg->honor_kernel_cmdline && cmdline_thp && *cmdline_thp &&
		       thp_mode_parse(cmdline_thp, &req) == 0;

	memset(t, 0, sizeof(*t));
	for (int k = 0; k < THPD_KH_N; k++) {
		t->kh_set[k] = persist->kh_set[k] || cfg->kh_set[k];
		t->kh_val[k] = persist->kh_set[k] ? persist->kh[k] : cfg->kh_val[k];
		t->kh_src[k] = persist->kh_set[k] ? "persisted state" :
			       cfg->kh_set[k] ? "configuration" : NULL;
	}
	if (cmdline) {
		snprintf(t->mode, sizeof(t->mode), "%s", cmdline_thp);
		t->mode_src = "kernel command line";
		if (req.rfc >= 0) {
			/* the number already chose defrag at boot */
			return 0;
		}
	} else if (persist->enabled[0]) {
		snprintf(t->mode, sizeof(t->mode), "%s", persist->enabled);
		t->mode_src = "persisted state";
	} else if (cfg->mode[0]) {
		snprintf(t->mode, sizeof(t->mode), "%s", cfg->mode);
		t->mode_src = "configuration";
	}
	if (persist->defrag[0]) {
		snprintf(t->defrag, sizeof(t->defrag), "%s", persist->defrag);
		t->defrag_src = "persisted state";
	} else if (cfg->defrag[0]) {
		snprintf(t->defrag, sizeof(t->defrag), "%s", cfg->defrag);
		t->defrag_src = "configuration";
	}
	return 0;
}

/* a size as the kernel's memparse() reads it: 16K, 2M, 1G or bytes; a power of two from 8K */
static int cmdline_size(const char *s, size_t len, unsigned long *kib)
{
	char buf[32], *end;
	unsigned long long v;

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (thp_size_parse(buf, kib) < 0) {
		if (buf[0] < '1' || buf[0] > '9')
			return -EINVAL;
		errno = 0;
		v = strtoull(buf, &end, 10);
		if (errno || *end || v % 1024 || v / 1024 > (1UL << 20))
			return -EINVAL;
		*kib = (unsigned long)(v / 1024);
	}
	return *kib >= 8 && *kib <= 1024UL * 1024 && !(*kib & (*kib - 1)) ? 0 : -EINVAL;
}

/*
 * Walk spec; for each "SIZES:WORD" part call fn for every size range in
 * SIZES. -EINVAL at the first thing the kernel would refuse.
 */
static int walk_sizes(const char *spec, enum thp_knob_id knob,
		      void (*fn)(void *ctx, unsigned long lo, unsigned long hi, const char *word,
				 size_t wlen),
		      void *ctx)
{
	const char *p = spec;

	if (!*p)
		return -EINVAL;
	while (*p) {
		size_t plen = strcspn(p, ";");
		const char *colon = memchr(p, ':', plen), *q;
		char word[16];
		size_t wlen;

		if (!colon || colon == p)
			return -EINVAL;
		wlen = plen - (size_t)(colon + 1 - p);
		if (wlen == 0 || wlen >= sizeof(word))
			return -EINVAL;
		memcpy(word, colon + 1, wlen);
		word[wlen] = '\0';
		/* the kernel's own lists: inherit, and no within_size/advise for anon */
		if (!thp_knob_word_known(knob, word))
			return -EINVAL;
		for (q = p; q < colon;) {
			size_t slen = strcspn(q, ",");
			const char *dash, *send;
			unsigned long lo, hi;

			if (q + slen > colon)
				slen = (size_t)(colon - q);
			send = q + slen;
			dash = memchr(q, '-', slen);
			if (dash) {
				if (cmdline_size(q, (size_t)(dash - q), &lo) < 0 ||
				    cmdline_size(dash + 1, (size_t)(send - dash - 1), &hi) < 0 || lo > hi)
					return -EINVAL;
			} else {
				if (cmdline_size(q, slen, &lo) < 0)
					return -EINVAL;
				hi = lo;
			}
			if (fn)
				fn(ctx, lo, hi, word, wlen);
			q = send + (send < colon);
			if (send < colon && q == colon)
				return -EINVAL;	/* a trailing comma */
		}
		p += plen;
		if (*p == ';') {
			p++;
			if (!*p)
				return -EINVAL;
		}
	}
	return 0;
}

int thpd_cmdline_sizes_valid(const char *spec, enum thp_knob_id knob)
{
	return walk_sizes(spec, knob, NULL, NULL);
}

struct size_query {
	unsigned long kib;
	char *out;
	size_t size;
	bool found;
};

static void size_query_fn(void *ctx, unsigned long lo, unsigned long hi, const char *word,
			  size_t wlen)
{
	struct size_query *q = ctx;

	if (q->kib < lo || q->kib > hi || wlen >= q->size)
		return;
	memcpy(q->out, word, wlen + 1);
	q->found = true;
}

int thpd_cmdline_size_word(const char *spec, enum thp_knob_id knob, unsigned long kib, char *out,
			   size_t size)
{
	struct size_query q = { .kib = kib, .out = out, .size = size };

	if (walk_sizes(spec, knob, size_query_fn, &q) < 0)
		return -EINVAL;
	return q.found ? 0 : -ENOENT;
}

/* every valid occurrence of key=, ';'-joined: the kernel applies them in order */
static void cmdline_sizes(const char *cmdline, const char *name, enum thp_knob_id knob,
			  char *out, size_t size, bool *bad)
{
	char key[32], val[256];
	const char *p = cmdline;
	size_t used = 0;

	snprintf(key, sizeof(key), "%s=", name);
	out[0] = '\0';
	*bad = false;
	while (*p) {
		size_t len, klen = strlen(key);

		while (*p == ' ' || *p == '\n' || *p == '\t')
			p++;
		len = strcspn(p, " \t\n");
		if (len > klen && strncmp(p, key, klen) == 0) {
			size_t vlen = len - klen;

			if (vlen >= sizeof(val)) {
				*bad = true;
			} else {
				memcpy(val, p + klen, vlen);
				val[vlen] = '\0';
				if (thpd_cmdline_sizes_valid(val, knob) < 0)
					*bad = true;
				else if (used + (used ? 1 : 0) + vlen < size)
					used += (size_t)snprintf(out + used, size - used, "%s%s",
								 used ? ";" : "", val);
				else
					*bad = true;
			}
		}
		p += len;
	}
}

void thpd_cmdline_parse(const char *cmdline, struct thpd_cmdline *cl)
{
	memset(cl, 0, sizeof(*cl));
	if (thpd_cmdline_param(cmdline, "transparent_hugepage", cl->thp, sizeof(cl->thp)) < 0)
		cl->thp[0] = '\0';
	if (thpd_cmdline_param(cmdline, "transparent_hugepage_shmem", cl->shmem,
			       sizeof(cl->shmem)) < 0 ||
	    !thp_knob_word_known(THP_KNOB_SHMEM_ENABLED, cl->shmem))
		cl->shmem[0] = '\0';
	cmdline_sizes(cmdline, "thp_anon", THP_KNOB_SIZE_ENABLED, cl->anon, sizeof(cl->anon),
		      &cl->anon_bad);
	cmdline_sizes(cmdline, "thp_shmem", THP_KNOB_SIZE_SHMEM_ENABLED, cl->shmem_sizes,
		      sizeof(cl->shmem_sizes), &cl->shmem_sizes_bad);
}

/* the first of cmdline, persisted, configuration that is set */
static const char *pick(char *out, size_t size, const char *cmdline, const char *persisted,
			const char *configured)
{
	if (cmdline && *cmdline) {
		snprintf(out, size, "%s", cmdline);
		return "kernel command line";
	}
	if (persisted && *persisted) {
		snprintf(out, size, "%s", persisted);
		return "persisted state";
	}
	if (configured && *configured) {
		snprintf(out, size, "%s", configured);
		return "configuration";
	}
	out[0] = '\0';
	return NULL;
}

void thpd_target_compute_sizes(const struct thpd_config *cfg, const struct thpd_persist *persist,
			       const struct thpd_cmdline *cl, struct thpd_target *t)
{
	bool honor = cfg->honor_kernel_cmdline && cl;

	t->shmem_src = pick(t->shmem, sizeof(t->shmem), honor ? cl->shmem : NULL, persist->shmem,
			    cfg->shmem);
	t->n_sizes = 0;
	for (unsigned long kib = 8; kib <= 1024UL * 1024; kib <<= 1) {
		struct thpd_size_target *z = &t->sizes[t->n_sizes];
		const struct thpd_size_config *c = thpd_config_size(cfg, kib);
		const struct thpd_persist_size *p = NULL;
		char anon[16] = "", shmem[16] = "";

		for (unsigned int i = 0; i < persist->n_sizes; i++)
			if (persist->sizes[i].kib == kib)
				p = &persist->sizes[i];
		if (honor && cl->anon[0] &&
		    thpd_cmdline_size_word(cl->anon, THP_KNOB_SIZE_ENABLED, kib, anon, sizeof(anon)) < 0)
			anon[0] = '\0';
		if (honor && cl->shmem_sizes[0] &&
		    thpd_cmdline_size_word(cl->shmem_sizes, THP_KNOB_SIZE_SHMEM_ENABLED, kib, shmem, sizeof(shmem)) < 0)
			shmem[0] = '\0';
		memset(z, 0, sizeof(*z));
		z->kib = kib;
		z->cfg = c;
		z->enabled_src = pick(z->enabled, sizeof(z->enabled), anon, p ? p->enabled : NULL,
				      c ? c->enabled : NULL);
		z->shmem_src = pick(z->shmem, sizeof(z->shmem), shmem, p ? p->shmem : NULL,
				    c ? c->shmem : NULL);
		if (z->enabled_src || z->shmem_src)
			t->n_sizes++;
	}
}
