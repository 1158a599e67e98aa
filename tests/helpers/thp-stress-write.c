// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thp-stress-write: adversarial writes to one sysfs/procfs file.
 *
 *   thp-stress-write --target PATH --valid WORD[,WORD...] [--snapshot PATH]...
 *                    [--random N] [--seed N] [--strict-nul] [--verbose]
 *
 * Writes, one write(2) each on a fresh descriptor, a built-in list of nasty
 * strings (empty, whitespace, prefixes, case, signs, leading zeros, hex,
 * trailing junk, embedded NUL, very long, non-ASCII) and N random cases
 * (random bytes and mutations of the valid words; the seed comes from
 * /dev/urandom unless given, and is printed). Before and after each write
 * every --snapshot file (the target is always one) is read; then:
 *
 *   valid      a WORD, optionally followed by one '\n': must be accepted
 *              whole; the snapshot files are then restored (writable ones
 *              other than `mode`, whose value is derived)
 *   empty      a zero-length write: nothing may change
 *   nul        a WORD followed by NUL and anything: an upstream sysfs_streq()
 *              store sees only the WORD, so the outcome is recorded but not
 *              judged, unless --strict-nul (the thp-stack files, docs/abi.md):
 *              then it must be rejected like junk
 *   invalid    anything else: must fail (EINVAL; EINVAL or E2BIG from 4 KiB
 *              on) and leave every snapshot file unchanged
 *
 * "self" in a path is this process (e.g. /proc/self/thp_policy).
 *
 * Output: one line per failure on stderr, then key=value lines: seed, cases,
 * valid, accepted_valid, rejected_invalid, empty, nul_accepted, nul_rejected,
 * failures. Exit: 0 no failure, 1 failures, 2 usage, 3 system error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test-util.h"
#include "thp.h"

#define MAX_SNAP 8
#define MAX_VALID 16
#define MAX_CASE 8192
/* a snapshot holds any case written to a plain file (the self-test's knob) */
#define SNAP_SIZE (MAX_CASE + 64)

struct testcase {
	char buf[MAX_CASE];
	size_t len;
};

static const char *target;
static const char *snap_path[MAX_SNAP];
static int nsnap;
static char valid_buf[512];
static const char *valid[MAX_VALID];
static int nvalid;
static bool strict_nul, verbose;
static unsigned long failures, ncases, nvalid_cases, accepted_valid, rejected_invalid,
	nempty, nul_accepted, nul_rejected;
/* printable rendering of a case for messages (truncated) */
static const char *show(const char *buf, size_t len)
{
	static char out[200];
	size_t i, o = 0;

	for (i = 0; i < len && o < sizeof(out) - 24; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, sizeof(out) - o, "\\x%02x", c);
	}
	if (i < len)
		o += (size_t)snprintf(out + o, sizeof(out) - o, "...(%zu bytes)", len);
	out[o] = '\0';
	return out;
}

static void fail(const struct testcase *tc, const char *fmt, const char *detail)
{
	failures++;
	fprintf(stderr, "FAIL %s <- \"%s\": ", target, show(tc->buf, tc->len));
	fprintf(stderr, fmt, detail);
	fputc('\n', stderr);
}

enum class { C_VALID, C_EMPTY, C_NUL, C_INVALID };

static bool is_word(const char *s, size_t len)
{
	int i;

	for (i = 0; i < nvalid; i++)
		if (strlen(valid[i]) == len && memcmp(valid[i], s, len) == 0)
			return true;
	return false;
}

static enum class classify(const struct testcase *tc)
{
	const char *nul;

	if (tc->len == 0)
		return C_EMPTY;
	if (is_word(tc->buf, tc->len) ||
	    (tc->buf[tc->len - 1] == '\n' && is_word(tc->buf, tc->len - 1)))
		return C_VALID;
	nul = memchr(tc->buf, '\0', tc->len);
	if (nul && nul > tc->buf) {
		size_t n = (size_t)(nul - tc->buf);

		if (is_word(tc->buf, n) || (tc->buf[n - 1] == '\n' && is_word(tc->buf, n - 1)))
			return C_NUL;
	}
	return C_INVALID;
}

static int snapshot(char snap[][SNAP_SIZE])
{
	int i, r;

	for (i = 0; i < nsnap; i++) {
		r = thp_read_file(snap_path[i], snap[i], SNAP_SIZE);
		if (r < 0) {
			fprintf(stderr, "thp-stress-write: reading %s: %s\n", snap_path[i],
				strerror(-r));
			return r;
		}
	}
	return 0;
}

/* the value to write back: the bracketed word, or the content without '\n' */
static void restore(char snap[][SNAP_SIZE])
{
	int i, r;

	for (i = 0; i < nsnap; i++) {
		const char *base = strrchr(snap_path[i], '/');
		char word[SNAP_SIZE];

		if (strcmp(base ? base + 1 : snap_path[i], "mode") == 0)
			continue;	/* derived from enabled and defrag */
		if (strchr(snap[i], '[')) {
			if (thp_parse_bracketed(snap[i], word, sizeof(word)) < 0)
				continue;
		} else {
			snprintf(word, sizeof(word), "%.*s", (int)strcspn(snap[i], "\n"), snap[i]);
		}
		r = thp_write_file(snap_path[i], word);
		if (r < 0)
			fprintf(stderr, "thp-stress-write: restoring %s to '%s': %s\n",
				snap_path[i], word, strerror(-r));
	}
}

static int run_case(const struct testcase *tc)
{
	static char before[MAX_SNAP][SNAP_SIZE], after[MAX_SNAP][SNAP_SIZE];
	enum class cls = classify(tc);
	ssize_t n;
	int fd, err = 0, i, changed = -1, r;
	char detail[SNAP_SIZE * 2 + 64];

	ncases++;
	r = snapshot(before);
	if (r < 0)
		return r;
	fd = open(target, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "thp-stress-write: opening %s: %s\n", target, strerror(errno));
		return -errno;
	}
	n = write(fd, tc->buf, tc->len);
	if (n < 0)
		err = errno;
	close(fd);
	r = snapshot(after);
	if (r < 0)
		return r;
	for (i = 0; i < nsnap; i++) {
		if (strcmp(before[i], after[i]) != 0) {
			changed = i;
			break;
		}
	}
	if (changed >= 0)
		snprintf(detail, sizeof(detail), "%s: '%.*s' -> '%.*s'", snap_path[changed],
			 (int)strcspn(before[changed], "\n"), before[changed],
			 (int)strcspn(after[changed], "\n"), after[changed]);
	if (verbose)
		printf("# %-8s %-40s -> %s\n",
		       cls == C_VALID ? "valid" : cls == C_EMPTY ? "empty" :
		       cls == C_NUL ? "nul" : "invalid", show(tc->buf, tc->len),
		       n < 0 ? strerror(err) : "accepted");

	if (cls == C_NUL && !strict_nul) {
		if (n < 0)
			nul_rejected++;
		else
			nul_accepted++;
		if (n < 0 && changed >= 0)
			fail(tc, "rejected, but changed %s", detail);
		restore(before);
		return 0;
	}
	switch (cls) {
	case C_VALID:
		nvalid_cases++;
		if (n < 0) {
			fail(tc, "valid value rejected: %s", strerror(err));
		} else if ((size_t)n != tc->len) {
			snprintf(detail, sizeof(detail), "%zd of %zu", n, tc->len);
			fail(tc, "valid value only partly written: %s bytes", detail);
		} else {
			accepted_valid++;
		}
		restore(before);
		break;
	case C_EMPTY:
		nempty++;
		if (changed >= 0)
			fail(tc, "empty write changed %s", detail);
		break;
	case C_NUL:
	case C_INVALID:
		if (n >= 0) {
			snprintf(detail, sizeof(detail), "%zd", n);
			fail(tc, "accepted (%s bytes), want EINVAL", detail);
			restore(before);
			break;
		}
		if (err != EINVAL && !(tc->len >= 4096 && err == E2BIG))
			fail(tc, "rejected with %s, want EINVAL", strerror(err));
		if (changed >= 0)
			fail(tc, "rejected, but changed %s", detail);
		else
			rejected_invalid++;
		if (cls == C_NUL)
			nul_rejected++;
		if (changed >= 0)
			restore(before);
		break;
	}
	return 0;
}

static void set_case(struct testcase *tc, const void *buf, size_t len)
{
	if (len > MAX_CASE)
		len = MAX_CASE;
	memcpy(tc->buf, buf, len);
	tc->len = len;
}

#define S(lit) { lit, sizeof(lit) - 1 }

static const struct {
	const char *s;
	size_t len;
} nasty[] = {
	S(""), S(" "), S("\n"), S("\n\n"), S("\t"), S("\r\n"), S("\0"), S("\0\n"),
	S("always"), S("always\n"), S("madvise\n"), S("never\n"),
	S("  always"), S("always "), S("always\n\n"), S("always\r\n"), S(" always\n"),
	S("\talways"), S("always\t"), S("ALWAYS"), S("Always\n"), S("NEVER"), S("alway"),
	S("al"), S("a"), S("n"), S("alwaysalways"), S("always,never"), S("always never"),
	S("[always]"), S("[madvise]\n"), S("always [madvise] never\n"), S("always\0"),
	S("always\0junk"), S("\0always"), S("never\0\n"), S("madvise\0\x01"),
	S("0"), S("1"), S("2"), S("0\n"), S("1\n"), S("2\n"), S("3"), S("3\n"),
	S("-1"), S("-0"), S("+1"), S("+0"), S("01"), S("00"), S("001"), S("02\n"),
	S("0x1"), S("0x0"), S("0X2"), S("0b1"), S("1e0"), S("1.0"), S("1 "), S(" 1"),
	S("1\n\n"), S("2\r"), S("1\0"), S("1\0" "2"), S("10"), S("12"), S("4294967297"),
	S("18446744073709551617"), S("99999999999999999999999"), S("-2147483648"),
	S("1x"), S("2a"), S("0never"), S("neverx"), S("never!"), S("madvise;"),
	S("defer+"), S("+madvise"), S("defer+madvise+"), S("defer madvise"), S("deferred"),
	S("defer+\n"), S("default"), S("default\n"), S("advise"), S("advise\n"),
	S("Default"), S("defaults"), S("advice"), S("never never"), S("0 default"),
	S("nev\xc3\xa9r"), S("\xef\xbb\xbf" "always"), S("\xef\xbd\x81\xef\xbd\x8c\xef\xbd\x97"),
	S("\xd9\xa1"), S("always\xe2\x80\x8b"), S("\xff\xfe"), S("\x80"),
	S("%s%s%n"), S("../../etc/passwd"), S("always\x1b[0m"), S("\\x00"),
};

static void run_builtin(void)
{
	static struct testcase tc;
	size_t i, j;

	for (j = 0; j < (size_t)nvalid; j++) {	/* each valid word, bare and as echo writes it */
		size_t l = strlen(valid[j]);

		set_case(&tc, valid[j], l);
		if (run_case(&tc) < 0)
			exit(3);
		tc.buf[tc.len++] = '\n';
		if (run_case(&tc) < 0)
			exit(3);
	}
	for (i = 0; i < sizeof(nasty) / sizeof(nasty[0]); i++) {
		set_case(&tc, nasty[i].s, nasty[i].len);
		if (run_case(&tc) < 0)
			exit(3);
	}
	/* very long: junk, a valid word padded, digits */
	memset(tc.buf, 'x', 4000);
	tc.len = 4000;
	if (run_case(&tc) < 0)
		exit(3);
	for (j = 0; j < (size_t)nvalid; j++) {
		size_t l = strlen(valid[j]);

		memcpy(tc.buf, valid[j], l);
		memset(tc.buf + l, ' ', 5000);
		tc.len = l + 5000;
		if (run_case(&tc) < 0)
			exit(3);
		/* the word repeated past a page */
		for (tc.len = 0; tc.len + l < 6000; tc.len += l)
			memcpy(tc.buf + tc.len, valid[j], l);
		if (run_case(&tc) < 0)
			exit(3);
		/* the word, a NUL and a page of junk */
		memcpy(tc.buf, valid[j], l);
		tc.buf[l] = '\0';
		memset(tc.buf + l + 1, 'z', 4200);
		tc.len = l + 1 + 4200;
		if (run_case(&tc) < 0)
			exit(3);
	}
	memset(tc.buf, '1', 5000);
	tc.len = 5000;
	if (run_case(&tc) < 0)
		exit(3);
}

/* random bytes, or a valid word with one mutation */
static void make_random(struct testcase *tc)
{
	size_t i, l;
	const char *w = valid[rnd_below((size_t)nvalid)];

	switch (rnd_below(6)) {
	case 0:		/* pure random bytes */
		tc->len = rnd_below(65);
		for (i = 0; i < tc->len; i++)
			tc->buf[i] = (char)rnd();
		return;
	case 1:		/* printable junk */
		tc->len = 1 + rnd_below(24);
		for (i = 0; i < tc->len; i++)
			tc->buf[i] = (char)(0x20 + rnd_below(0x5f));
		return;
	default:
		break;
	}
	l = strlen(w);
	memcpy(tc->buf, w, l);
	tc->len = l;
	switch (rnd_below(5)) {
	case 0:		/* flip one byte */
		tc->buf[rnd_below(l)] ^= (char)(1 + rnd_below(255));
		break;
	case 1:		/* insert a byte */
		i = rnd_below(l + 1);
		memmove(tc->buf + i + 1, tc->buf + i, l - i);
		tc->buf[i] = (char)rnd();
		tc->len++;
		break;
	case 2:		/* drop a byte */
		i = rnd_below(l);
		memmove(tc->buf + i, tc->buf + i + 1, l - i - 1);
		tc->len--;
		break;
	case 3:		/* trailing junk */
		for (i = 0; i < 1 + rnd_below(8); i++)
			tc->buf[tc->len++] = (char)rnd();
		break;
	default:	/* leading junk */
		i = 1 + rnd_below(4);
		memmove(tc->buf + i, tc->buf, l);
		tc->len = l + i;
		while (i--)
			tc->buf[i] = (char)rnd();
		break;
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: thp-stress-write --target PATH --valid WORD[,WORD...]\n"
		   "       [--snapshot PATH]... [--random N] [--seed N] [--strict-nul] [--verbose]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "target", required_argument, NULL, 't' },
		{ "valid", required_argument, NULL, 'v' },
		{ "snapshot", required_argument, NULL, 's' },
		{ "random", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 'S' },
		{ "strict-nul", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	unsigned long nrandom = 0, i;
	uint64_t seed = 0;
	bool have_seed = false;
	char *tok, *save = NULL, *end;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't': target = optarg; break;
		case 'v':
			snprintf(valid_buf, sizeof(valid_buf), "%s", optarg);
			break;
		case 's':
			if (nsnap == MAX_SNAP - 1) {
				usage(stderr);
				return 2;
			}
			snap_path[nsnap++] = optarg;
			break;
		case 'r':
			nrandom = strtoul(optarg, &end, 10);
			if (*end || optarg[0] == '-') {
				usage(stderr);
				return 2;
			}
			break;
		case 'S':
			seed = strtoull(optarg, &end, 10);
			have_seed = !*end;
			if (!have_seed) {
				usage(stderr);
				return 2;
			}
			break;
		case 'n': strict_nul = true; break;
		case 'V': verbose = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!target || !valid_buf[0] || optind != argc) {
		usage(stderr);
		return 2;
	}
	for (tok = strtok_r(valid_buf, ",", &save); tok && nvalid < MAX_VALID;
	     tok = strtok_r(NULL, ",", &save))
		valid[nvalid++] = tok;
	snap_path[nsnap++] = target;
	if (!have_seed) {
		int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

		if (fd < 0 || read(fd, &seed, sizeof(seed)) != (ssize_t)sizeof(seed)) {
			perror("thp-stress-write: /dev/urandom");
			return 3;
		}
		close(fd);
	}
	rnd_seed(seed);
	printf("seed=%" PRIu64 "\n", seed);

	run_builtin();
	for (i = 0; i < nrandom; i++) {
		static struct testcase tc;

		make_random(&tc);
		if (run_case(&tc) < 0)
			return 3;
	}
	printf("target=%s\ncases=%lu\nvalid=%lu\naccepted_valid=%lu\nrejected_invalid=%lu\n"
	       "empty=%lu\nnul_accepted=%lu\nnul_rejected=%lu\nfailures=%lu\n",
	       target, ncases, nvalid_cases, accepted_valid, rejected_invalid, nempty,
	       nul_accepted, nul_rejected, failures);
	return failures ? 1 : 0;
}
