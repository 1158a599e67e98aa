// SPDX-License-Identifier: GPL-2.0-or-later
/* What thpd wants the host to hold: a pure function of its inputs. See precedence.h. */
#include "precedence.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* the first of the candidates that is set, into out; its source, NULL when none is */
static const char *pick(char *out, size_t size, const char *cmdline, const char *persisted,
			const char *configured, const char *original)
{
	const char *v[] = { cmdline, persisted, configured, original };
	const char *src[] = { THPD_SRC_CMDLINE, THPD_SRC_PERSIST, THPD_SRC_CONFIG, THPD_SRC_ORIGINAL };

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (v[i] && *v[i]) {
			snprintf(out, size, "%s", v[i]);
			return src[i];
		}
	out[0] = '\0';
	return NULL;
}

/* a word or an RFC number (the kernel's, or Mode=): its enabled word, defrag (NULL for a word), number */
static bool mode_of(const char *s, const char **enabled, const char **defrag, int *rfc)
{
	struct thp_mode_req req;

	if (!s || !*s || thp_mode_parse(s, &req) < 0)
		return false;
	*enabled = thp_enabled_name(req.enabled);
	*defrag = req.defrag;
	*rfc = req.rfc;
	return true;
}

static bool same(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static const struct thpd_original_size *original_size(const struct thpd_originals *o,
						       unsigned long kib)
{
	for (unsigned int i = 0; o && i < o->n_sizes; i++)
		if (o->sizes[i].kib == kib)
			return &o->sizes[i];
	return NULL;
}

static void top_level(const struct thpd_inputs *in, const struct thp_cmdline *cl,
		      struct thpd_target *t)
{
	const struct thpd_config *cfg = in->cfg;
	const struct thpd_persist *p = in->persist;
	const struct thpd_originals *o = in->originals;
	const char *cl_enabled = NULL, *cl_defrag = NULL, *cf_enabled = NULL, *cf_defrag = NULL;
	int cl_rfc = -1, cf_rfc = -1;

	if (cl)
		mode_of(cl->thp, &cl_enabled, &cl_defrag, &cl_rfc);
	mode_of(cfg->mode, &cf_enabled, &cf_defrag, &cf_rfc);
	t->enabled_src = pick(t->enabled, sizeof(t->enabled), cl_enabled, p->enabled, cf_enabled,
			      o && o->have_enabled ? o->enabled : NULL);
	/* a number on the command line chose defrag as well, at its rank */
	t->defrag_src = pick(t->defrag, sizeof(t->defrag), cl_defrag, p->defrag,
			     cfg->defrag[0] ? cfg->defrag : cf_defrag,
			     o && o->have_defrag ? o->defrag : NULL);
	/* one number for both values: written as the number, one store on our kernel */
	t->rfc = -1;
	if (cl_rfc >= 0 && same(t->enabled_src, THPD_SRC_CMDLINE) &&
	    same(t->defrag_src, THPD_SRC_CMDLINE))
		t->rfc = cl_rfc;
	else if (cf_rfc >= 0 && same(t->enabled_src, THPD_SRC_CONFIG) &&
		 same(t->defrag_src, THPD_SRC_CONFIG) && strcmp(t->defrag, cf_defrag) == 0)
		t->rfc = cf_rfc;
	t->shmem_src = pick(t->shmem, sizeof(t->shmem), cl ? cl->shmem : NULL, p->shmem, cfg->shmem,
			    o && o->have_shmem ? o->shmem : NULL);
}

void thpd_target_compute(const struct thpd_inputs *in, struct thpd_target *t)
{
	const struct thp_cmdline *cl = in->cfg->honor_kernel_cmdline ? in->cmdline : NULL;
	const struct thpd_originals *o = in->originals;

	memset(t, 0, sizeof(*t));
	top_level(in, cl, t);
	for (unsigned long kib = 8; kib <= 1024UL * 1024; kib <<= 1) {
		struct thpd_size_target *z = &t->sizes[t->n_sizes];
		const struct thpd_size_config *c = thpd_config_size(in->cfg, kib);
		const struct thpd_persist_size *p = NULL;
		const struct thpd_original_size *os = original_size(o, kib);

		for (unsigned int i = 0; i < in->persist->n_sizes; i++)
			if (in->persist->sizes[i].kib == kib)
				p = &in->persist->sizes[i];
		memset(z, 0, sizeof(*z));
		z->kib = kib;
		z->cfg = c;
		z->enabled_src = pick(z->enabled, sizeof(z->enabled),
				      cl ? thp_cmdline_size_word(cl, THP_KNOB_SIZE_ENABLED, kib) : NULL,
				      p ? p->enabled : NULL, c ? c->enabled : NULL,
				      os && os->have_enabled ? os->enabled : NULL);
		z->shmem_src = pick(z->shmem, sizeof(z->shmem),
				    cl ? thp_cmdline_size_word(cl, THP_KNOB_SIZE_SHMEM_ENABLED, kib) : NULL,
				    p ? p->shmem : NULL, c ? c->shmem : NULL,
				    os && os->have_shmem ? os->shmem : NULL);
		if (z->enabled_src || z->shmem_src)
			t->n_sizes++;
	}
	for (int k = 0; k < THPD_KH_N; k++) {
		if (in->persist->kh_set[k]) {
			t->kh_set[k] = true;
			t->kh[k] = in->persist->kh[k];
			t->kh_src[k] = THPD_SRC_PERSIST;
		} else if (in->cfg->kh_set[k]) {
			t->kh_set[k] = true;
			t->kh[k] = in->cfg->kh_val[k];
			t->kh_src[k] = THPD_SRC_CONFIG;
		} else if (o && o->have_kh[k]) {
			t->kh_set[k] = true;
			t->kh[k] = o->kh[k];
			t->kh_src[k] = THPD_SRC_ORIGINAL;
		}
	}
}

void thpd_target_originals(const struct thpd_originals *o, struct thpd_target *t)
{
	memset(t, 0, sizeof(*t));
	t->rfc = -1;
	t->enabled_src = pick(t->enabled, sizeof(t->enabled), NULL, NULL, NULL,
			      o->have_enabled ? o->enabled : NULL);
	t->defrag_src = pick(t->defrag, sizeof(t->defrag), NULL, NULL, NULL,
			     o->have_defrag ? o->defrag : NULL);
	t->shmem_src = pick(t->shmem, sizeof(t->shmem), NULL, NULL, NULL,
			    o->have_shmem ? o->shmem : NULL);
	for (unsigned int i = 0; i < o->n_sizes && t->n_sizes < THPD_TARGET_SIZES; i++) {
		const struct thpd_original_size *os = &o->sizes[i];
		struct thpd_size_target *z = &t->sizes[t->n_sizes++];

		z->kib = os->kib;
		z->enabled_src = pick(z->enabled, sizeof(z->enabled), NULL, NULL, NULL,
				      os->have_enabled ? os->enabled : NULL);
		z->shmem_src = pick(z->shmem, sizeof(z->shmem), NULL, NULL, NULL,
				    os->have_shmem ? os->shmem : NULL);
	}
	for (int k = 0; k < THPD_KH_N; k++) {
		t->kh_set[k] = o->have_kh[k];
		t->kh[k] = o->kh[k];
		t->kh_src[k] = o->have_kh[k] ? THPD_SRC_ORIGINAL : NULL;
	}
}

const struct thpd_size_target *thpd_target_size(const struct thpd_target *t, unsigned long kib)
{
	for (unsigned int i = 0; i < t->n_sizes; i++)
		if (t->sizes[i].kib == kib)
			return &t->sizes[i];
	return NULL;
}
