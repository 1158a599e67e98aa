// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpctl policy --collapse: ask the kernel to collapse a process's anonymous
 * memory into hugepages now, with process_madvise(MADV_COLLAPSE) (Linux 6.1)
 * on every 2 MiB-aligned stretch of its private writable anonymous mappings.
 * Works on a stock kernel too; needs CAP_SYS_NICE and ptrace read access.
 */
#include "thpctl.h"
#include "thp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#define HPAGE_SIZE (2UL << 20)

static int pmadvise(int pidfd, const struct iovec *iov, size_t n, int advice)
{
	long r = syscall(SYS_process_madvise, pidfd, iov, n, advice, 0);

	return r < 0 ? -errno : 0;
}

static int anon_huge(pid_t pid, uint64_t *kib)
{
	static char buf[4096];
	char path[64];
	int r;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	r = thp_read_file(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	return thp_kv_get(buf, "AnonHugePages", kib);
}

int thp_collapse(pid_t pid, struct json_object *out)
{
	char path[64], *line = NULL;
	unsigned long ranges = 0, failed = 0;
	size_t cap = 0;
	uint64_t before = 0, after = 0;
	int pidfd, r, last_err = 0;
	FILE *maps;

	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		log_error("pidfd_open(%d): %s", (int)pid, strerror(errno));
		return -errno;
	}
	/* an empty vector checks that the kernel knows MADV_COLLAPSE here */
	r = pmadvise(pidfd, NULL, 0, MADV_COLLAPSE);
	if (r == -EINVAL || r == -ENOSYS) {
		log_error("process_madvise(MADV_COLLAPSE) is not supported by this kernel");
		close(pidfd);
		return -EOPNOTSUPP;
	}
	if (r < 0) {
		log_error("process_madvise(%d, MADV_COLLAPSE): %s", (int)pid, strerror(-r));
		close(pidfd);
		return r;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(full_path(path), "re");
	if (!maps) {
		r = -errno;
		log_error("cannot open %s: %s", full_path(path), strerror(-r));
		close(pidfd);
		return r;
	}
	r = anon_huge(pid, &before);
	if (r < 0) {
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
		log_error("cannot read %s: %s", full_path(path), strerror(-r));
		fclose(maps);
		close(pidfd);
		return r;
	}
	/* whole lines: a mapped file's name is up to PATH_MAX long */
	while (getline(&line, &cap, maps) > 0) {
		unsigned long start, end, ino;
		char perms[5];
		const char *name;
		struct iovec iov;
		int at = 0;

		/* "start-end perms offset dev inode [name]" */
		if (sscanf(line, "%lx-%lx %4s %*s %*s %lu %n", &start, &end, perms, &ino, &at) < 4 ||
		    at == 0 || strlen(perms) != 4)
			continue;
		name = line + at;
		line[strcspn(line, "\n")] = '\0';
		/* private writable anonymous memory: heap, stack, (named) anonymous mmap */
		if (perms[1] != 'w' || perms[3] != 'p' || ino != 0 ||
		    (name[0] && strcmp(name, "[heap]") && strcmp(name, "[stack]") &&
		     strncmp(name, "[anon:", 6)))
			continue;
		start = (start + HPAGE_SIZE - 1) & ~(HPAGE_SIZE - 1);
		end &= ~(HPAGE_SIZE - 1);
		if (start >= end)
			continue;
		iov.iov_base = (void *)start;
		iov.iov_len = end - start;
		ranges++;
		r = pmadvise(pidfd, &iov, 1, MADV_COLLAPSE);
		if (r == -EPERM || r == -ESRCH) {
			log_error("process_madvise(%d, MADV_COLLAPSE): %s", (int)pid, strerror(-r));
			free(line);
			fclose(maps);
			close(pidfd);
			return r;
		}
		/* best effort: a stretch with holes or no free hugepage fails alone */
		if (r < 0) {
			failed++;
			last_err = -r;
		}
	}
	free(line);
	fclose(maps);
	close(pidfd);
	r = anon_huge(pid, &after);
	if (r < 0) {
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
		log_error("cannot read %s: %s", full_path(path), strerror(-r));
		return r;
	}

	jadd_u64(out, "ranges", ranges);
	jadd_u64(out, "ranges_failed", failed);
	jadd_str(out, "last_error", last_err ? strerror(last_err) : NULL);
	jadd_u64(out, "anon_huge_kib_before", before);
	jadd_u64(out, "anon_huge_kib_after", after);
	return 0;
}
