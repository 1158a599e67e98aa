// SPDX-License-Identifier: GPL-2.0-or-later
#include "thp.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char thp_root_buf[THP_ROOT_MAX];
/* set when a root was refused: every path fails rather than name another tree */
static bool thp_root_refused;

int thp_set_root(const char *root)
{
	size_t len = root ? strlen(root) : 0;

	if (len >= sizeof(thp_root_buf)) {
		thp_root_refused = true;
		thp_root_buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	thp_root_refused = false;
	memcpy(thp_root_buf, root ? root : "", len + 1);
	return 0;
}

const char *thp_root(void)
{
	return thp_root_buf;
}

int thp_root_init(void)
{
	return thp_set_root(getenv("THP_ROOT"));
}

int thp_path(char *buf, size_t size, const char *path)
{
	int n;

	if (thp_root_refused)
		return -ENAMETOOLONG;
	n = snprintf(buf, size, "%s%s", thp_root_buf, path);
	if (n < 0)
		return -EINVAL;
	return (size_t)n < size ? 0 : -ENAMETOOLONG;
}

bool thp_exists(const char *path)
{
	char full[4096];

	if (thp_path(full, sizeof(full), path) < 0)
		return false;
	return access(full, F_OK) == 0;
}

int thp_read_file(const char *path, char *buf, size_t size)
{
	char full[4096];
	size_t len = 0;
	int fd, r;

	if (size == 0)
		return -EINVAL;
	r = thp_path(full, sizeof(full), path);
	if (r < 0)
		return r;
	fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* one byte more than fits: its arrival means the file is too long */
	for (;;) {
		char extra;
		ssize_t n = len < size - 1 ? read(fd, buf + len, size - 1 - len) :
					     read(fd, &extra, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			close(fd);
			return r;
		}
		if (n == 0)
			break;
		if (len == size - 1) {
			close(fd);
			buf[0] = '\0';
			return -EFBIG;
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return (int)len;
}

int thp_write_file(const char *path, const char *value)
{
	char full[4096];
	size_t len = strlen(value);
	ssize_t n;
	int fd, r;

	r = thp_path(full, sizeof(full), path);
	if (r < 0)
		return r;
	fd = open(full, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		n = write(fd, value, len);
	while (n < 0 && errno == EINTR);
	r = n < 0 ? -errno : (size_t)n == len ? 0 : -EIO;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

int thp_parse_bracketed(const char *text, char *out, size_t size)
{
	const char *open = strchr(text, '['), *close;
	size_t len;

	if (!open)
		return -EBADMSG;
	close = strchr(open, ']');
	if (!close)
		return -EBADMSG;
	len = (size_t)(close - open - 1);
	if (len == 0)
		return -EBADMSG;
	if (len >= size)
		return -ENAMETOOLONG;
	memcpy(out, open + 1, len);
	out[len] = '\0';
	return 0;
}
