/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading and replacing thpd's own small files (the persisted state, the
 * runtime "saved" file) so that whatever is planted at their names — a
 * symlink, a hard link to another file, a FIFO, a device, a directory — is
 * never followed, written through or waited on:
 *   read:    O_NOFOLLOW | O_NONBLOCK, then fstat: a regular file with one
 *            link;
 *   replace: unlink the temporary name, create it with O_CREAT | O_EXCL |
 *            O_NOFOLLOW (so it is a new file of ours), write, fsync, rename
 *            over the name (rename replaces the directory entry, never what
 *            a link points to), fsync the directory.
 */
#ifndef THPD_SAFE_FILE_H
#define THPD_SAFE_FILE_H

#include <stddef.h>

/*
 * dir/name into buf (NUL-terminated). -ENOENT when absent; -ELOOP for a
 * symlink; -EPERM for anything that is not a regular file with exactly one
 * link; -EFBIG when it does not fit in size - 1 bytes; other -errno.
 */
int thpd_safe_read(const char *dir, const char *name, char *buf, size_t size);
/* replace dir/name by text atomically (through dir/.name.tmp); 0 or -errno */
int thpd_safe_replace(const char *dir, const char *name, const char *text);
/* remove dir/name (whatever it is, never what it points to); 0 or -errno */
int thpd_safe_remove(const char *dir, const char *name);

#endif
