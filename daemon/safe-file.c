// SPDX-License-Identifier: GPL-2.0-or-later
/* thpd's own small files, opened so only a regular file of ours is used. See safe-file.h. */
#include "safe-file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int join(char *buf, size_t size, const char *dir, const char *prefix, const char *name,
		const char *suffix)
{
	if (!dir || !dir[0])
		return -ENOENT;
	if ((size_t)snprintf(buf, size, "%s/%s%s%s", dir, prefix, name, suffix) >= size)
		return -ENAMETOOLONG;
	return 0;
}

int thpd_safe_read(const char *dir, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX];
	struct stat st;
	size_t len = 0;
	int fd, r;

	if (size < 2)
		return -EINVAL;
	r = join(path, sizeof(path), dir, "", name, "");
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
		r = -EPERM;
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, size - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == size - 1) {
			char c;

			r = read(fd, &c, 1) == 0 ? 0 : -EFBIG;
			if (r < 0)
				goto out;
			break;
		}
	}
	buf[len] = '\0';
	r = (int)len;
out:
	close(fd);
	return r;
}

static int write_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = write(fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

int thpd_safe_replace(const char *dir, const char *name, const char *text)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	int fd, dfd, r;

	r = join(path, sizeof(path), dir, "", name, "");
	if (r == 0)
		r = join(tmp, sizeof(tmp), dir, ".", name, ".tmp");
	if (r < 0)
		return r;
	/* whatever sits at the temporary name goes: a FIFO, a link, a leftover */
	if (unlink(tmp) < 0 && errno != ENOENT)
		return -errno;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	r = write_all(fd, text, strlen(text));
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	/* make the rename itself durable */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	r = fsync(dfd) < 0 ? -errno : 0;
	close(dfd);
	return r;
}

int thpd_safe_remove(const char *dir, const char *name)
{
	char path[PATH_MAX];
	int r = join(path, sizeof(path), dir, "", name, "");

	if (r < 0)
		return r;
	return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}
