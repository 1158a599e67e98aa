// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thp-stress-sock: misbehaving clients for thpd's socket (docs/abi.md).
 *
 *   thp-stress-sock [--socket PATH] [--idle N] [--flood N] [--rounds R]
 *                   [--no-read N] [--ping] [--timeout-ms MS] [--hold-seconds S]
 *                   [--keepalive-ms MS] [--until-closed]
 *
 * In this order, whatever is asked for:
 *   --idle N       open N connections that never send anything (slow
 *                  clients); kept open until the end
 *   --no-read N    one connection that sends N pings without reading a reply
 *                  (kept open too)
 *   --flood N      N connections at once, each sending a ping, R rounds
 *                  (default 1); counts ok / busy / closed / timeout replies
 *   --ping         one well-behaved client: connect, ping, wait up to
 *                  --timeout-ms (default 5000) for the reply
 * then prints "ready" and holds every open connection for --hold-seconds
 * (default 0; SIGTERM ends it early). While it holds them it watches the
 * idle connections: with --keepalive-ms each sends a ping that often (and
 * reads the reply), so that they are busy rather than idle, and each sends
 * one before "ready", so that thpd has accepted (or refused) every one
 * when "ready" comes; --until-closed
 * stops holding once thpd has closed every one of them.
 *
 * Output: key=value lines: idle_open, idle_refused, noread_sent, flood_ok,
 * flood_busy, flood_closed, flood_timeout, flood_error, ping=ok|busy|closed|
 * timeout|error, ping_ms, idle_served (with --keepalive-ms: ok replies to
 * the first pings), and after holding idle_closed (idle connections
 * thpd closed) and keepalive_ok (ok replies to the keepalive pings). Exit:
 * 0, or 1 when --ping did not get an ok reply, 2 usage, 3 system error.
 */
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "thp-proto.h"
#include "test-util.h"
#include "thp.h"

#define MAX_CONNS 4096

static const char *sock_path = THP_SOCKET_PATH;
static int timeout_ms = 5000;

static int connect_nb(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(sock_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, sock_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

static const char ping[] = "{\"cmd\":\"ping\"}";

enum outcome { OUT_OK, OUT_BUSY, OUT_CLOSED, OUT_TIMEOUT, OUT_ERROR };
static const char *const outcome_name[] = { "ok", "busy", "closed", "timeout", "error" };

/* classify one reply already read */
static enum outcome classify(const char *buf, ssize_t n)
{
	struct json_object *o, *v;
	enum outcome r = OUT_ERROR;

	if (n == 0)
		return OUT_CLOSED;
	if (thp_proto_parse(buf, (size_t)n, &o) < 0)
		return OUT_ERROR;
	if (json_object_object_get_ex(o, "ok", &v) && json_object_get_boolean(v))
		r = OUT_OK;
	else if (json_object_object_get_ex(o, "errno", &v) && json_object_get_int(v) == EBUSY)
		r = OUT_BUSY;
	json_object_put(o);
	return r;
}

/* wait for one reply on fd */
static enum outcome wait_reply(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[THP_MSG_MAX + 1];
	ssize_t n;
	int r;

	do
		r = poll(&p, 1, ms);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return OUT_TIMEOUT;
	if (r < 0)
		return OUT_ERROR;
	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n < 0)
		return errno == ECONNRESET ? OUT_CLOSED : OUT_ERROR;
	return classify(buf, n);
}

static void flood(int n, int rounds)
{
	unsigned long count[5] = { 0 };
	int *fds = calloc((size_t)n, sizeof(int));
	int round, i;

	if (!fds) {
		perror("thp-stress-sock: calloc");
		exit(3);
	}
	for (round = 0; round < rounds; round++) {
		struct pollfd *p = calloc((size_t)n, sizeof(*p));
		int pending = 0;
		uint64_t deadline = now_ms() + (uint64_t)timeout_ms;

		if (!p) {
			perror("thp-stress-sock: calloc");
			exit(3);
		}
		for (i = 0; i < n; i++) {
			fds[i] = connect_nb();
			p[i].fd = -1;
			if (fds[i] < 0) {
				/* a full backlog: the same as being told busy */
				count[fds[i] == -EAGAIN || fds[i] == -ECONNREFUSED ? OUT_BUSY : OUT_ERROR]++;
				continue;
			}
			if (send(fds[i], ping, sizeof(ping) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
				char buf[THP_MSG_MAX + 1];
				ssize_t got;

				if (errno != EPIPE && errno != ECONNRESET) {
					count[OUT_ERROR]++;
					continue;
				}
				/*
				 * thpd accepted, said busy and closed before the
				 * request went out: its reply is still queued
				 */
				got = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT);
				count[got > 0 ? classify(buf, got) : OUT_CLOSED]++;
				continue;
			}
			p[i].fd = fds[i];
			p[i].events = POLLIN;
			pending++;
		}
		while (pending > 0) {
			int64_t left = (int64_t)(deadline - now_ms());
			int r;

			if (left <= 0)
				break;
			r = poll(p, (nfds_t)n, (int)left);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			for (i = 0; i < n; i++) {
				char buf[THP_MSG_MAX + 1];
				ssize_t got;

				if (p[i].fd < 0 || !p[i].revents)
					continue;
				got = recv(p[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
				if (got < 0 && errno == EAGAIN)
					continue;
				count[got < 0 ? (errno == ECONNRESET ? OUT_CLOSED : OUT_ERROR) :
				      classify(buf, got)]++;
				p[i].fd = -1;
				pending--;
			}
		}
		count[OUT_TIMEOUT] += (unsigned long)pending;
		for (i = 0; i < n; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		free(p);
	}
	for (i = 0; i < 5; i++)
		printf("flood_%s=%lu\n", outcome_name[i], count[i]);
	free(fds);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: thp-stress-sock [--socket PATH] [--idle N] [--no-read N] [--flood N]\n"
		   "       [--rounds R] [--ping] [--timeout-ms MS] [--hold-seconds S]\n"
		   "       [--keepalive-ms MS] [--until-closed]\n");
}

/*
 * Hold the n idle connections in fds for up to ms: ping each every
 * keepalive ms (0: never) and count the ok replies, count those thpd
 * closes (closing and setting them to -1), and stop early when until_closed
 * and all are closed.
 */
static void hold_idle(int *fds, int n, uint64_t ms, int keepalive, bool until_closed)
{
	struct pollfd *p = calloc((size_t)n + 1, sizeof(*p));
	uint64_t end = now_ms() + ms, next = keepalive ? now_ms() + (uint64_t)keepalive : end;
	unsigned long ok = 0, closed = 0;

	if (!p) {
		perror("thp-stress-sock: calloc");
		exit(3);
	}
	while (now_ms() < end && !(until_closed && closed == (unsigned long)n)) {
		uint64_t now = now_ms(), until = next < end ? next : end;
		int r;

		for (int i = 0; i < n; i++) {
			p[i].fd = fds[i];
			p[i].events = POLLIN | POLLRDHUP;
		}
		r = poll(p, (nfds_t)n, until > now ? (int)(until - now) : 0);
		if (r < 0 && errno != EINTR) {
			perror("thp-stress-sock: poll");
			exit(3);
		}
		for (int i = 0; r > 0 && i < n; i++) {
			char buf[THP_MSG_MAX + 1];
			ssize_t got;

			if (fds[i] < 0 || !p[i].revents)
				continue;
			got = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT);
			if (got > 0 && classify(buf, got) == OUT_OK)
				ok++;
			if (got > 0 || (got < 0 && errno == EAGAIN))
				continue;
			close(fds[i]);
			fds[i] = -1;
			closed++;
		}
		if (keepalive && now_ms() >= next) {
			for (int i = 0; i < n; i++)
				if (fds[i] >= 0)
					send(fds[i], ping, sizeof(ping) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			next = now_ms() + (uint64_t)keepalive;
		}
	}
	printf("idle_closed=%lu\n", closed);
	if (keepalive)
		printf("keepalive_ok=%lu\n", ok);
	free(p);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "idle", required_argument, NULL, 'i' },
		{ "no-read", required_argument, NULL, 'n' },
		{ "flood", required_argument, NULL, 'f' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "ping", no_argument, NULL, 'p' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "hold-seconds", required_argument, NULL, 'H' },
		{ "keepalive-ms", required_argument, NULL, 'k' },
		{ "until-closed", no_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	static int held[MAX_CONNS + 1];
	int nheld = 0, nidle = 0, idle = 0, noread = 0, nflood = 0, rounds = 1, hold = 0;
	int keepalive = 0, c, i, rc = 0;
	bool do_ping = false, until_closed = false;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		int *dst = NULL;

		switch (c) {
		case 's': sock_path = optarg; break;
		case 'i': dst = &idle; break;
		case 'n': dst = &noread; break;
		case 'f': dst = &nflood; break;
		case 'r': dst = &rounds; break;
		case 't': dst = &timeout_ms; break;
		case 'H': dst = &hold; break;
		case 'k': dst = &keepalive; break;
		case 'u': until_closed = true; break;
		case 'p': do_ping = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (dst) {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (*end || v < 0 || v > MAX_CONNS * 1000L) {
				usage(stderr);
				return 2;
			}
			*dst = (int)v;
		}
	}
	if (optind != argc || idle > MAX_CONNS || nflood > MAX_CONNS) {
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (idle) {
		int refused = 0;

		for (i = 0; i < idle; i++) {
			int fd = connect_nb();

			if (fd < 0)
				refused++;
			else
				held[nheld++] = fd;
		}
		nidle = nheld;
		printf("idle_open=%d\nidle_refused=%d\n", nheld, refused);
		if (keepalive) {
			int served = 0;

			for (i = 0; i < nidle; i++)
				if (send(held[i], ping, sizeof(ping) - 1, MSG_NOSIGNAL) >= 0 &&
				    wait_reply(held[i], timeout_ms) == OUT_OK)
					served++;
			printf("idle_served=%d\n", served);
		}
	}
	if (noread) {
		int fd = connect_nb(), sent = 0;

		if (fd < 0) {
			fprintf(stderr, "thp-stress-sock: connecting to %s: %s\n", sock_path,
				strerror(-fd));
			return 3;
		}
		for (i = 0; i < noread; i++) {
			if (send(fd, ping, sizeof(ping) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
				break;
			sent++;
		}
		printf("noread_sent=%d\n", sent);
		held[nheld++] = fd;
	}
	if (nflood)
		flood(nflood, rounds);
	if (do_ping) {
		uint64_t t0 = now_ms();
		enum outcome o = OUT_ERROR;
		int fd = connect_nb();

		if (fd >= 0 && send(fd, ping, sizeof(ping) - 1, MSG_NOSIGNAL) >= 0)
			o = wait_reply(fd, timeout_ms);
		else if (fd < 0)
			fprintf(stderr, "thp-stress-sock: connecting to %s: %s\n", sock_path,
				strerror(-fd));
		printf("ping=%s\nping_ms=%" PRIu64 "\n", outcome_name[o], now_ms() - t0);
		if (fd >= 0)
			close(fd);
		if (o != OUT_OK)
			rc = 1;
	}
	printf("ready\n");
	if (hold && nidle) {
		hold_idle(held, nidle, (uint64_t)hold * 1000, keepalive, until_closed);
	} else if (hold) {
		uint64_t end = now_ms() + (uint64_t)hold * 1000;

		while (now_ms() < end)
			sleep_ms(end - now_ms());
	}
	for (i = 0; i < nheld; i++)
		if (held[i] >= 0)
			close(held[i]);
	return rc;
}
