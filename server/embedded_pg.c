/* embedded_pg.c - running the system's PostgreSQL privately.
 *
 * Layout under the data directory D: D/pg is the cluster (initdb'd with trust
 * authentication and no TCP listener), D/run holds its unix socket.  Only
 * processes on this machine that can reach D/run can connect; nothing
 * listens on the network.  When D is not reachable by the postgres user
 * (for example under /root), or its path is too long for a unix socket, the
 * cluster lives under /var/lib/floe/<hash of D> instead, and the log says so.
 *
 * Child processes (initdb, pg_ctl) get an empty signal mask and their own
 * session, so a terminal's Ctrl-C reaches floe, which then stops PostgreSQL
 * in order, rather than killing the database under an in-flight commit. */
#include "embedded_pg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <openssl/evp.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "path.h"

struct srv_pg {
	char bin[1024];
	char pgdata[1100];
	char run[1100];
	char log[1200];
	bool started_here;
	bool as_root;
	uid_t uid;
	gid_t gid;
};

/* Runs argv (argv[0] is an absolute path) as the cluster owner, output
 * appended to log; returns its exit status or -1. */
static int run(struct srv_pg *pg, char *const argv[], bool detach)
{
	int fd = open(pg->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	pid_t pid;
	int status;

	if (fd < 0)
		return -1;
	if (pg->as_root)
		(void)!fchown(fd, pg->uid, pg->gid);
	pid = fork();
	if (pid < 0) {
		close(fd);
		return -1;
	}
	if (pid == 0) {
		sigset_t none;
		int null = open("/dev/null", O_RDONLY);

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (detach)
			setsid();
		if (null >= 0)
			dup2(null, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (chdir("/") != 0)
			_exit(126);
		if (pg->as_root && (setgid(pg->gid) != 0 || setuid(pg->uid) != 0))
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool has_initdb(const char *dir)
{
	char p[1100];

	snprintf(p, sizeof(p), "%s/initdb", dir);
	return access(p, X_OK) == 0;
}

static int find_bin(const char *setting, char *out, size_t cap, struct fl_err *err)
{
	if (setting != NULL && setting[0] != '\0') {
		if (!has_initdb(setting))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "setting pg-bin-dir: no initdb in %s", setting);
		snprintf(out, cap, "%s", setting);
		return 0;
	}
	/* Debian keeps each major version apart; prefer the newest. */
	for (int v = 30; v >= 10; v--) {
		snprintf(out, cap, "/usr/lib/postgresql/%d/bin", v);
		if (has_initdb(out))
			return 0;
	}
	for (const char *d = "/usr/local/bin\0/usr/bin\0/usr/local/pgsql/bin\0"; *d;
	     d += strlen(d) + 1) {
		if (has_initdb(d)) {
			snprintf(out, cap, "%s", d);
			return 0;
		}
	}
	return fl_err_set(
	        err, FL_ERR_UNAVAILABLE,
	        "no PostgreSQL server found for the embedded default (install postgresql, set pg-bin-dir, or set database-url)");
}

/* True when the postgres user can search dir (checked by really trying). */
static bool reachable_by(uid_t uid, gid_t gid, const char *dir)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		if (setgid(gid) != 0 || setuid(uid) != 0)
			_exit(1);
		_exit(access(dir, X_OK) == 0 ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int mkdir_owned(struct srv_pg *pg, const char *dir, mode_t mode, struct fl_err *err)
{
	if (mkdir(dir, mode) != 0 && errno != EEXIST)
		return fl_err_set(err, FL_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
	if (pg->as_root && chown(dir, pg->uid, pg->gid) != 0)
		return fl_err_set(err, FL_ERR_IO, "cannot chown %s: %s", dir, strerror(errno));
	return 0;
}

static int choose_dirs(struct srv_pg *pg, const char *data_dir, struct fl_err *err)
{
	bool ok =
	        strlen(data_dir) < 80 && (!pg->as_root || reachable_by(pg->uid, pg->gid, data_dir));

	if (ok) {
		snprintf(pg->pgdata, sizeof(pg->pgdata), "%s/pg", data_dir);
		snprintf(pg->run, sizeof(pg->run), "%s/run", data_dir);
		return 0;
	}
	unsigned char h[32];
	unsigned int hl = 0;
	char base[128];

	EVP_Digest(data_dir, strlen(data_dir), h, &hl, EVP_sha256(), NULL);
	snprintf(base, sizeof(base), "/var/lib/floe/pg-%02x%02x%02x%02x%02x%02x", h[0], h[1], h[2],
	         h[3], h[4], h[5]);
	if (fl_mkdir_p(base) != 0)
		return fl_err_set(err, FL_ERR_IO, "cannot create %s: %s", base, strerror(errno));
	fl_info(NULL,
	        "embedded PostgreSQL lives in %s (%s is not usable by the postgres user or too long)",
	        base, data_dir);
	snprintf(pg->pgdata, sizeof(pg->pgdata), "%s/pg", base);
	snprintf(pg->run, sizeof(pg->run), "%s/run", base);
	return 0;
}

static int ensure_database(const char *run, struct fl_err *err)
{
	char ci[1200];
	PGconn *c;
	PGresult *r;
	int rc = -1;

	snprintf(ci, sizeof(ci), "host=%s user=postgres dbname=postgres connect_timeout=10", run);
	c = PQconnectdb(ci);
	if (PQstatus(c) != CONNECTION_OK) {
		fl_err_set(err, FL_ERR_UNAVAILABLE, "embedded PostgreSQL is not answering: %.150s",
		           PQerrorMessage(c));
		goto out;
	}
	r = PQexec(c, "SELECT 1 FROM pg_database WHERE datname = 'floe'");
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 0) {
		PQclear(r);
		r = PQexec(c, "CREATE DATABASE floe");
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			fl_err_set(err, FL_ERR_INTERNAL, "cannot create database floe: %.150s",
			           PQresultErrorMessage(r));
			PQclear(r);
			goto out;
		}
	}
	PQclear(r);
	rc = 0;
out:
	PQfinish(c);
	return rc;
}

int srv_pg_start(const char *data_dir, const char *bin_dir, char **conninfo, struct srv_pg **out,
                 struct fl_err *err)
{
	struct srv_pg *pg = calloc(1, sizeof(*pg));
	char version_file[1200], prog[1100], opts[1300], ci[1200];
	int rc;

	if (pg == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (find_bin(bin_dir, pg->bin, sizeof(pg->bin), err) != 0)
		goto fail;
	if (geteuid() == 0) {
		struct passwd *pw = getpwnam("postgres");

		if (pw == NULL) {
			fl_err_set(
			        err, FL_ERR_UNAVAILABLE,
			        "running as root needs a 'postgres' user to own the embedded cluster");
			goto fail;
		}
		pg->as_root = true;
		pg->uid = pw->pw_uid;
		pg->gid = pw->pw_gid;
	}
	if (choose_dirs(pg, data_dir, err) != 0 || mkdir_owned(pg, pg->pgdata, 0700, err) != 0 ||
	    mkdir_owned(pg, pg->run, 0700, err) != 0)
		goto fail;
	snprintf(pg->log, sizeof(pg->log), "%s/../postgresql.log", pg->pgdata);

	snprintf(version_file, sizeof(version_file), "%s/PG_VERSION", pg->pgdata);
	if (access(version_file, F_OK) != 0) {
		fl_info(NULL, "initializing embedded PostgreSQL cluster in %s", pg->pgdata);
		snprintf(prog, sizeof(prog), "%s/initdb", pg->bin);
		char *argv[] = {prog,           "-D", pg->pgdata, "-U",         "postgres",
		                "--auth=trust", "-E", "UTF8",     "--locale=C", NULL};
		if (run(pg, argv, false) != 0) {
			fl_err_set(err, FL_ERR_UNAVAILABLE, "initdb failed; see %s", pg->log);
			goto fail;
		}
	}
	snprintf(prog, sizeof(prog), "%s/pg_ctl", pg->bin);
	{
		char *st[] = {prog, "-D", pg->pgdata, "status", NULL};

		rc = run(pg, st, false);
	}
	if (rc == 0) {
		fl_info(NULL, "reusing the embedded PostgreSQL already running in %s", pg->pgdata);
	} else {
		snprintf(opts, sizeof(opts), "-c listen_addresses='' -k %s -c max_connections=200",
		         pg->run);
		char *argv[] = {prog, "-D", pg->pgdata, "-w",    "-t",
		                "60", "-o", opts,       "start", NULL};
		if (run(pg, argv, true) != 0) {
			fl_err_set(err, FL_ERR_UNAVAILABLE,
			           "embedded PostgreSQL did not start; see %s", pg->log);
			goto fail;
		}
		pg->started_here = true;
	}
	if (ensure_database(pg->run, err) != 0) {
		srv_pg_stop(pg);
		return -1;
	}
	snprintf(ci, sizeof(ci), "host=%s user=postgres dbname=floe", pg->run);
	*conninfo = strdup(ci);
	if (*conninfo == NULL) {
		srv_pg_stop(pg);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	*out = pg;
	return 0;
fail:
	free(pg);
	return -1;
}

void srv_pg_stop(struct srv_pg *pg)
{
	char prog[1100];

	if (pg == NULL)
		return;
	if (pg->started_here) {
		snprintf(prog, sizeof(prog), "%s/pg_ctl", pg->bin);
		char *argv[] = {prog, "-D", pg->pgdata, "-m",   "fast",
		                "-w", "-t", "60",       "stop", NULL};
		if (run(pg, argv, false) != 0)
			fl_warn(NULL, "embedded PostgreSQL did not stop cleanly; see %s", pg->log);
		else
			fl_info(NULL, "embedded PostgreSQL stopped");
	}
	free(pg);
}
