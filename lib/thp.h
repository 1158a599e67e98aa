/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libthp: what thpctl and thpd share — THP sysfs/procfs access, mode names,
 * counter parsing and the thpd socket protocol — and the aligned mappings the
 * test helpers and benchmarks fault in. See docs/abi.md.
 *
 * Every function returns 0 (or a non-negative value) on success and -errno on
 * failure; none of them prints anything.
 */
#ifndef THP_H
#define THP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define THP_SYSFS_DIR "/sys/kernel/mm/transparent_hugepage"
#define THP_SOCKET_PATH "/run/thpd.sock"
#define THP_MSG_MAX 4096

/*
 * per-process policy prctl (patched kernel; see docs/abi.md). Our own names:
 * PR_SET_THP_POLICY is an unmerged upstream proposal with other values, and
 * a libc header that ever carried it must not be taken for ours.
 */
#ifndef PR_SET_THP_MM_POLICY
#define PR_SET_THP_MM_POLICY 0x54485001
#define PR_GET_THP_MM_POLICY 0x54485002
#define PR_THP_MM_POLICY_DEFAULT 0
#define PR_THP_MM_POLICY_ADVISE 1
#define PR_THP_MM_POLICY_NEVER 2
#endif

/*
 * Modes. A word sets `enabled` only; an RFC number sets enabled and defrag
 * together (docs/abi.md): 0 = madvise/madvise, 1 = always/madvise,
 * 2 = always/always.
 */
enum thp_enabled { THP_NEVER, THP_MADVISE, THP_ALWAYS };

struct thp_mode_req {
	enum thp_enabled enabled;
	const char *defrag;	/* NULL: leave defrag alone */
	int rfc;		/* 0/1/2, or -1 when given as a word */
};

/* "always"/"madvise"/"never"/"0"/"1"/"2" -> req; -EINVAL otherwise */
int thp_mode_parse(const char *s, struct thp_mode_req *req);
const char *thp_enabled_name(enum thp_enabled e);
int thp_enabled_from_name(const char *s);	/* enum value or -EINVAL */
/* "always"/"defer"/"defer+madvise"/"madvise"/"never" -> 0, else -EINVAL */
int thp_defrag_valid(const char *s);
/* the RFC number for a state: "0"/"1"/"2"/"never" */
const char *thp_rfc_mode(enum thp_enabled e, const char *defrag);
/*
 * What RFC mode 0, 1 or 2 means, in a few words for people ("hugepages only
 * in MADV_HUGEPAGE regions"), so that a bare 0 is never read as "off";
 * NULL for anything else
 */
const char *thp_rfc_meaning(int rfc);

/*
 * Root prefix for every sysfs/procfs path libthp touches: "" on a real
 * system; tests point it at a fake tree (THP_ROOT in the environment is read
 * by thp_root_init()). A root of THP_ROOT_MAX bytes or more is refused with
 * -ENAMETOOLONG, never truncated: from then on every path fails with
 * -ENAMETOOLONG until a valid root is set.
 */
#define THP_ROOT_MAX 1024
int thp_set_root(const char *root);
const char *thp_root(void);
int thp_root_init(void);
/* "<root><path>" into buf; -ENAMETOOLONG if it does not fit */
int thp_path(char *buf, size_t size, const char *path);

/*
 * whole small file (sysfs/procfs), NUL-terminated, trailing newline kept;
 * returns its length, or -EFBIG if it does not fit in size - 1 bytes
 * (refused, never truncated)
 */
int thp_read_file(const char *path, char *buf, size_t size);
/* write a value the way `echo value > path` does, checking every error */
int thp_write_file(const char *path, const char *value);

/* does "<root><path>" exist? (feature detection) */
bool thp_exists(const char *path);

/* "always [madvise] never" -> "madvise" (copied into out) */
int thp_parse_bracketed(const char *text, char *out, size_t size);

/*
 * --- the model of the kernel's THP controls (lib/thp-model.c) ---
 *
 * What each knob's words mean is static knowledge (one table, below, read by
 * thpctl, thpd and the fuzzers); which knobs, sizes and words the running
 * kernel offers is found at run time by probing THP_SYSFS_DIR, never from a
 * version number (docs/abi.md, "Kernel generations").
 */
enum thp_knob_id {
	THP_KNOB_ENABLED,		/* enabled: always madvise never */
	THP_KNOB_DEFRAG,		/* defrag */
	THP_KNOB_SHMEM_ENABLED,		/* shmem_enabled: always within_size advise never deny force */
	THP_KNOB_SIZE_ENABLED,		/* hugepages-<N>kB/enabled (6.8+): + inherit */
	THP_KNOB_SIZE_SHMEM_ENABLED,	/* hugepages-<N>kB/shmem_enabled (6.11+): + inherit */
	THP_KNOB_COUNT
};

struct thp_word_info {
	const char *word;
	const char *meaning;	/* one line, for --help, messages and thpctl(1) */
};

struct thp_knob_info {
	const char *file;	/* under THP_SYSFS_DIR, or under hugepages-<N>kB/ */
	bool per_size;
	const struct thp_word_info *words;	/* every word a kernel may list, NULL-ended */
};

const struct thp_knob_info *thp_knob(enum thp_knob_id id);
/* is word one of the words this knob may take on some kernel? */
bool thp_knob_word_known(enum thp_knob_id id, const char *word);
/* "always, madvise or never" into buf (for messages) */
const char *thp_knob_words_text(enum thp_knob_id id, char *buf, size_t size);
/* what thp_mode_parse() takes: "always, madvise, never, 0, 1 or 2" */
const char *thp_mode_words_text(char *buf, size_t size);

/* one bracketed word list as a kernel prints it: "always [madvise] never" */
#define THP_WORDS_MAX 8
#define THP_WORD_LEN 16
struct thp_choice {
	int n;			/* number of words; 0: the file does not exist */
	int cur;		/* index of the bracketed word */
	char word[THP_WORDS_MAX][THP_WORD_LEN];
};

/* exactly one bracketed word, at most THP_WORDS_MAX words: else -EBADMSG */
int thp_choice_parse(const char *text, struct thp_choice *c);
/* the bracketed word, NULL when the knob is absent */
const char *thp_choice_value(const struct thp_choice *c);
/* does the running kernel list this word for the knob? */
bool thp_choice_offers(const struct thp_choice *c, const char *word);

/*
 * Effective state of one size: can memory get a folio of that size at fault
 * everywhere (ALWAYS), only in MADV_HUGEPAGE regions (ADVISE), for shmem only
 * when it lies within i_size (WITHIN_SIZE), or not at all (NEVER).
 */
enum thp_eff { THP_EFF_NEVER, THP_EFF_ADVISE, THP_EFF_WITHIN_SIZE, THP_EFF_ALWAYS };
/* "never", "madvise"/"advise" (shmem), "within_size", "always" */
const char *thp_eff_name(enum thp_eff e, bool shmem);

/*
 * Pure: anonymous memory at one size, from the size's own value (always,
 * inherit, madvise, never; NULL on a kernel without per-size controls, where
 * the size follows enabled) and the top-level enabled word. A per-size value
 * other than inherit wins over enabled. -EINVAL for an unknown word.
 */
int thp_anon_effective(const char *size_value, const char *enabled);
/*
 * Pure: anonymous shmem (memfd, SysV SHM, MAP_SHARED|MAP_ANONYMOUS; tmpfs
 * mounts follow their huge= option) at one size, from the size's
 * shmem_enabled (NULL where the kernel has none: the PMD size follows the
 * top-level value, other sizes get none), the top-level shmem_enabled and
 * whether the size is the PMD size. deny turns every size off; force turns
 * on the sizes that inherit and only them; inherit follows the top level.
 */
int thp_shmem_effective(const char *size_value, const char *shmem_enabled, bool pmd);

/*
 * Every hugepage size there can be: each power of two from 8K (order 1,
 * the smallest mTHP) to 1G, 18 of them. A [Size N] for each, a request
 * naming them all and a kernel offering them all must fit.
 */
#define THP_SIZE_MIN_KIB 8UL
#define THP_SIZE_MAX_KIB (1024UL * 1024)
#define THP_SIZES_MAX 18
_Static_assert(THP_SIZE_MAX_KIB / THP_SIZE_MIN_KIB == 1UL << (THP_SIZES_MAX - 1),
	       "THP_SIZES_MAX is the count of powers of two from 8K to 1G");
#define THP_STATS_MAX 32
#define THP_EXTRA_MAX 8

struct thp_stat {
	char name[40];
	uint64_t value;
};

struct thp_size {
	unsigned long kib;
	bool has_dir;		/* false: the PMD size of a kernel without hugepages-<N>kB */
	struct thp_choice enabled;	/* n == 0: no anonymous control at this size */
	struct thp_choice shmem_enabled;	/* n == 0: no shmem control at this size */
	int nstats;
	struct thp_stat stats[THP_STATS_MAX];	/* stats/, in name order */
};

struct thp_model {
	struct thp_choice enabled, defrag, shmem_enabled;
	int use_zero_page;	/* 0/1, -1: no such file */
	int shrink_underused;	/* 0/1, -1: no such file (before 6.12) */
	char mode[16];		/* our kernel's mode file, "" where absent */
	unsigned long pmd_kib;	/* hpage_pmd_size / 1024 (2048 where absent) */
	bool per_size;		/* the kernel has hugepages-<N>kB directories */
	int nsizes;
	struct thp_size size[THP_SIZES_MAX];	/* ascending; always holds the PMD size */
	int nextra;		/* other top-level files, shown as they read */
	struct {
		char name[32];
		char value[64];
	} extra[THP_EXTRA_MAX];
};

/*
 * Probe <root>THP_SYSFS_DIR. enabled must exist (else its -errno); every
 * other file is optional; a file that exists but does not parse is -EBADMSG.
 */
int thp_model_read(struct thp_model *m);
/* the same without the sizes' stats/ (what a caller on a hot path needs) */
int thp_model_read_controls(struct thp_model *m);
const struct thp_size *thp_model_size(const struct thp_model *m, unsigned long kib);
const struct thp_size *thp_model_pmd(const struct thp_model *m);
/* effective states of a size of m (s from m->size[]) */
enum thp_eff thp_size_anon_eff(const struct thp_model *m, const struct thp_size *s);
enum thp_eff thp_size_shmem_eff(const struct thp_model *m, const struct thp_size *s);
/* is some size of m used at fault for anonymous memory (for shmem), now? */
bool thp_model_anon_on(const struct thp_model *m);
bool thp_model_shmem_on(const struct thp_model *m);
/* "64K", "2M", "1G"; "64K,2M" lists; "all" is not a size (the caller's word) */
int thp_size_parse(const char *s, unsigned long *kib);
const char *thp_size_name(unsigned long kib, char *buf, size_t size);
/* THP_SYSFS_DIR "/hugepages-<kib>kB/<file>" into buf */
int thp_size_path(unsigned long kib, const char *file, char *buf, size_t size);
/*
 * Write word to a size's enabled (THP_KNOB_SIZE_ENABLED) or shmem_enabled
 * (THP_KNOB_SIZE_SHMEM_ENABLED), or to the top-level knob (kib 0), checked
 * against m first: -ENOENT for a size the kernel does not have,
 * -EOPNOTSUPP for a knob it does not have there, -EINVAL for a word it does
 * not list; else the write's -errno. On success m holds the new value (a
 * sysfs store either takes the word whole or fails), so the caller can tell
 * what the kernel is left in without reading it back.
 */
int thp_knob_set(struct thp_model *m, enum thp_knob_id knob, unsigned long kib,
		 const char *word);
/* make word the current one of c (after a write); -EINVAL if c does not list it */
int thp_choice_set(struct thp_choice *c, const char *word);

/*
 * --- the kernel command line (lib/thp-cmdline.c) ---
 *
 * The THP parameters of /proc/cmdline, read exactly as the kernel reads
 * them at boot: words split as lib/cmdline.c next_arg() splits them (a
 * quoted value is one word and loses its quotes; a parameter inside
 * another's quoted value is not a parameter), nothing after "--" (init's
 * arguments), '-' and '_' alike in names, each parameter checked by its
 * kernel handler and ignored whole when that refuses it (a later valid one
 * of the same name still counts; thp_anon= and thp_shmem= add to the
 * earlier ones). Sizes as memparse() reads them (hex, octal, K/M/G), on
 * x86-64's 4 KiB pages: thp_anon= takes 16K to 2M, thp_shmem= 8K to 2M.
 * Whether the running kernel has a handler at all is the caller's to find.
 */
#define THP_CMDLINE_ORDERS 19	/* orders 0..18: 4K to 1G */
#define THP_CMDLINE_WORD 16
/* transparent_hugepage= takes the RFC numbers 0/1/2 (the kernel with the series) */
#define THP_CMDLINE_NUMBERS (1u << 0)

enum thp_cmdline_param {
	THP_CMDLINE_THP,		/* transparent_hugepage= */
	THP_CMDLINE_SHMEM,		/* transparent_hugepage_shmem= (6.14+) */
	THP_CMDLINE_ANON,		/* thp_anon= (6.9+) */
	THP_CMDLINE_SHMEM_SIZES,	/* thp_shmem= (6.14+) */
	THP_CMDLINE_N
};

struct thp_cmdline {
	char thp[THP_CMDLINE_WORD];	/* the value the kernel took, "" */
	char shmem[THP_CMDLINE_WORD];
	bool anon_set;			/* a thp_anon= was taken: sizes it names none of are never */
	char anon[THP_CMDLINE_ORDERS][THP_CMDLINE_WORD];	/* per order, "" = not named */
	bool shmem_sizes_set;
	char shmem_sizes[THP_CMDLINE_ORDERS][THP_CMDLINE_WORD];
	unsigned int refused[THP_CMDLINE_N];	/* occurrences the kernel ignored */
	unsigned int for_init;		/* THP parameters after "--": init's, not the kernel's */
};

/* parse /proc/cmdline text (a trailing "\n" is the file's, not the line's); 0 or -ENOMEM */
int thp_cmdline_parse(const char *text, unsigned int flags, struct thp_cmdline *cl);
/*
 * the word thp_anon= (THP_KNOB_SIZE_ENABLED) or thp_shmem=
 * (THP_KNOB_SIZE_SHMEM_ENABLED) gives the size kib, NULL when none names it
 */
const char *thp_cmdline_size_word(const struct thp_cmdline *cl, enum thp_knob_id knob,
				  unsigned long kib);
/*
 * What the kernel took, as the kernel command line that says just that
 * ("transparent_hugepage=never thp_anon=16K:always;2M:inherit", and
 * transparent_hugepage_shmem=, thp_shmem= likewise), then what it did not:
 * " refused=thp_anon:1" (occurrences refused whole), " for_init=1"; "-"
 * when the line sets nothing. For tests and messages.
 */
const char *thp_cmdline_format(const struct thp_cmdline *cl, char *buf, size_t size);
/* "transparent_hugepage", "transparent_hugepage_shmem", "thp_anon", "thp_shmem" */
const char *thp_cmdline_param_name(enum thp_cmdline_param p);

/*
 * The values the kernel boots with, as far as they can be known (thpctl
 * reset without thpd, thpctl(1) BOOT DEFAULTS): from what its command line
 * set (cl), its build configuration (kconfig: the text of
 * /boot/config-<release>, NULL when unknown) and its memory (memtotal_kib:
 * MemTotal, 0 when unknown; below 512 MiB the kernel turns THP off at
 * boot). Each value says where it comes from; "" where it cannot be known
 * (enabled without a command line value or kconfig, shmem_enabled without
 * kconfig). khugepaged's knobs are not among them.
 */
struct thp_boot {
	char enabled[THP_CMDLINE_WORD];
	const char *enabled_why;
	char defrag[THP_CMDLINE_WORD];
	const char *defrag_why;
	char shmem[THP_CMDLINE_WORD];
	const char *shmem_why;
	char anon[THP_CMDLINE_ORDERS][THP_CMDLINE_WORD];	/* per order, every size's */
	const char *anon_why;
	char shmem_sizes[THP_CMDLINE_ORDERS][THP_CMDLINE_WORD];
	const char *shmem_sizes_why;
};

void thp_boot_values(const struct thp_cmdline *cl, const char *kconfig, unsigned long memtotal_kib,
		     struct thp_boot *b);

/* --- system state (lib/thp-state.c) --- */

struct thp_state {
	enum thp_enabled enabled;
	char defrag[16];	/* "always", "defer", "defer+madvise", "madvise", "never" */
	char mode[16];		/* "0"/"1"/"2"/"never"/"custom"/"per-size": the kernel's mode file, else thp_rfc_mode() */
	int rfc;		/* 0/1/2 where the kernel's mode file reads that number, else -1 */
	bool has_mode_file;	/* patched kernel: <root>THP_SYSFS_DIR/mode exists */
	bool has_thp_policy;	/* patched kernel: <root>/proc/self/thp_policy exists */
	bool has_thp_stat;	/* <root>/proc/self/thp_stat exists */
};

int thp_state_read(struct thp_state *st);
/*
 * Apply a parsed mode request: on a patched kernel a number is written to
 * `enabled` as the number (the kernel sets enabled+defrag); on a stock kernel
 * a number is translated to words (enabled, then defrag). A word writes
 * `enabled` only. Returns 0 or -errno of the first failed write; *failed_path
 * (if non-NULL) is set to the sysfs path that failed (without the root
 * prefix; a static string).
 */
int thp_state_apply(const struct thp_mode_req *req, const char **failed_path);
/* write `defrag` (validated first: -EINVAL for an unknown word) */
int thp_defrag_apply(const char *defrag, const char **failed_path);
/* khugepaged knob under THP_SYSFS_DIR/khugepaged/NAME, e.g. "pages_to_scan" */
int thp_khugepaged_read(const char *name, uint64_t *val);
int thp_khugepaged_write(const char *name, uint64_t val);
/*
 * The khugepaged files an administrator sets (defrag, pages_to_scan,
 * scan_sleep_millisecs, alloc_sleep_millisecs, max_ptes_none,
 * max_ptes_swap, max_ptes_shared), NULL-ended; the others there
 * (pages_collapsed, full_scans) are counters.
 */
extern const char *const thp_khugepaged_settings[];
/*
 * The values the kernel takes for setting name, as its stores check them:
 * defrag 0 or 1, pages_to_scan 1 up, the sleeps 0 up (an unsigned int),
 * max_ptes_* up to one less than the pages of a PMD (pmd_pages: the PMD size
 * over the page size). -EINVAL for a name that is not a setting.
 */
int thp_khugepaged_limits(const char *name, unsigned long pmd_pages, uint64_t *min,
			  uint64_t *max);

/* --- procfs (lib/thp-proc.c) --- */

/*
 * "name value" (vmstat, thp_stat) or "Name: value kB" (meminfo,
 * smaps_rollup) text: find the line whose first word is key (an optional ':'
 * after it), parse its value. -ENOENT if absent, -EBADMSG if not a number.
 */
int thp_kv_get(const char *text, const char *key, uint64_t *val);
/*
 * Free blocks of order >= min_order summed over all zones of
 * <root>/proc/buddyinfo, counted in units of order-min_order blocks (an
 * order-10 block counts 2 for min_order 9). Returns the count or -errno.
 */
long thp_buddyinfo_free_blocks(int min_order);
/* per-process policy: "default"/"advise"/"never" <-> PR_THP_MM_POLICY_* */
int thp_policy_from_name(const char *s);	/* value or -EINVAL */
const char *thp_policy_name(int policy);	/* "unknown" if out of range */
/*
 * <root>/proc/<pid>/thp_policy read/write (patched kernel); -ENOENT on a
 * stock kernel or a gone process. pid <= 0 means "self".
 */
int thp_policy_get(pid_t pid, int *policy);
int thp_policy_set(pid_t pid, int policy);
/*
 * A "Name: N kB" field (e.g. "AnonHugePages") of the VMA containing addr in
 * <root>/proc/<pid>/smaps, in KiB. pid <= 0 means "self". -ENOENT if no VMA
 * contains addr or it has no such field.
 */
int thp_smaps_vma_kib(pid_t pid, unsigned long addr, const char *field, long *kib);

/* --- memory (lib/thp-mmap.c) --- */

/*
 * A private anonymous read-write mapping of size bytes at an align-aligned
 * address (align: a power of two, at least a page), with flags added to
 * MAP_PRIVATE | MAP_ANONYMOUS (e.g. MAP_NORESERVE). The slack mapped to
 * align it is unmapped again, so the region is a VMA of its own; munmap(addr,
 * size) releases it. -EINVAL for a size of 0 or a bad align.
 */
int thp_mmap_aligned(size_t size, size_t align, int flags, void **addr);

#endif
