/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * thpd's state and its lifecycle (lifecycle.c): start, reload, the
 * administrator's changes, restore on stop. The event sources (pressure.c,
 * exec-events.c) and the socket server (server.c) call into this; it never
 * calls them: what must happen to the sources after a (re)configuration is
 * the on_configured callback that main wires in.
 */
#ifndef THPD_H
#define THPD_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

#include "adaptive.h"
#include "config.h"
#include "originals.h"
#include "persist.h"
#include "precedence.h"
#include "thp.h"

/* exit codes, documented in thpd(8) */
#define THPD_EXIT_OK 0
#define THPD_EXIT_FAILURE 1	/* start-up self-check or set-up failed */
#define THPD_EXIT_USAGE 2
/* configuration unusable: systemd's EXIT_CONFIG (BSD's EX_CONFIG), "78/CONFIG" */
#define THPD_EXIT_CONFIG 78

struct conn;
struct thpd_collapse;

struct thpd {
	sd_event *event;
	const char *config_path;
	bool config_must_exist;		/* given with --config: missing is an error */
	char state_dir[PATH_MAX];
	char runtime_dir[PATH_MAX];	/* "" when not under systemd */
	const char *socket_path;
	/* called after every (re)configuration, when event is set: (re)open the sources */
	void (*on_configured)(struct thpd *d);

	struct thpd_config cfg;		/* the last good configuration */
	struct thpd_persist persist;
	struct thpd_originals originals;
	struct thp_state kernel;	/* features, refreshed on status */
	struct thpd_cmdline cmdline;	/* the THP parameters of the kernel command line */
	struct thpd_target target;
	char normal_enabled[16];	/* state after applying the target */
	char normal_defrag[16];
	struct thpd_adaptive adaptive;
	/* sizes the adaptive step-down changed, and the word each goes back to */
	unsigned int n_stepped;
	struct {
		unsigned long kib;
		char enabled[16];
	} stepped[THP_SIZES_MAX];

	/* socket server (server.c) */
	int listen_fd;
	bool socket_created;
	sd_event_source *listen_src;
	unsigned int n_conns;
	struct conn *conns;
	bool accept_paused;		/* out of descriptors: listen_src is off */
	bool accept_paused_logged;	/* said once */

	/* adaptive sources (pressure.c) */
	int psi_fd;
	sd_event_source *psi_src, *check_src, *calm_src;

	/* the slow tick: watchdog ping and debt check (tick.c) */
	sd_event_source *tick_src;
	uint64_t watchdog_usec, watchdog_last;	/* 0: no watchdog */

	/* [Collapse] (collapse.c), NULL until it is first on */
	struct thpd_collapse *collapse;

	/* proc connector (exec-events.c) */
	int cn_fd;
	sd_event_source *cn_src;
	unsigned long rules_applied;
	bool rules_unsupported_logged;
};

/*
 * Start: configuration, self-check, the host's originals, persisted state,
 * the kernel command line, apply. -EINVAL: configuration unusable; other
 * -errno: the self-check or applying failed (both logged).
 */
int thpd_start(struct thpd *d);
/*
 * Reload (SIGHUP and the socket's "reload"): the same path as start, with
 * sd_notify RELOADING=1/READY=1 around it. -EINVAL: the configuration is
 * unusable and the last good one stays (logged).
 */
int thpd_reload(struct thpd *d);
/*
 * An administrator's change through the socket: the persisted state is
 * saved first, then the host is changed (as one change, see below); when
 * either fails the saved state goes back, so disk, host and status agree.
 * -EINVAL with why "" for an invalid value; other failures say in why
 * what failed and what the host was left in.
 */
int thpd_set_enabled(struct thpd *d, const char *value, char *why, size_t size);
int thpd_set_defrag(struct thpd *d, const char *value, char *why, size_t size);
/*
 * Write enabled (a thp_mode_parse() word or number; NULL or "": leave) and
 * defrag (NULL or "": leave) as one change: when a write fails, what was
 * written before it is written back. 0, or -errno with why saying which
 * file failed and whether the host was rolled back.
 */
int thpd_apply_settings(const char *enabled, const char *defrag, char *why, size_t size);
/*
 * The same for shmem_enabled (knob THP_KNOB_SHMEM_ENABLED, n 0) or the
 * enabled/shmem_enabled of n sizes (THP_KNOB_SIZE_ENABLED,
 * THP_KNOB_SIZE_SHMEM_ENABLED): saved, then written as one change. -EINVAL
 * with why "" for a word the knob never takes; -ENOENT (a size the kernel
 * does not have), -EOPNOTSUPP (no such knob there) and -EINVAL (a word this
 * kernel does not offer) with why saying so, nothing changed.
 */
int thpd_set_knob(struct thpd *d, enum thp_knob_id knob, const char *value,
		  const unsigned long *kibs, int n, char *why, size_t size);
/*
 * Put the sizes the adaptive step-down changed back to their words (step
 * up, an administrator's change, reload); from/to (may be NULL) get
 * " 64K=madvise" per size for the log. 0 or the first write's -errno.
 */
int thpd_sizes_step_up(struct thpd *d, char *from, size_t fsize, char *to, size_t tsize);
/*
 * While stepped down, $RUNTIME_DIRECTORY/stepped-down holds the normal
 * enabled/defrag and the stepped sizes' words (saved before a step-down
 * writes, forgotten once the host is back to normal), so that a restart
 * after a crash steps up first.
 */
void thpd_stepped_save(struct thpd *d);
void thpd_stepped_forget(struct thpd *d);
/*
 * on stop: put back what the host had (RestoreOnStop=yes; with no,
 * thpd_pressure_stop() has stepped up first); forget the originals
 */
void thpd_restore(struct thpd *d);

#endif
