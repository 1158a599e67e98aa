// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libthp unit tests against a fake root tree (THP_ROOT-style prefix) built in
 * a temporary directory. Prints TAP.
 */
#include "thp.h"
#include "thp-proto.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256];

static void mkdirs(const char *rel)
{
	char path[PATH_MAX], *p;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	mkdir(path, 0755);
}

/* write a file under the fake root, creating its directory */
static void put(const char *rel, const char *text)
{
	char path[PATH_MAX], dir[PATH_MAX], *slash;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s", rel);
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		mkdirs(dir);
	}
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(path);
		exit(99);
	}
}

static char *get(const char *rel)
{
	static char buf[4096];
	char path[PATH_MAX];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "r");
	if (!f)
		return strcpy(buf, "<missing>");
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void rm_rel(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	unlink(path);
}

#define SYS "sys/kernel/mm/transparent_hugepage/"

static void fake_tree(bool patched)
{
	put(SYS "enabled", "always [madvise] never\n");
	put(SYS "defrag", "always defer defer+madvise [madvise] never\n");
	if (patched) {
		put(SYS "mode", "0\n");
		put("proc/self/thp_policy", "default\n");
		put("proc/self/thp_stat", "thp_fault_alloc 3\n");
	} else {
		rm_rel(SYS "mode");
		rm_rel("proc/self/thp_policy");
		rm_rel("proc/self/thp_stat");
	}
	put(SYS "khugepaged/pages_to_scan", "4096\n");
}

static void test_mode_parse(void)
{
	struct thp_mode_req req;
	static const char *const bad[] = { "", "3", "-1", "al", "1x", "01", " 1", "always ", "ALWAYS" };

	ok(thp_mode_parse("2", &req) == 0 && req.rfc == 2 && req.enabled == THP_ALWAYS &&
	   strcmp(req.defrag, "always") == 0, "mode_parse 2 -> always/always");
	ok(thp_mode_parse("0", &req) == 0 && req.enabled == THP_MADVISE &&
	   strcmp(req.defrag, "madvise") == 0, "mode_parse 0 -> madvise/madvise");
	ok(thp_mode_parse("never", &req) == 0 && req.rfc == -1 && !req.defrag,
	   "mode_parse never: a word leaves defrag alone");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(thp_mode_parse(bad[i], &req) == -EINVAL, "mode_parse rejects '%s'", bad[i]);
	/* exact, as the kernel's mode file: custom for a pair no number sets */
	ok(strcmp(thp_rfc_mode(THP_ALWAYS, "defer"), "custom") == 0, "rfc_mode always/defer = custom");
	ok(strcmp(thp_rfc_mode(THP_MADVISE, "always"), "custom") == 0, "rfc_mode madvise/always = custom");
	ok(strcmp(thp_rfc_mode(THP_ALWAYS, "madvise"), "1") == 0, "rfc_mode always/madvise = 1");
	ok(strcmp(thp_rfc_mode(THP_MADVISE, "madvise"), "0") == 0, "rfc_mode madvise/madvise = 0");
	ok(thp_mode_parse("custom", &req) == -EINVAL, "mode_parse rejects custom");
	ok(strcmp(thp_rfc_mode(THP_ALWAYS, "always"), "2") == 0, "rfc_mode always/always = 2");
	ok(strcmp(thp_rfc_mode(THP_NEVER, "always"), "never") == 0, "rfc_mode never");
}

static void test_state(void)
{
	struct thp_state st;
	struct thp_mode_req req;
	const char *failed = "x";
	uint64_t v;

	fake_tree(true);
	ok(thp_state_read(&st) == 0 && st.enabled == THP_MADVISE &&
	   strcmp(st.defrag, "madvise") == 0 && strcmp(st.mode, "0") == 0 &&
	   st.has_mode_file && st.has_thp_policy && st.has_thp_stat,
	   "state_read on a patched tree");

	/* patched: a number goes to enabled as the number */
	thp_mode_parse("2", &req);
	ok(thp_state_apply(&req, &failed) == 0 && failed == NULL, "state_apply 2 (patched)");
	ok(strcmp(get(SYS "enabled"), "2") == 0, "patched: '2' written to enabled");
	ok(strstr(get(SYS "defrag"), "[madvise]") != NULL, "patched: defrag left to the kernel");

	fake_tree(false);
	ok(thp_state_read(&st) == 0 && !st.has_mode_file && !st.has_thp_policy &&
	   !st.has_thp_stat && strcmp(st.mode, "0") == 0, "state_read on a stock tree derives mode");
	ok(thp_state_apply(&req, &failed) == 0, "state_apply 2 (stock)");
	ok(strcmp(get(SYS "enabled"), "always") == 0 && strcmp(get(SYS "defrag"), "always") == 0,
	   "stock: 2 translated to enabled=always defrag=always");
	thp_mode_parse("never", &req);
	put(SYS "defrag", "untouched");
	ok(thp_state_apply(&req, NULL) == 0 && strcmp(get(SYS "enabled"), "never") == 0 &&
	   strcmp(get(SYS "defrag"), "untouched") == 0, "a word writes enabled only");

	/* write failures: defrag replaced by a directory -> EISDIR */
	fake_tree(false);
	rm_rel(SYS "defrag");
	mkdirs(SYS "defrag");
	thp_mode_parse("1", &req);
	ok(thp_state_apply(&req, &failed) == -EISDIR && failed &&
	   strcmp(failed, THP_SYSFS_DIR "/defrag") == 0, "stock apply reports the failing path");
	ok(thp_defrag_apply("defer", &failed) == -EISDIR && failed, "defrag_apply EISDIR");
	ok(thp_defrag_apply("bogus", &failed) == -EINVAL, "defrag_apply rejects bogus");
	put(SYS "enabled", "always [madvise] never\n");
	ok(thp_state_read(&st) == -EISDIR, "state_read fails on unreadable defrag");
	{
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/" SYS "defrag", root);
		rmdir(p);
	}

	fake_tree(false);
	put(SYS "enabled", "always madvise never\n");
	ok(thp_state_read(&st) == -EBADMSG, "state_read: no bracket -> EBADMSG");
	put(SYS "enabled", "always [bogus] never\n");
	ok(thp_state_read(&st) == -EBADMSG, "state_read: unknown word -> EBADMSG");
	fake_tree(true);
	put(SYS "mode", "7\n");
	ok(thp_state_read(&st) == -EBADMSG, "state_read: bad mode file -> EBADMSG");
	put(SYS "mode", "per-size\n");
	ok(thp_state_read(&st) == 0 && strcmp(st.mode, "per-size") == 0,
	   "state_read: the 6.12 series' per-size mode");

	ok(thp_khugepaged_read("pages_to_scan", &v) == 0 && v == 4096, "khugepaged_read");
	ok(thp_khugepaged_write("pages_to_scan", 512) == 0 &&
	   strcmp(get(SYS "khugepaged/pages_to_scan"), "512") == 0, "khugepaged_write");
	ok(thp_khugepaged_read("../enabled", &v) == -EINVAL, "khugepaged name with / rejected");
	ok(thp_khugepaged_read("full_scans", &v) == -ENOENT, "khugepaged missing knob -> ENOENT");
	put(SYS "khugepaged/defrag", "1x\n");
	ok(thp_khugepaged_read("defrag", &v) == -EBADMSG, "khugepaged junk -> EBADMSG");
}

static void test_kv(void)
{
	const char *meminfo = "MemTotal:  2000 kB\nAnonHugePages:    4096 kB\nAnon: 1 kB\n";
	const char *vmstat = "thp_fault_alloc 12\nthp_fault_alloc_x 99\nthp_split_pmd 3";
	uint64_t v = 0;

	ok(thp_kv_get(meminfo, "AnonHugePages", &v) == 0 && v == 4096, "kv meminfo style");
	ok(thp_kv_get(meminfo, "Anon", &v) == 0 && v == 1, "kv needs a whole key");
	ok(thp_kv_get(vmstat, "thp_fault_alloc", &v) == 0 && v == 12, "kv vmstat style");
	ok(thp_kv_get(vmstat, "thp_split_pmd", &v) == 0 && v == 3, "kv last line without newline");
	ok(thp_kv_get(vmstat, "thp_fault", &v) == -ENOENT, "kv prefix is not a match");
	ok(thp_kv_get("a x\n", "a", &v) == -EBADMSG, "kv non-number -> EBADMSG");
	ok(thp_kv_get("a 99999999999999999999999\n", "a", &v) == -ERANGE, "kv overflow -> ERANGE");
	ok(thp_kv_get("", "a", &v) == -ENOENT, "kv empty text");
}

static void test_buddyinfo(void)
{
	put("proc/buddyinfo",
	    "Node 0, zone      DMA      1      1      1      0      2      1      1      0      1      1      3 \n"
	    "Node 0, zone    DMA32   3 4 5 6 7 8 9 10 11 12 13\n"
	    "Node 0, zone   Normal   0 0 0 0 0 0 0 0 0 5 0\n");
	/* order 9: 1+12+5 = 18; order 10: 3+13+0 = 16 -> 18 + 2*16 = 50 */
	ok(thp_buddyinfo_free_blocks(9) == 50, "buddyinfo order>=9 = 50 (got %ld)",
	   thp_buddyinfo_free_blocks(9));
	ok(thp_buddyinfo_free_blocks(10) == 16, "buddyinfo order>=10 = 16");
	put("proc/buddyinfo", "Node 0, zone Normal 1 x 3\n");
	ok(thp_buddyinfo_free_blocks(9) == -EBADMSG, "buddyinfo junk -> EBADMSG");
	rm_rel("proc/buddyinfo");
	ok(thp_buddyinfo_free_blocks(9) == -ENOENT, "buddyinfo missing -> ENOENT");
	ok(thp_buddyinfo_free_blocks(-1) == -EINVAL, "buddyinfo bad order");
}

static void test_policy(void)
{
	int p = -1;

	ok(thp_policy_from_name("advise") == PR_THP_MM_POLICY_ADVISE, "policy advise");
	ok(thp_policy_from_name("Advise") == -EINVAL, "policy names are exact");
	ok(strcmp(thp_policy_name(PR_THP_MM_POLICY_NEVER), "never") == 0, "policy name never");
	ok(strcmp(thp_policy_name(7), "unknown") == 0, "policy name out of range");
	put("proc/42/thp_policy", "advise\n");
	ok(thp_policy_get(42, &p) == 0 && p == PR_THP_MM_POLICY_ADVISE, "policy_get 42");
	ok(thp_policy_set(42, PR_THP_MM_POLICY_NEVER) == 0 &&
	   strcmp(get("proc/42/thp_policy"), "never") == 0, "policy_set 42 writes the word");
	ok(thp_policy_set(42, 3) == -EINVAL, "policy_set rejects 3");
	ok(thp_policy_get(43, &p) == -ENOENT, "policy_get on stock/gone pid -> ENOENT");
	put("proc/42/thp_policy", "junk\n");
	ok(thp_policy_get(42, &p) == -EBADMSG, "policy_get junk -> EBADMSG");
}

static void test_proto(void)
{
	struct json_object *o = NULL;
	char big[THP_MSG_MAX + 2];

	ok(thp_proto_parse("{\"ok\":true}", 11, &o) == 0 && o, "proto parse object");
	json_object_put(o);
	ok(thp_proto_parse("{\"ok\":true}\n ", 13, &o) == 0, "proto trailing white space ok");
	json_object_put(o);
	ok(thp_proto_parse("[1]", 3, &o) == -EBADMSG && !o, "proto array rejected");
	ok(thp_proto_parse("{}x", 3, &o) == -EBADMSG, "proto trailing garbage rejected");
	ok(thp_proto_parse("{\"a\":1", 6, &o) == -EBADMSG, "proto truncated object rejected");
	ok(thp_proto_parse("{}\0{}", 5, &o) == -EBADMSG, "proto embedded NUL rejected");
	ok(thp_proto_parse("", 0, &o) == -EBADMSG, "proto empty rejected");
	ok(thp_proto_parse("{}{}", 4, &o) == -EBADMSG, "proto two objects rejected");
	memset(big, ' ', sizeof(big));
	big[0] = '{';
	big[THP_MSG_MAX] = '}';
	ok(thp_proto_parse(big, THP_MSG_MAX + 1, &o) == -EBADMSG, "proto > THP_MSG_MAX rejected");
	big[THP_MSG_MAX - 1] = '}';
	ok(thp_proto_parse(big, THP_MSG_MAX, &o) == 0, "proto exactly THP_MSG_MAX accepted");
	json_object_put(o);
	ok(thp_proto_connect("/nonexistent/thpd.sock") == -ENOENT, "connect to missing socket -> ENOENT");
	o = thp_proto_error(-EPERM, "no");
	ok(o && json_object_get_int(json_object_object_get(o, "errno")) == EPERM,
	   "proto_error carries a positive errno");
	json_object_put(o);
}

static void test_smaps(void)
{
	long kib = -1;

	put("proc/7/smaps",
	    "00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/x\n"
	    "AnonHugePages:         0 kB\n"
	    "7f0000000000-7f0000800000 rw-p 00000000 00:00 0 \n"
	    "Rss:                8192 kB\n"
	    "AnonHugePages:      6144 kB\n"
	    "7f0000800000-7f0000a00000 rw-p 00000000 00:00 0 [anon:x y]\n"
	    "AnonHugePages:      2048 kB\n");
	ok(thp_smaps_vma_kib(7, 0x7f0000000000UL, "AnonHugePages", &kib) == 0 && kib == 6144,
	   "smaps: AnonHugePages of the VMA starting at addr");
	ok(thp_smaps_vma_kib(7, 0x7f00007ff000UL, "AnonHugePages", &kib) == 0 && kib == 6144,
	   "smaps: an address inside the VMA finds it");
	ok(thp_smaps_vma_kib(7, 0x7f0000800000UL, "AnonHugePages", &kib) == 0 && kib == 2048,
	   "smaps: the end is exclusive, the next VMA answers");
	ok(thp_smaps_vma_kib(7, 0x7f0000000000UL, "Anon", &kib) == -ENOENT,
	   "smaps: a field name must match whole");
	ok(thp_smaps_vma_kib(7, 0x1000UL, "AnonHugePages", &kib) == -ENOENT,
	   "smaps: no VMA at addr -> ENOENT");
	ok(thp_smaps_vma_kib(8, 0x1000UL, "AnonHugePages", &kib) == -ENOENT,
	   "smaps: no such process -> ENOENT");
}

/* is [addr, addr + len) mapped at all? (mincore fails with ENOMEM if not) */
static bool mapped(const void *addr, size_t len)
{
	static unsigned char vec[4096];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (len + page - 1) / page <= sizeof(vec) && mincore((void *)addr, len, vec) == 0;
}

/* the bounds of the VMA containing addr, from the real /proc/self/maps */
static bool vma_of(const void *addr, uintptr_t *start, uintptr_t *end)
{
	char line[512];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%" SCNxPTR "-%" SCNxPTR, start, end) == 2 &&
			*start <= (uintptr_t)addr && (uintptr_t)addr < *end;
	fclose(f);
	return found;
}

static void test_mmap_aligned(void)
{
	const size_t align = 2UL << 20, size = 3 * align;
	uintptr_t start = 0, end = 0;
	void *p = NULL;
	bool own;
	char *c;
	int r;

	r = thp_mmap_aligned(size, align, MAP_NORESERVE, &p);
	ok(r == 0 && ((uintptr_t)p & (align - 1)) == 0, "mmap_aligned: aligned (%p)", p);
	if (r < 0)
		return;
	c = p;
	c[0] = 1;
	c[size - 1] = 2;
	ok(mapped(c, size) && c[0] == 1 && c[size - 1] == 2,
	   "mmap_aligned: the region is mapped and writable");
	own = vma_of(c, &start, &end) && start == (uintptr_t)c && end == (uintptr_t)c + size;
	ok(own, "mmap_aligned: the slack is unmapped, the region is a VMA of its own (%#" PRIxPTR
	   "-%#" PRIxPTR ")", start, end);
	munmap(p, size);
	r = thp_mmap_aligned(5000, align, 0, &p);
	ok(r == 0 && mapped(p, 8192) && !mapped((char *)p + 8192, 4096),
	   "mmap_aligned: a size not a page multiple keeps its last page");
	if (r == 0)
		munmap(p, 5000);
	ok(thp_mmap_aligned(0, align, 0, &p) == -EINVAL, "mmap_aligned: size 0 -> EINVAL");
	ok(thp_mmap_aligned(4096, 3 << 20, 0, &p) == -EINVAL,
	   "mmap_aligned: align not a power of two -> EINVAL");
	ok(thp_mmap_aligned(4096, 512, 0, &p) == -EINVAL, "mmap_aligned: align below a page -> EINVAL");
	ok(thp_mmap_aligned(SIZE_MAX - 4096, align, 0, &p) == -ENOMEM,
	   "mmap_aligned: a size that overflows -> ENOMEM");
}

/* Class 2 of issue 20: what does not fit is refused, never truncated. */
static void test_limits(void)
{
	char buf[16], big[THP_ROOT_MAX + 16], line[1024];
	long kib = -1;

	/* thp_read_file: size - 1 bytes fit, one more is -EFBIG */
	put("proc/fit", "0123456789abcde");
	ok(thp_read_file("/proc/fit", buf, sizeof(buf)) == 15 && strcmp(buf, "0123456789abcde") == 0,
	   "read_file: a file of size - 1 bytes is read whole");
	put("proc/fit", "0123456789abcdef");
	ok(thp_read_file("/proc/fit", buf, sizeof(buf)) == -EFBIG,
	   "read_file: one byte more than fits -> EFBIG, not the first size - 1 bytes");

	/* a root of THP_ROOT_MAX bytes: refused, and no path resolves under any tree */
	memset(big, 'r', THP_ROOT_MAX);
	big[0] = '/';
	big[THP_ROOT_MAX] = '\0';
	ok(thp_set_root(big) == -ENAMETOOLONG, "set_root: a root of THP_ROOT_MAX bytes -> ENAMETOOLONG");
	ok(thp_read_file("/proc/fit", buf, sizeof(buf)) == -ENAMETOOLONG &&
	   !thp_exists("/proc/fit") && thp_write_file("/proc/fit", "x") == -ENAMETOOLONG,
	   "set_root: after a refused root every path fails, none is read without it");
	big[THP_ROOT_MAX - 1] = '\0';
	ok(thp_set_root(big) == 0 && strlen(thp_root()) == THP_ROOT_MAX - 1,
	   "set_root: THP_ROOT_MAX - 1 bytes are kept whole");
	ok(thp_set_root(root) == 0 && thp_read_file("/proc/fit", buf, sizeof(buf)) == -EFBIG,
	   "set_root: a valid root makes paths work again");

	/*
	 * smaps: a VMA header longer than a line buffer (a long file name) is one
	 * line; its tail is not read as a field of that VMA.
	 */
	snprintf(line, sizeof(line), "7f0000000000-7f0000200000 r--p 00000000 08:02 17 /%0*d",
		 511 - 50, 0);
	strcat(line, "AnonHugePages:      4096 kB\nAnonHugePages:         0 kB\n");
	put("proc/9/smaps", line);
	ok(thp_smaps_vma_kib(9, 0x7f0000000000UL, "AnonHugePages", &kib) == 0 && kib == 0,
	   "smaps: a long header line is not split into a forged field (got %ld)", kib);
}

/*
 * make check-host runs this program with the machine's THP sysfs read-only
 * (tests/host/thp-readonly.sh): opening a knob there for writing must fail,
 * whatever the root. Only opened, never written: on failure of the guard
 * nothing changes.
 */
static void test_host_guard(void)
{
	static const char *const files[] = { "/enabled", "/defrag", "/khugepaged/pages_to_scan" };
	const char *guard = getenv("THP_HOST_GUARD");
	int want;

	if (!guard || strcmp(guard, "absent") == 0) {
		ok(true, "# skip %s", guard ? "this machine has no " THP_SYSFS_DIR :
		   "not run under make check-host's guard (tests/host/thp-readonly.sh)");
		return;
	}
	want = strcmp(guard, "ro") == 0 ? EROFS : EACCES;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[128];
		int fd, err;

		snprintf(path, sizeof(path), THP_SYSFS_DIR "%s", files[i]);
		if (access(path, F_OK) != 0)
			continue;
		fd = open(path, O_WRONLY);
		err = errno;
		if (fd >= 0)
			close(fd);
		ok(fd < 0 && err == want, "host guard (%s): opening %s for writing fails with %s (got %s)",
		   guard, path, strerror(want), fd < 0 ? strerror(err) : "success");
	}
}

int main(void)
{
	char tmpl[] = "/tmp/thp-test-lib.XXXXXX";
	char cmd[300];

	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return 99;
	}
	snprintf(root, sizeof(root), "%s", tmpl);
	thp_set_root(root);

	test_mode_parse();
	test_state();
	test_kv();
	test_buddyinfo();
	test_policy();
	test_proto();
	test_smaps();
	test_mmap_aligned();
	test_limits();
	test_host_guard();

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", root);
	return tap_done();
}
