// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * spawn: launch a command N times (fork, exec, wait) and print the mean
 * wall time per launch in microseconds: "launches=N us_per_launch=X".
 * usage: spawn N CMD [ARGS...]
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec a, b;
	long n;
	uint64_t ns;

	if (argc < 3 || (n = strtol(argv[1], NULL, 0)) <= 0) {
		fprintf(stderr, "usage: spawn N CMD [ARGS...]\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		int st;
		pid_t pid = fork();

		if (pid < 0) {
			perror("spawn: fork");
			return 3;
		}
		if (pid == 0) {
			execvp(argv[2], argv + 2);
			_exit(127);
		}
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "spawn: %s failed (status %#x)\n", argv[2], st);
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	ns = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u + (uint64_t)(b.tv_nsec - a.tv_nsec);
	printf("launches=%ld us_per_launch=%.1f\n", n, (double)ns / 1000.0 / (double)n);
	return 0;
}
