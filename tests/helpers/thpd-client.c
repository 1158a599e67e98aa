// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpd-client: talk to thpd's socket with raw messages, for tests of the
 * protocol's edges (docs/abi.md) that a well-behaved client never sends.
 *
 *   thpd-client [--socket PATH] [--pad N] [--timeout-ms N] [--check-closed] MSG...
 *
 * Sends each MSG as one SOCK_SEQPACKET message on one connection, in order,
 * and prints each reply on a line of its own ("closed" when thpd closed
 * the connection instead). --pad N grows the first message to N bytes with
 * trailing spaces (an oversized request that is otherwise valid JSON).
 * --check-closed then prints "closed" or "open" for the connection.
 *
 * Exit: 0 every message got a reply, 1 a reply was missing (closed or
 * timed out), 2 usage, 3 connecting or sending failed.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "thp-proto.h"
#include "thp.h"

/* 1 reply printed, 0 closed, -1 timeout/error */
static int read_reply(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	static char buf[65536];
	ssize_t n;
	int r;

	r = poll(&pfd, 1, timeout_ms);
	if (r <= 0) {
		printf(timeout_ms ? "timeout\n" : "closed\n");
		return -1;
	}
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	if (n < 0 && errno == ECONNRESET)
		n = 0;
	if (n < 0) {
		printf("error %s\n", strerror(errno));
		return -1;
	}
	if (n == 0) {
		printf("closed\n");
		return 0;
	}
	buf[n] = '\0';
	printf("%s\n", buf);
	return 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "pad", required_argument, NULL, 'p' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "check-closed", no_argument, NULL, 'c' },
		{},
	};
	const char *path = THP_SOCKET_PATH;
	long pad = 0, timeout = 5000;
	int c, fd, ret = 0;
	bool check_closed = false;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			path = optarg;
			break;
		case 'p':
			pad = strtol(optarg, NULL, 10);
			break;
		case 't':
			timeout = strtol(optarg, NULL, 10);
			break;
		case 'c':
			check_closed = true;
			break;
		default:
			fprintf(stderr, "usage: thpd-client [--socket PATH] [--pad N] [--timeout-ms N] [--check-closed] MSG...\n");
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "thpd-client: no message\n");
		return 2;
	}
	fd = thp_proto_connect(path);
	if (fd < 0) {
		fprintf(stderr, "thpd-client: connect %s: %s\n", path, strerror(-fd));
		return 3;
	}
	for (int i = optind; i < argc; i++) {
		size_t len = strlen(argv[i]);
		char *msg = argv[i];

		if (i == optind && pad > (long)len) {
			msg = malloc((size_t)pad);
			if (!msg)
				return 3;
			memcpy(msg, argv[i], len);
			memset(msg + len, ' ', (size_t)pad - len);
			len = (size_t)pad;
		}
		if (send(fd, msg, len, MSG_NOSIGNAL) < 0) {
			if (errno == EPIPE || errno == ECONNRESET) {
				/* thpd may have answered (busy) and closed before we sent */
				if (read_reply(fd, 0) == 1)
					printf("closed\n");
				ret = 1;
				break;
			}
			fprintf(stderr, "thpd-client: send: %s\n", strerror(errno));
			return 3;
		}
		if (msg != argv[i])
			free(msg);
		if (read_reply(fd, (int)timeout) != 1) {
			ret = 1;
			break;
		}
	}
	if (check_closed && ret == 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char b;

		if (poll(&pfd, 1, (int)timeout) == 1 && recv(fd, &b, 1, MSG_DONTWAIT) <= 0)
			printf("closed\n");
		else
			printf("open\n");
	}
	close(fd);
	return ret;
}
