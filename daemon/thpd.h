/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpd internals shared by the daemon's files (not by host tests' fixtures). */
#ifndef THPD_H
#define THPD_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>
#include <systemd/sd-event.h>

#include "adaptive.h"
#include "config.h"
#include "persist.h"
#include "thp.h"

/* exit codes, documented in thpd(8) */
#define THPD_EXIT_OK 0
#define THPD_EXIT_FAILURE 1	/* start-up self-check or set-up failed */
#define THPD_EXIT_USAGE 2
#define THPD_EXIT_CONFIG 3	/* configuration unusable */

/* what the kernel had before thpd changed anything */
struct thpd_saved {
	bool have_enabled, have_defrag;
	char enabled[16];
	char defrag[16];
	bool have_kh[THPD_KH_N];
	uint64_t kh[THPD_KH_N];
};

/* the settings thpd keeps the host at while nothing is wrong */
struct thpd_target {
	char mode[16];		/* thp_mode_parse() input, "" = leave */
	const char *mode_src;	/* "kernel command line", "persisted state", config file */
	char defrag[16];	/* "" = leave */
	const char *defrag_src;
};

struct conn;

struct thpd {
	sd_event *event;
	const char *config_path;
	char state_dir[PATH_MAX];
	char runtime_dir[PATH_MAX];	/* "" when not under systemd */
	const char *socket_path;

	struct thpd_config cfg;		/* the last good configuration */
	struct thpd_persist persist;
	struct thpd_saved saved;
	struct thp_state kernel;	/* features, refreshed on status */
	char cmdline_thp[16];		/* transparent_hugepage= on the command line */
	struct thpd_target target;
	char normal_enabled[16];	/* state after applying the target */
	char normal_defrag[16];
	struct thpd_adaptive adaptive;

	/* socket server */
	int listen_fd;
	bool socket_created;
	sd_event_source *listen_src;
	unsigned int n_conns;
	struct conn *conns;

	/* adaptive sources */
	int psi_fd;
	sd_event_source *psi_src, *check_src, *calm_src;

	/* proc connector */
	int cn_fd;
	sd_event_source *cn_src;
	unsigned long rules_applied;
	bool rules_unsupported_logged;
};

/* core (thpd-core.c) */
int thpd_target_compute(const struct thpd_config *cfg, const struct thpd_persist *persist,
			const char *cmdline_thp, struct thpd_target *t);
int thpd_cmdline_thp(const char *cmdline, char *out, size_t size);
int thpd_configure(struct thpd *d, bool starting);
int thpd_set_enabled(struct thpd *d, const char *value, const char **failed_path);
int thpd_set_defrag(struct thpd *d, const char *value, const char **failed_path);
void thpd_restore(struct thpd *d);
void thpd_teardown(struct thpd *d);
uint64_t thpd_now(void);

/* socket server (server.c) */
struct thpd_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	int n_groups;		/* -1: not known */
	gid_t groups[64];
};
bool thpd_peer_may_change(const struct thpd_config *cfg, const struct thpd_peer *peer);
struct json_object *thpd_handle_request(struct thpd *d, const struct thpd_peer *peer,
					struct json_object *req);
int thpd_server_open(struct thpd *d);
void thpd_server_close(struct thpd *d);

/* event sources (sources.c) */
int thpd_adaptive_sources(struct thpd *d);
void thpd_adaptive_sources_close(struct thpd *d);
int thpd_rules_source(struct thpd *d);
void thpd_rules_source_close(struct thpd *d);

/* capabilities (caps.c) */
int thpd_drop_caps(bool rules_possible, char *kept, size_t size);

#endif
