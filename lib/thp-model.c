// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The one model of the kernel's THP controls: a static table of what each
 * knob's words mean, and a probe of THP_SYSFS_DIR that finds which knobs,
 * sizes and words the running kernel offers (docs/abi.md, "Kernel
 * generations"). The effective-state functions are pure, so host tests feed
 * them every combination.
 */
#include "thp.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the words of every kernel generation; the running kernel lists its own */
static const struct thp_word_info enabled_words[] = {
	{ "always", "hugepages at fault in every anonymous region" },
	{ "madvise", "hugepages only in MADV_HUGEPAGE regions" },
	{ "never", "no hugepages at fault (MADV_COLLAPSE still works)" },
	{}
};

static const struct thp_word_info defrag_words[] = {
	{ "always", "stall in direct reclaim and compaction for a hugepage" },
	{ "defer", "wake kswapd and kcompactd, take a hugepage only if one is free" },
	{ "defer+madvise", "stall in MADV_HUGEPAGE regions, defer elsewhere" },
	{ "madvise", "stall in MADV_HUGEPAGE regions, take only free hugepages elsewhere" },
	{ "never", "never stall: only free hugepages" },
	{}
};

static const struct thp_word_info shmem_words[] = {
	{ "always", "shmem hugepages whenever possible" },
	{ "within_size", "shmem hugepages that lie within i_size" },
	{ "advise", "shmem hugepages only in MADV_HUGEPAGE regions" },
	{ "never", "no shmem hugepages (tmpfs mounts keep their huge= option)" },
	{ "deny", "no shmem hugepages anywhere, tmpfs mounts included" },
	{ "force", "shmem hugepages everywhere, tmpfs mounts included (testing)" },
	{}
};

static const struct thp_word_info size_words[] = {
	{ "always", "this size at fault in every anonymous region" },
	{ "inherit", "this size follows the top-level enabled" },
	{ "madvise", "this size only in MADV_HUGEPAGE regions" },
	{ "never", "this size never, whatever enabled says" },
	{}
};

static const struct thp_word_info size_shmem_words[] = {
	{ "always", "this size for shmem whenever possible" },
	{ "inherit", "this size follows the top-level shmem_enabled" },
	{ "within_size", "this size for shmem within i_size" },
	{ "advise", "this size for shmem only in MADV_HUGEPAGE regions" },
	{ "never", "this size never for shmem" },
	{}
};

static const struct thp_knob_info knobs[THP_KNOB_COUNT] = {
	[THP_KNOB_ENABLED] = { "enabled", false, enabled_words },
	[THP_KNOB_DEFRAG] = { "defrag", false, defrag_words },
	[THP_KNOB_SHMEM_ENABLED] = { "shmem_enabled", false, shmem_words },
	[THP_KNOB_SIZE_ENABLED] = { "enabled", true, size_words },
	[THP_KNOB_SIZE_SHMEM_ENABLED] = { "shmem_enabled", true, size_shmem_words },
};

const struct thp_knob_info *thp_knob(enum thp_knob_id id)
{
	return (unsigned int)id < THP_KNOB_COUNT ? &knobs[id] : NULL;
}

bool thp_knob_word_known(enum thp_knob_id id, const char *word)
{
	const struct thp_knob_info *k = thp_knob(id);

	if (!k)
		return false;
	for (const struct thp_word_info *w = k->words; w->word; w++)
		if (strcmp(w->word, word) == 0)
			return true;
	return false;
}

/* "a, b or c" of the knob's words, then of extra (NULL-ended) */
static const char *words_text(enum thp_knob_id id, const char *const *extra, char *buf,
			      size_t size)
{
	const struct thp_knob_info *k = thp_knob(id);
	const char *all[THP_WORDS_MAX + 4];
	size_t n = 0, len = 0;

	if (size == 0)
		return buf;
	buf[0] = '\0';
	if (!k)
		return buf;
	for (const struct thp_word_info *w = k->words; w->word && n < THP_WORDS_MAX; w++)
		all[n++] = w->word;
	for (; extra && *extra && n < THP_WORDS_MAX + 4; extra++)
		all[n++] = *extra;
	for (size_t i = 0; i < n && len < size; i++) {
		int r = snprintf(buf + len, size - len, "%s%s",
				 i == 0 ? "" : i + 1 == n ? " or " : ", ", all[i]);

		if (r < 0)
			break;
		len += (size_t)r;
	}
	return buf;
}

const char *thp_knob_words_text(enum thp_knob_id id, char *buf, size_t size)
{
	return words_text(id, NULL, buf, size);
}

const char *thp_mode_words_text(char *buf, size_t size)
{
	static const char *const rfc[] = { "0", "1", "2", NULL };

	return words_text(THP_KNOB_ENABLED, rfc, buf, size);
}

static int parse_choice(const char *p, struct thp_choice *c)
{

	memset(c, 0, sizeof(*c));
	c->cur = -1;
	for (;;) {
		size_t len;
		bool br;

		p += strspn(p, " \t\n");
		if (!*p)
			break;
		len = strcspn(p, " \t\n");
		br = p[0] == '[';
		if (br) {
			if (len < 3 || p[len - 1] != ']' || c->cur >= 0)
				return -EBADMSG;
			p++;
			len -= 2;
		}
		if (c->n == THP_WORDS_MAX || len >= THP_WORD_LEN || memchr(p, '[', len) ||
		    memchr(p, ']', len))
			return -EBADMSG;
		memcpy(c->word[c->n], p, len);
		c->word[c->n][len] = '\0';
		if (br)
			c->cur = c->n;
		c->n++;
		p += len + (br ? 1 : 0);
	}
	return c->cur < 0 ? -EBADMSG : 0;
}

int thp_choice_parse(const char *text, struct thp_choice *c)
{
	int r = parse_choice(text, c);

	if (r < 0)
		memset(c, 0, sizeof(*c));	/* absent, not half-read */
	return r;
}

const char *thp_choice_value(const struct thp_choice *c)
{
	return c->n > 0 && c->cur >= 0 ? c->word[c->cur] : NULL;
}

bool thp_choice_offers(const struct thp_choice *c, const char *word)
{
	for (int i = 0; i < c->n; i++)
		if (strcmp(c->word[i], word) == 0)
			return true;
	return false;
}

const char *thp_eff_name(enum thp_eff e, bool shmem)
{
	switch (e) {
	case THP_EFF_ALWAYS:
		return "always";
	case THP_EFF_WITHIN_SIZE:
		return "within_size";
	case THP_EFF_ADVISE:
		return shmem ? "advise" : "madvise";
	default:
		return "never";
	}
}

static int anon_word(const char *w)
{
	if (strcmp(w, "always") == 0)
		return THP_EFF_ALWAYS;
	if (strcmp(w, "madvise") == 0)
		return THP_EFF_ADVISE;
	if (strcmp(w, "never") == 0)
		return THP_EFF_NEVER;
	return -EINVAL;
}

int thp_anon_effective(const char *size_value, const char *enabled)
{
	if (size_value && strcmp(size_value, "inherit") != 0)
		return anon_word(size_value);
	return enabled ? anon_word(enabled) : -EINVAL;
}

static int shmem_word(const char *w)
{
	if (strcmp(w, "always") == 0 || strcmp(w, "force") == 0)
		return THP_EFF_ALWAYS;
	if (strcmp(w, "within_size") == 0)
		return THP_EFF_WITHIN_SIZE;
	if (strcmp(w, "advise") == 0)
		return THP_EFF_ADVISE;
	if (strcmp(w, "never") == 0 || strcmp(w, "deny") == 0)
		return THP_EFF_NEVER;
	return -EINVAL;
}

int thp_shmem_effective(const char *size_value, const char *shmem_enabled, bool pmd)
{
	int top, own;

	/* a kernel without shmem THP controls has no shmem hugepages */
	if (!shmem_enabled)
		return THP_EFF_NEVER;
	top = shmem_word(shmem_enabled);
	if (top < 0)
		return top;
	if (!size_value)
		return pmd ? top : THP_EFF_NEVER;
	if (strcmp(size_value, "inherit") == 0)
		return top;
	own = shmem_word(size_value);
	if (own < 0 || strcmp(size_value, "force") == 0)
		return -EINVAL;
	/* deny: off everywhere; force: the inherit sizes and only them */
	if (strcmp(shmem_enabled, "deny") == 0 || strcmp(shmem_enabled, "force") == 0)
		return THP_EFF_NEVER;
	return own;
}

static int read_choice(const char *path, struct thp_choice *c)
{
	char buf[256];
	int r = thp_read_file(path, buf, sizeof(buf));

	memset(c, 0, sizeof(*c));
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	return thp_choice_parse(buf, c);
}

static int read_number(const char *path, unsigned long long *v)
{
	char buf[64], *end;
	int r = thp_read_file(path, buf, sizeof(buf));

	if (r < 0)
		return r;
	if (buf[0] < '0' || buf[0] > '9')
		return -EBADMSG;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	if (errno || (*end && *end != '\n'))
		return -EBADMSG;
	return 0;
}

/* a 0/1 file: its value, -1 when absent */
static int read_flag(const char *path, int *out)
{
	unsigned long long v;
	int r = read_number(path, &v);

	*out = -1;
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (v > 1)
		return -EBADMSG;
	*out = (int)v;
	return 0;
}

static int cmp_stat(const void *a, const void *b)
{
	return strcmp(((const struct thp_stat *)a)->name, ((const struct thp_stat *)b)->name);
}

static int read_stats(struct thp_size *s)
{
	char dir[256], full[4096];
	struct dirent *de;
	DIR *d;
	int r = 0;

	r = thp_size_path(s->kib, "stats", dir, sizeof(dir));
	if (r < 0)
		return r;
	r = thp_path(full, sizeof(full), dir);
	if (r < 0)
		return r;
	d = opendir(full);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d)) && r == 0) {
		char path[600];
		unsigned long long v;
		struct thp_stat *st;

		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(st->name))
			continue;
		if (s->nstats == THP_STATS_MAX)
			break;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		r = read_number(path, &v);
		if (r < 0)
			break;
		st = &s->stats[s->nstats++];
		strcpy(st->name, de->d_name);	/* length checked above */
		st->value = v;
	}
	closedir(d);
	qsort(s->stats, (size_t)s->nstats, sizeof(s->stats[0]), cmp_stat);
	return r;
}

static int read_size(struct thp_size *s, bool stats)
{
	char path[256];
	int r;

	s->has_dir = true;
	r = thp_size_path(s->kib, "enabled", path, sizeof(path));
	if (r == 0)
		r = read_choice(path, &s->enabled);
	if (r == 0)
		r = thp_size_path(s->kib, "shmem_enabled", path, sizeof(path));
	if (r == 0)
		r = read_choice(path, &s->shmem_enabled);
	return r < 0 || !stats ? r : read_stats(s);
}

static int cmp_size(const void *a, const void *b)
{
	unsigned long x = ((const struct thp_size *)a)->kib, y = ((const struct thp_size *)b)->kib;

	return x < y ? -1 : x > y;
}

static const char *const known_files[] = {
	"enabled", "defrag", "shmem_enabled", "use_zero_page", "shrink_underused",
	"mode", "hpage_pmd_size",
};

static bool is_known_file(const char *name)
{
	for (size_t i = 0; i < sizeof(known_files) / sizeof(known_files[0]); i++)
		if (strcmp(name, known_files[i]) == 0)
			return true;
	return false;
}

/* the hugepages-<N>kB directories and the other top-level files */
static int scan_dir(struct thp_model *m, bool stats)
{
	char full[4096];
	struct dirent *de;
	DIR *d;
	int r = thp_path(full, sizeof(full), THP_SYSFS_DIR);

	if (r < 0)
		return r;
	d = opendir(full);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && r == 0) {
		unsigned long kib;
		char tail[4], path[512];

		if (sscanf(de->d_name, "hugepages-%lu%3s", &kib, tail) == 2 &&
		    strcmp(tail, "kB") == 0 && kib > 0) {
			if (m->nsizes == THP_SIZES_MAX)
				continue;
			m->size[m->nsizes].kib = kib;
			r = read_size(&m->size[m->nsizes], stats);
			m->nsizes++;
			m->per_size = true;
		} else if (de->d_type != DT_DIR && de->d_name[0] != '.' &&
			   !is_known_file(de->d_name) && m->nextra < THP_EXTRA_MAX &&
			   strlen(de->d_name) < sizeof(m->extra[0].name)) {
			char *v = m->extra[m->nextra].value;

			snprintf(path, sizeof(path), THP_SYSFS_DIR "/%s", de->d_name);
			if (thp_read_file(path, v, sizeof(m->extra[0].value)) < 0)
				continue;	/* write-only or unreadable: nothing to show */
			v[strcspn(v, "\n")] = '\0';
			strcpy(m->extra[m->nextra].name, de->d_name);	/* length checked */
			m->nextra++;
		}
	}
	closedir(d);
	return r;
}

static int model_read(struct thp_model *m, bool stats)
{
	unsigned long long v;
	char buf[256];
	int r;

	memset(m, 0, sizeof(*m));
	r = thp_read_file(THP_SYSFS_DIR "/enabled", buf, sizeof(buf));	/* must exist */
	if (r < 0)
		return r;
	r = read_choice(THP_SYSFS_DIR "/enabled", &m->enabled);
	if (r == 0 && anon_word(thp_choice_value(&m->enabled)) < 0)
		r = -EBADMSG;
	if (r == 0)
		r = read_choice(THP_SYSFS_DIR "/defrag", &m->defrag);
	if (r == 0)
		r = read_choice(THP_SYSFS_DIR "/shmem_enabled", &m->shmem_enabled);
	if (r == 0 && m->shmem_enabled.n && shmem_word(thp_choice_value(&m->shmem_enabled)) < 0)
		r = -EBADMSG;
	if (r == 0)
		r = read_flag(THP_SYSFS_DIR "/use_zero_page", &m->use_zero_page);
	if (r == 0)
		r = read_flag(THP_SYSFS_DIR "/shrink_underused", &m->shrink_underused);
	if (r < 0)
		return r;
	m->pmd_kib = 2048;
	r = read_number(THP_SYSFS_DIR "/hpage_pmd_size", &v);
	if (r == 0 && v >= 1024)
		m->pmd_kib = (unsigned long)(v / 1024);
	else if (r != -ENOENT && r < 0)
		return r;
	r = thp_read_file(THP_SYSFS_DIR "/mode", m->mode, sizeof(m->mode));
	if (r >= 0)
		m->mode[strcspn(m->mode, "\n")] = '\0';
	else
		m->mode[0] = '\0';
	r = scan_dir(m, stats);
	if (r < 0)
		return r;
	/* a kernel without per-size controls still has its PMD size */
	if (!thp_model_size(m, m->pmd_kib) && m->nsizes < THP_SIZES_MAX)
		m->size[m->nsizes++].kib = m->pmd_kib;
	qsort(m->size, (size_t)m->nsizes, sizeof(m->size[0]), cmp_size);
	for (int i = 0; i < m->nsizes; i++) {
		const struct thp_size *s = &m->size[i];

		if ((s->enabled.n && anon_word(thp_choice_value(&s->enabled)) < 0 &&
		     strcmp(thp_choice_value(&s->enabled), "inherit")) ||
		    (s->shmem_enabled.n && thp_shmem_effective(thp_choice_value(&s->shmem_enabled),
							      "never", false) < 0))
			return -EBADMSG;
	}
	return 0;
}

int thp_model_read(struct thp_model *m)
{
	return model_read(m, true);
}

int thp_model_read_controls(struct thp_model *m)
{
	return model_read(m, false);
}

const struct thp_size *thp_model_size(const struct thp_model *m, unsigned long kib)
{
	for (int i = 0; i < m->nsizes; i++)
		if (m->size[i].kib == kib)
			return &m->size[i];
	return NULL;
}

const struct thp_size *thp_model_pmd(const struct thp_model *m)
{
	return thp_model_size(m, m->pmd_kib);
}

enum thp_eff thp_size_anon_eff(const struct thp_model *m, const struct thp_size *s)
{
	int e;

	/* a size without an anonymous control (a kernel's file-only order) */
	if (s->has_dir && !s->enabled.n)
		return THP_EFF_NEVER;
	e = thp_anon_effective(thp_choice_value(&s->enabled), thp_choice_value(&m->enabled));
	return e < 0 ? THP_EFF_NEVER : (enum thp_eff)e;
}

enum thp_eff thp_size_shmem_eff(const struct thp_model *m, const struct thp_size *s)
{
	const char *own = thp_choice_value(&s->shmem_enabled);
	int e;

	/* where sizes have shmem controls, a size without one gets no shmem */
	if (!own)
		for (int i = 0; i < m->nsizes; i++)
			if (m->size[i].shmem_enabled.n)
				return THP_EFF_NEVER;
	e = thp_shmem_effective(own, thp_choice_value(&m->shmem_enabled), s->kib == m->pmd_kib);
	return e < 0 ? THP_EFF_NEVER : (enum thp_eff)e;
}

bool thp_model_anon_on(const struct thp_model *m)
{
	for (int i = 0; i < m->nsizes; i++)
		if (thp_size_anon_eff(m, &m->size[i]) != THP_EFF_NEVER)
			return true;
	return false;
}

bool thp_model_shmem_on(const struct thp_model *m)
{
	for (int i = 0; i < m->nsizes; i++)
		if (thp_size_shmem_eff(m, &m->size[i]) != THP_EFF_NEVER)
			return true;
	return false;
}

int thp_size_parse(const char *s, unsigned long *kib)
{
	unsigned long long v;
	unsigned long mult;
	char *end;

	if (strncmp(s, "hugepages-", 10) == 0)
		s += 10;
	if (*s < '1' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'K': case 'k':
		mult = 1;
		break;
	case 'M': case 'm':
		mult = 1024;
		break;
	case 'G': case 'g':
		mult = 1024 * 1024;
		break;
	default:
		return -EINVAL;
	}
	end++;
	if (strcmp(end, "") && strcmp(end, "B") && strcmp(end, "iB"))
		return -EINVAL;
	if (v > (unsigned long long)(1UL << 30) / mult)
		return -EINVAL;
	*kib = (unsigned long)(v * mult);
	return 0;
}

const char *thp_size_name(unsigned long kib, char *buf, size_t size)
{
	if (kib >= 1024 * 1024 && kib % (1024 * 1024) == 0)
		snprintf(buf, size, "%luG", kib / (1024 * 1024));
	else if (kib >= 1024 && kib % 1024 == 0)
		snprintf(buf, size, "%luM", kib / 1024);
	else
		snprintf(buf, size, "%luK", kib);
	return buf;
}

int thp_size_path(unsigned long kib, const char *file, char *buf, size_t size)
{
	int n = snprintf(buf, size, THP_SYSFS_DIR "/hugepages-%lukB/%s", kib, file);

	return n >= 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

int thp_choice_set(struct thp_choice *c, const char *word)
{
	for (int i = 0; i < c->n; i++)
		if (strcmp(c->word[i], word) == 0) {
			c->cur = i;
			return 0;
		}
	return -EINVAL;
}

int thp_knob_set(struct thp_model *m, enum thp_knob_id knob, unsigned long kib,
		 const char *word)
{
	const struct thp_knob_info *k = thp_knob(knob);
	struct thp_choice *c;
	char path[512];
	int r;

	if (!k || k->per_size != (kib != 0))
		return -EINVAL;
	if (k->per_size) {
		struct thp_size *s = (struct thp_size *)thp_model_size(m, kib);

		if (!s || !s->has_dir)
			return -ENOENT;
		c = knob == THP_KNOB_SIZE_ENABLED ? &s->enabled : &s->shmem_enabled;
		r = thp_size_path(kib, k->file, path, sizeof(path));
		if (r < 0)
			return r;
	} else {
		c = knob == THP_KNOB_ENABLED ? &m->enabled :
		    knob == THP_KNOB_DEFRAG ? &m->defrag : &m->shmem_enabled;
		snprintf(path, sizeof(path), THP_SYSFS_DIR "/%s", k->file);
	}
	if (!c->n)
		return -EOPNOTSUPP;
	if (!thp_choice_offers(c, word))
		return -EINVAL;
	r = thp_write_file(path, word);
	return r < 0 ? r : thp_choice_set(c, word);
}
