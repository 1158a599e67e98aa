/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpctl internals shared by its verbs. */
#ifndef THPCTL_H
#define THPCTL_H

#include <getopt.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

struct thp_choice;

/* exit codes (documented in thpctl(1)) */
#define EXIT_OK 0
#define EXIT_FAIL 1
#define EXIT_USAGE 2
/*
 * written, but the kernel does not do what was asked (a per-size value
 * wins, THP is off); run: the policy would reach no memory, nothing run
 */
#define EXIT_NOT_IN_EFFECT 3

/*
 * What the dispatcher hands a verb: its operands (options parsed away) and
 * the options it took. Each verb's own options are in its file
 * (VERB_options[], parsed into these fields by VERB_option()).
 */
struct verb_args {
	int argc;
	char **argv;		/* argv[0] is the verb, then the operands */
	bool json;		/* --json, -J (read verbs) */
	bool all;		/* status --all: every file, counter and khugepaged value */
	bool quiet;		/* run -q: no notices, nothing refused that the kernel takes */
	bool collapse;		/* policy --collapse */
	const char *sort;	/* ps --sort, NULL: by PID */
	int policy;		/* run --advise|--never|--default: PR_THP_MM_POLICY_* */
	bool policy_set;	/* ... given */
	const char *output;	/* metrics --output=FILE */
	int cg_depth, cg_top;	/* cgroups/metrics --depth, --top */
	bool cg_depth_set, cg_top_set;
	bool cg_all;		/* cgroups --all: cgroups without THP too */
	const char *sizes;	/* enable/shmem --size LIST, NULL: none given */
};

/* the limits of the cgroup walk when none is given (thpctl(1), CARDINALITY) */
#define CGROUPS_DEFAULT_DEPTH 3
#define CGROUPS_DEFAULT_TOP 20

/* messages on stderr prefixed with "thpctl: " */
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* usage error: message, "Try 'thpctl --help'", returns EXIT_USAGE */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "<root>path" for messages, in a static buffer rotated between 4 slots */
const char *full_path(const char *path);

/*
 * Text for a terminal (output.c): call output_init() first (it reads the
 * locale). put_text writes s to f (if not NULL) with controls and invalid
 * bytes shown as '?', as ps(1) does; returns the terminal cells it takes.
 */
void output_init(void);
size_t put_text(FILE *f, const char *s);
/*
 * Length of the well-formed UTF-8 sequence at s (RFC 3629: shortest form,
 * no surrogates, at most U+10FFFF), or 0 for an invalid byte.
 */
size_t utf8_len(const unsigned char *s);

/*
 * The one print path of every read verb: the verb builds a JSON object, this
 * prints it as JSON (--json) or as text. Takes the reference.
 */
int output(struct json_object *obj, bool json);
/* the same to f */
int output_to(FILE *f, struct json_object *obj, bool json);
/*
 * How output() prints JSON: "pretty" (indented, what plain --json gives)
 * or "short" (one line); NULL: pretty. -EINVAL for anything else.
 */
int output_json_style(const char *style);
/* add helpers that tolerate NULL (allocation failure shows up at print time) */
void jadd_str(struct json_object *o, const char *key, const char *val);
void jadd_u64(struct json_object *o, const char *key, uint64_t val);
void jadd_int(struct json_object *o, const char *key, int64_t val);
void jadd_bool(struct json_object *o, const char *key, bool val);
/*
 * "name value" lines (vmstat, thp_stat) whose name starts with prefix, as
 * counters in o; names of any length, lines that are not a name and a
 * number skipped. text is cut up. Returns 0.
 */
int jadd_counters(struct json_object *o, char *text, const char *prefix);

/* thpd client (client.c): THPD_SOCKET or /run/thpd.sock */
const char *thpctl_socket_path(void);
/*
 * Send {"cmd":cmd[,"value":value]} to thpd. Returns 1 with *reply set (an
 * {"ok":true,...} object), 0 when thpd is not reachable (*why says why, for
 * messages), or -errno after logging the failure (error reply, timeout).
 */
int thpctl_call(const char *cmd, const char *value, struct json_object **reply,
		const char **why);
/* the same with "size" (a "64K,2M" list) when size is not NULL */
int thpctl_call_size(const char *cmd, const char *value, const char *size,
		     struct json_object **reply, const char **why);
/* {"cmd":cmd, member: obj}, obj taken (khugepaged's "set") */
int thpctl_call_object(const char *cmd, const char *member, struct json_object *obj,
		       struct json_object **reply, const char **why);

/* process.c: a PID operand (decimal, > 0) */
bool parse_pid(const char *s, pid_t *pid);
/*
 * /proc/PID/comm without the newline the kernel adds, raw bytes (print it
 * through output()); 0 or -errno, -EFBIG if longer than size - 1 bytes.
 * The kernel's names are at most 64 bytes (a kernel thread's).
 */
#define COMM_SIZE 256
int read_comm(pid_t pid, char *comm, size_t size);

/* run's value for --advised-only, beside the PR_THP_MM_POLICY_* ones */
#define RUN_ADVISED_ONLY 100
/*
 * What --advise (policy PR_THP_MM_POLICY_ADVISE) or --advised-only can
 * reach on this kernel now, per size: nothing while no size is used at
 * fault (and on a stock kernel, where glibc's tunable is all --advise has,
 * while the top-level enabled that glibc reads is never): said (who would
 * get nothing, then refused: what follows, e.g. "; not run"), and
 * EXIT_NOT_IN_EFFECT. A stock kernel's --advise reaches glibc's malloc
 * only: said. quiet: nothing said, EXIT_OK. EXIT_OK otherwise.
 */
int run_check_reach(int policy, bool quiet, const char *who, const char *refused);

/* policy --collapse: results added to out; 0 or -errno (logged) */
int collapse_process(pid_t pid, struct json_object *out);

/*
 * A value given as "help" lists, one a line, the values the running kernel
 * offers there, and exits 0 (as systemctl --type=help): enable help, shmem
 * help, defrag help, --size=help, ps --sort=help, cgroups --sort=help,
 * policy PID help. The bash completion asks these rather than keep lists.
 */
bool is_help(const char *value);
/* each word of c, one a line (the bracket of the current one left off) */
void list_choice(const struct thp_choice *c);

/*
 * A verb's own options (in its file): the getopt_long table, and the
 * handler called for each one found (returns 0, -1 when it has listed the
 * values of a "help" argument and thpctl should exit 0, or usage_error()'s
 * code).
 */
extern const struct option run_options[], ps_options[], policy_options[], status_options[];
int status_option(struct verb_args *a, int opt, const char *arg);
extern const struct option cgroups_options[], metrics_options[];
int cgroups_option(struct verb_args *a, int opt, const char *arg);
int metrics_option(struct verb_args *a, int opt, const char *arg);
extern const struct option enable_options[], shmem_options[];
int enable_option(struct verb_args *a, int opt, const char *arg);	/* shmem's too */
int run_option(struct verb_args *a, int opt, const char *arg);
int ps_option(struct verb_args *a, int opt, const char *arg);
int policy_option(struct verb_args *a, int opt, const char *arg);

int verb_status(struct verb_args *a);
int verb_enable(struct verb_args *a);
int verb_defrag(struct verb_args *a);
int verb_shmem(struct verb_args *a);
int verb_run(struct verb_args *a);
int verb_ps(struct verb_args *a);
int verb_policy(struct verb_args *a);
int verb_cgroups(struct verb_args *a);
int verb_metrics(struct verb_args *a);
int verb_khugepaged(struct verb_args *a);
int verb_unit(struct verb_args *a);
int verb_verify(struct verb_args *a);
int verb_reset(struct verb_args *a);

/*
 * verify.c: how many files differ from what thpd should hold (its target
 * and the overlay, from thpd's status reply), as thpctl verify counts them,
 * into differ; thpctl metrics' thpd_drift_files. 0, or -errno (-EPROTO for
 * a thpd that names no target).
 */
int verify_drift(struct json_object *status, unsigned int *differ);

/*
 * cgroups.c: the memory cgroups within a's --depth, ranked by a's --sort
 * (default: THP memory), at most --top, those without THP left out unless
 * --all: an array of objects ("cgroup", "thp", memory.stat's anon_thp,
 * file_thp, shmem_thp and thp_* events). *count: the memory cgroups read
 * within the depth, and those skipped because their memory.stat or
 * directory could not be read (the others are still collected). 0, -EINVAL
 * for an unknown sort key, or -ENOMEM.
 */
struct cgroups_count {
	size_t seen, skipped;
};
int cgroups_collect(const struct verb_args *a, struct json_object **rows,
		    struct cgroups_count *count);
void cgroups_limits(const struct verb_args *a, int *depth, int *top);

#endif
