// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * thpd: the THP policy daemon. main() parses the command line, then run()
 * wires the event loop together; what thpd does lives in lifecycle.c
 * (start, reload, apply, restore), pressure.c and exec-events.c (event
 * sources) and server.c (the socket). See thpd(8).
 */
#include "thpd.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "caps.h"
#include "collapse.h"
#include "exec-events.h"
#include "log.h"
#include "pressure.h"
#include "server.h"
#include "tick.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: thpd [OPTIONS]\n"
		"The transparent hugepage policy daemon (see thpd(8)).\n\n"
		"  -c, --config FILE     configuration file (default " THPD_CONF_PATH
		"),\n"
		"                        drop-ins are read from FILE.d/*.conf\n"
		"      --state-dir DIR   persisted state (default $STATE_DIRECTORY or " THPD_STATE_DIR
		")\n"
		"      --socket PATH     socket when not socket-activated (default " THP_SOCKET_PATH
		")\n"
		"      --check-config    parse the configuration, report problems, exit\n"
		"      --keep-caps       do not drop capabilities (debugging only)\n"
		"  -h, --help            this help\n"
		"  -V, --version         the version\n");
}

static int on_term(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	(void)userdata;
	log_info("Received %s, stopping", strsignal((int)si->ssi_signo));
	sd_notify(0, "STOPPING=1");
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int on_hup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	(void)s;
	(void)si;
	thpd_reload(userdata);
	return 0;
}

/* after start and every reload: the sources follow the new configuration */
static void reopen_sources(struct thpd *d)
{
	thpd_pressure_close(d);
	thpd_pressure_open(d);
	thpd_exec_events_close(d);
	thpd_exec_events_open(d);
	thpd_collapse_close(d);
	thpd_collapse_open(d);
	thpd_tick_rearm(d);
}

static void teardown(struct thpd *d)
{
	thpd_collapse_close(d);
	thpd_tick_close(d);
	thpd_exec_events_close(d);
	thpd_pressure_close(d);
	thpd_server_close(d);
}

/*
 * $STATE_DIRECTORY / $RUNTIME_DIRECTORY may list several: take the first.
 * -ENAMETOOLONG when it does not fit: a cut path could name another tree.
 */
static int first_dir(char *out, size_t size, const char *env, const char *fallback)
{
	const char *v = getenv(env);
	size_t len;

	if (!v || !*v)
		v = fallback;
	len = strcspn(v, ":");
	if (len >= size)
		return -ENAMETOOLONG;
	memcpy(out, v, len);
	out[len] = '\0';
	return 0;
}

static void report_stderr(void *userdata, enum thpd_diag_level level, const char *file,
			  unsigned int line, const char *msg)
{
	int *fatal = userdata;

	if (level == THPD_DIAG_FATAL)
		*fatal = 1;
	if (file && line)
		fprintf(stderr, "%s:%u: %s: %s\n", file, line,
			level == THPD_DIAG_FATAL ? "error" : "warning", msg);
	else
		fprintf(stderr, "%s%s%s: %s\n", file ? file : "", file ? ": " : "",
			level == THPD_DIAG_FATAL ? "error" : "warning", msg);
}

static int check_config(const char *path, bool must_exist)
{
	struct thpd_config *cfg = malloc(sizeof(*cfg));
	int fatal = 0, r;
	struct thpd_diag diag = { .report = report_stderr, .userdata = &fatal };

	if (!cfg)
		return THPD_EXIT_FAILURE;
	r = thpd_config_load(cfg, path, must_exist, &diag);
	if (r == 0)
		printf("%s: OK, %u rule%s, adaptive %s\n", path, cfg->n_rules,
		       cfg->n_rules == 1 ? "" : "s", cfg->adaptive.enabled ? "on" : "off");
	free(cfg);
	return r < 0 ? THPD_EXIT_CONFIG : THPD_EXIT_OK;
}

struct options {
	const char *config_path;
	bool config_given;		/* --config: the file must exist */
	const char *state_dir;		/* NULL: $STATE_DIRECTORY or the default */
	const char *socket_path;
	bool check, keep_caps;
};

/* THPD_EXIT_OK to go on, else the exit code */
static int parse_args(int argc, char **argv, struct options *o, bool *done)
{
	enum { OPT_STATE_DIR = 256, OPT_SOCKET, OPT_CHECK, OPT_KEEP_CAPS };
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "check-config", no_argument, NULL, OPT_CHECK },
		{ "keep-caps", no_argument, NULL, OPT_KEEP_CAPS },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	int c;

	*done = false;
	while ((c = getopt_long(argc, argv, "c:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (!optarg[0]) {
				fprintf(stderr, "thpd: --config needs a file name\nTry 'thpd --help'.\n");
				return THPD_EXIT_USAGE;
			}
			o->config_path = optarg;
			o->config_given = true;
			break;
		case OPT_STATE_DIR:
			o->state_dir = optarg;
			break;
		case OPT_SOCKET:
			o->socket_path = optarg;
			break;
		case OPT_CHECK:
			o->check = true;
			break;
		case OPT_KEEP_CAPS:
			o->keep_caps = true;
			break;
		case 'h':
			usage(stdout);
			*done = true;
			return THPD_EXIT_OK;
		case 'V':
			printf("thpd %s\n", THP_VERSION);
			*done = true;
			return THPD_EXIT_OK;
		default:
			fprintf(stderr, "Try 'thpd --help'.\n");
			return THPD_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "thpd: unexpected argument '%s'\nTry 'thpd --help'.\n", argv[optind]);
		return THPD_EXIT_USAGE;
	}
	return THPD_EXIT_OK;
}

static int run(const struct options *o)
{
	static struct thpd d = { .listen_fd = -1, .psi_fd = -1, .cn_fd = -1 };
	char caps[128];
	sigset_t ss;
	int r, ret = THPD_EXIT_FAILURE;

	d.config_path = o->config_path;
	d.config_must_exist = o->config_given;
	d.socket_path = o->socket_path;
	d.on_configured = reopen_sources;
	thpd_log_init();
	thp_root_init();
	if (o->state_dir)
		r = (size_t)snprintf(d.state_dir, sizeof(d.state_dir), "%s", o->state_dir) <
		    sizeof(d.state_dir) ? 0 : -ENAMETOOLONG;
	else
		r = first_dir(d.state_dir, sizeof(d.state_dir), "STATE_DIRECTORY", THPD_STATE_DIR);
	if (r < 0) {
		log_err("The state directory (%s) is longer than %zu characters; not starting",
			o->state_dir ? "--state-dir" : "$STATE_DIRECTORY", sizeof(d.state_dir) - 1);
		return THPD_EXIT_FAILURE;
	}
	if (first_dir(d.runtime_dir, sizeof(d.runtime_dir), "RUNTIME_DIRECTORY", "") < 0) {
		log_err("$RUNTIME_DIRECTORY is longer than %zu characters; not starting",
			sizeof(d.runtime_dir) - 1);
		return THPD_EXIT_FAILURE;
	}

	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGHUP);
	sigprocmask(SIG_BLOCK, &ss, NULL);

	r = sd_event_default(&d.event);
	if (r < 0) {
		log_err("Cannot create the event loop: %s", strerror(-r));
		return THPD_EXIT_FAILURE;
	}

	/* kernel features decide which capabilities are worth keeping */
	r = thp_state_read(&d.kernel);
	if (r < 0) {
		log_err("Cannot read the THP state under %s%s: %s", thp_root(), THP_SYSFS_DIR,
			strerror(-r));
		goto out;
	}
	if (!o->keep_caps) {
		r = thpd_drop_caps(d.kernel.has_thp_policy,
				   thpd_collapse_wanted(d.config_path, d.config_must_exist), caps,
				   sizeof(caps));
		if (r < 0) {
			log_err("Cannot drop capabilities: %s", strerror(-r));
			goto out;
		}
		log_debug("Capabilities kept: %s", caps[0] ? caps : "none");
	}

	/* everything that can fail before anything on the host is changed */
	if ((r = sd_event_add_signal(d.event, NULL, SIGTERM, on_term, &d)) < 0 ||
	    (r = sd_event_add_signal(d.event, NULL, SIGINT, on_term, &d)) < 0 ||
	    (r = sd_event_add_signal(d.event, NULL, SIGHUP, on_hup, &d)) < 0 ||
	    (r = thpd_tick_open(&d)) < 0) {
		log_err("Cannot set up signals and watchdog: %s", strerror(-r));
		goto out;
	}
	if (thpd_server_open(&d) < 0)
		goto out;

	r = thpd_start(&d);
	if (r == -EINVAL) {
		ret = THPD_EXIT_CONFIG;
		goto out;
	}
	if (r < 0) {
		log_err("Start-up self-check failed; not starting");
		goto restore;
	}

	thpd_log_started();
	sd_notifyf(0, "READY=1\nSTATUS=enabled=%s defrag=%s, %u rules, adaptive %s",
		   thp_enabled_name(d.kernel.enabled), d.kernel.defrag, d.cfg.n_rules,
		   d.cfg.adaptive.enabled ? "on" : "off");
	r = sd_event_loop(d.event);
	ret = r < 0 ? THPD_EXIT_FAILURE : THPD_EXIT_OK;
	if (r < 0)
		log_err("Event loop failed: %s", strerror(-r));
restore:
	teardown(&d);
	/* the originals back, the target without a step-down, or nothing for an upgrade */
	thpd_stop(&d);
out:
	teardown(&d);
	thpd_collapse_free(&d);
	sd_event_unref(d.event);
	return ret;
}

int main(int argc, char **argv)
{
	struct options o = { .config_path = THPD_CONF_PATH, .socket_path = THP_SOCKET_PATH };
	bool done;
	int r = parse_args(argc, argv, &o, &done);

	if (r != THPD_EXIT_OK || done)
		return r;
	if (o.check)
		return check_config(o.config_path, o.config_given);
	return run(&o);
}
