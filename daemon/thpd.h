/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * thpd's state and its lifecycle (lifecycle.c): start, reload, the
 * administrator's changes, the stop. What the host should hold after each
 * is the state machine's (adaptive.h); lifecycle.c writes it. The event
 * sources (pressure.c, exec-events.c) and the socket server (server.c) call
 * into this; it never calls them: what must happen to the sources after a
 * (re)configuration is the on_configured callback that main wires in.
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
	struct thp_cmdline cmdline;	/* the THP parameters the kernel took at boot */
	struct thpd_machine machine;	/* the target and the adaptive state (adaptive.h) */

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
 * the kernel command line, then the host is made to hold the target.
 * -EINVAL: configuration unusable; other -errno: the self-check or
 * applying failed (both logged).
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
 * A change of a value a step-down holds ends the step-down (adaptive.h).
 * -EINVAL with why "" for an invalid value; other failures say in why
 * what failed and what the host was left in.
 */
int thpd_set_enabled(struct thpd *d, const char *value, char *why, size_t size);
int thpd_set_defrag(struct thpd *d, const char *value, char *why, size_t size);
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
 * The khugepaged settings set[] marks (the kernel's limits checked first,
 * -EINVAL with why): persisted, then the host made to hold the new target
 * (a failed write puts back the saved state and the host). From then on
 * they are part of the target at the rank of persisted state
 * (precedence.h). 0 or -errno with why.
 */
int thpd_set_khugepaged(struct thpd *d, const bool set[THPD_KH_N],
			const uint64_t val[THPD_KH_N], char *why, size_t size);
/*
 * Forget every value an administrator set (the socket's reset, thpctl
 * reset): the persisted state is emptied, and the host holds the target of
 * the command line, the configuration and its originals. A step-down ends.
 */
int thpd_reset(struct thpd *d, char *why, size_t size);
/*
 * Write enabled (a thp_mode_parse() word or number; NULL or "": leave) and
 * defrag (NULL or "": leave) as one change: when a write fails, what was
 * written before it is written back. 0, or -errno with why saying which
 * file failed and whether the host was rolled back.
 */
int thpd_apply_settings(const char *enabled, const char *defrag, char *why, size_t size);
/*
 * Make the host hold v: shmem_enabled and the sizes, then enabled and
 * defrag as one change, then the khugepaged knobs; only what differs is
 * written, a size or knob the kernel lacks is a warning. what names the
 * occasion in messages; wrote (may be NULL) gets " file=word" for each
 * shmem_enabled and size written. 0 or the first failure's -errno (logged).
 */
int thpd_hold(struct thpd *d, const struct thpd_target *v, const char *what, char *wrote,
	      size_t wsize);
/*
 * The machine acted (a step down or up; before: what the host held): make
 * the host hold what it holds now, logged with FROM= (the kernel's values),
 * TO= and REASON=
 */
void thpd_act(struct thpd *d, enum thpd_action a, const struct thpd_target *before);
/* what the host should hold now: the target, with the overlay while stepped down */
void thpd_held(const struct thpd *d, struct thpd_target *v);
/*
 * on stop: put back what the host had (RestoreOnStop=yes), or leave the
 * target (no; stepping up first); nothing when a package upgrade hands the
 * host over to the next thpd ($RUNTIME_DIRECTORY/handover, thpd(8)); then
 * forget the originals unless handing over
 */
void thpd_stop(struct thpd *d);

#define THPD_HANDOVER_FILE "handover"

#endif
