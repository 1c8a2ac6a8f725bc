/* embedded_pg.c - running the system's PostgreSQL privately.
 *
 * Layout under the data directory D: D/pg is the cluster (initdb'd with trust
 * authentication and no TCP listener), D/run holds its unix socket.  Only
 * processes on this machine that can reach D/run can connect; nothing
 * listens on the network.  When D is not reachable by the postgres user
 * (for example under /root), or its path is too long for a unix socket, the
 * cluster lives under /var/lib/floe/pg-<hash of D> instead; the startup log
 * and `floe status` say where and why.  The directory holding pg/ and run/
 * (D, or the fallback) is the cluster's "base"; its lock files live there.
 *
 * Who stops the cluster.  Any number of floe processes may use one cluster at
 * once: floe serve on several ports, floe ingest and floe migrate in process.
 * Two lock files in the base carry POSIX record locks, which the kernel drops
 * when a process exits however it exits (fl_lockfile_set):
 *  - pg.users.lock: every process using the cluster holds a SHARED lock on it
 *    from srv_pg_start to srv_pg_stop.  A crashed process holds none, so it
 *    never counts as a user.
 *  - pg.start.lock: held EXCLUSIVELY while a process decides to start, adopt
 *    or stop the cluster, so those decisions never interleave.  Only its
 *    holder asks whether pg.users.lock has other holders.
 *  - Start, under pg.start.lock: initdb if needed; start the cluster if it is
 *    not running; if it runs and pg.users.lock has no holder, a floe process
 *    that died left it behind: adopt it and say so; otherwise share it.  Then
 *    create the floe database if missing and take the shared user lock.  A
 *    start that fails once the cluster runs applies the stop rule below.
 *  - Stop, under pg.start.lock: upgrade the user lock to exclusive without
 *    waiting.  Granted means no other live user: `pg_ctl stop -m fast`.
 *    Refused means others still use it: leave it running.  Whether this
 *    process started the cluster or found it running does not matter.
 * So the cluster is stopped by the last live user, never earlier; one left
 * running by a crash is stopped by the next process that uses it.  External
 * tools that connect to the socket (psql) do not count as users.
 *
 * Child processes (initdb, pg_ctl) get an empty signal mask and their own
 * session, so a terminal's Ctrl-C reaches floe, which then stops PostgreSQL
 * in order, rather than killing the database under an in-flight commit.  The
 * lock files are opened close-on-exec, so PostgreSQL never holds them. */
#include "embedded_pg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libcrypto.h"
#include "db/libpq.h"
#include "log.h"
#include "path.h"

struct srv_pg {
	char bin[1024];
	char base[1024];
	char pgdata[1100];
	char run[1100];
	char log[1200];
	char why[200]; /* why the cluster is not in the data directory, or "" */
	bool as_root;
	uid_t uid;
	gid_t gid;
	int start_fd; /* pg.start.lock; -1 when not open */
	int users_fd; /* pg.users.lock, shared-locked while this process is a user */
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

/* Sets pg->base, pgdata, run and why.  With create, makes the fallback base. */
static int choose_dirs(struct srv_pg *pg, const char *data_dir, bool create, struct fl_err *err)
{
	unsigned char h[32];
	unsigned int hl = 0;

	pg->why[0] = '\0';
	if (strlen(data_dir) >= 80)
		snprintf(pg->why, sizeof(pg->why),
		         "the data directory's path is too long for PostgreSQL's unix socket");
	else if (pg->as_root && !reachable_by(pg->uid, pg->gid, data_dir))
		snprintf(pg->why, sizeof(pg->why),
		         "the postgres user cannot reach the data directory (check the "
		         "permissions of every directory on its path)");
	if (pg->why[0] == '\0') {
		snprintf(pg->base, sizeof(pg->base), "%s", data_dir);
	} else {
		EVP_Digest(data_dir, strlen(data_dir), h, &hl, EVP_sha256(), NULL);
		snprintf(pg->base, sizeof(pg->base), "/var/lib/floe/pg-%02x%02x%02x%02x%02x%02x",
		         h[0], h[1], h[2], h[3], h[4], h[5]);
		if (create && fl_mkdir_p(pg->base) != 0)
			return fl_err_set(err, FL_ERR_IO, "cannot create %s: %s", pg->base,
			                  strerror(errno));
	}
	snprintf(pg->pgdata, sizeof(pg->pgdata), "%s/pg", pg->base);
	snprintf(pg->run, sizeof(pg->run), "%s/run", pg->base);
	snprintf(pg->log, sizeof(pg->log), "%s/postgresql.log", pg->base);
	return 0;
}

/* Allocates pg and works out where the cluster for data_dir lives. */
static int resolve(const char *data_dir, const char *bin_dir, bool create, struct srv_pg **out,
                   struct fl_err *err)
{
	struct srv_pg *pg = calloc(1, sizeof(*pg));

	if (pg == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	pg->start_fd = -1;
	pg->users_fd = -1;
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
	if (choose_dirs(pg, data_dir, create, err) != 0)
		goto fail;
	*out = pg;
	return 0;
fail:
	free(pg);
	return -1;
}

static void free_pg(struct srv_pg *pg)
{
	/* Closing drops this process's locks on the files. */
	if (pg->users_fd >= 0)
		close(pg->users_fd);
	if (pg->start_fd >= 0)
		close(pg->start_fd);
	free(pg);
}

static int open_lock(const struct srv_pg *pg, const char *name, int *fd, struct fl_err *err)
{
	char path[1200];

	snprintf(path, sizeof(path), "%s/%s", pg->base, name);
	*fd = fl_lockfile_open(path);
	if (*fd < 0)
		return fl_err_set(err, FL_ERR_IO, "cannot open lock file %s: %s", path,
		                  strerror(errno));
	return 0;
}

/* Takes pg.start.lock, saying whom it waits for when another process holds it. */
static int lock_start(struct srv_pg *pg, struct fl_err *err)
{
	long other;

	if (fl_lockfile_set(pg->start_fd, F_WRLCK, false) == 0)
		return 0;
	if (errno == EAGAIN && (other = fl_lockfile_holder(pg->start_fd, F_WRLCK)) > 0)
		fl_info(NULL,
		        "waiting for floe process %ld, which is starting or stopping the embedded "
		        "PostgreSQL in %s",
		        other, pg->pgdata);
	if (fl_lockfile_set(pg->start_fd, F_WRLCK, true) != 0)
		return fl_err_set(err, FL_ERR_IO, "cannot lock %s/pg.start.lock: %s", pg->base,
		                  strerror(errno));
	return 0;
}

static void unlock_start(struct srv_pg *pg)
{
	if (fl_lockfile_set(pg->start_fd, F_UNLCK, false) != 0)
		fl_warn(NULL, "cannot unlock %s/pg.start.lock: %s", pg->base, strerror(errno));
}

/* True when `pg_ctl status` says the cluster runs. */
static bool cluster_running(struct srv_pg *pg)
{
	char prog[1100];

	snprintf(prog, sizeof(prog), "%s/pg_ctl", pg->bin);
	char *argv[] = {prog, "-D", pg->pgdata, "status", NULL};
	return run(pg, argv, false) == 0;
}

/* With pg.start.lock held: stops the cluster when no other process holds
 * pg.users.lock, whether or not this one does. */
static void stop_if_last(struct srv_pg *pg)
{
	char prog[1100];
	long other;

	if (fl_lockfile_set(pg->users_fd, F_WRLCK, false) != 0) {
		other = fl_lockfile_holder(pg->users_fd, F_WRLCK);
		fl_info(NULL,
		        "embedded PostgreSQL left running for floe process %ld, which still uses it",
		        other);
		return;
	}
	if (!cluster_running(pg))
		return;
	snprintf(prog, sizeof(prog), "%s/pg_ctl", pg->bin);
	char *argv[] = {prog, "-D", pg->pgdata, "-m", "fast", "-w", "-t", "60", "stop", NULL};
	if (run(pg, argv, false) != 0)
		fl_warn(NULL, "embedded PostgreSQL did not stop cleanly; see %s", pg->log);
	else
		fl_info(NULL, "embedded PostgreSQL stopped (this was its last floe user)");
}

static int ensure_database(const char *run, struct fl_err *err)
{
	char ci[1200];
	PGconn *c;
	PGresult *r;
	int rc = -1;

	if (cat_libpq_load(err) != 0)
		return -1;
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
	struct srv_pg *pg = NULL;
	char version_file[1200], prog[1100], opts[1300], ci[1200];
	bool locked = false, running = false;
	long user;

	if (resolve(data_dir, bin_dir, true, &pg, err) != 0)
		return -1;
	if (pg->why[0] != '\0')
		fl_info(NULL, "embedded PostgreSQL lives in %s, not in %s: %s", pg->base, data_dir,
		        pg->why);
	if (mkdir_owned(pg, pg->pgdata, 0700, err) != 0 ||
	    mkdir_owned(pg, pg->run, 0700, err) != 0 ||
	    open_lock(pg, "pg.start.lock", &pg->start_fd, err) != 0 ||
	    open_lock(pg, "pg.users.lock", &pg->users_fd, err) != 0 || lock_start(pg, err) != 0)
		goto fail;
	locked = true;

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
	user = fl_lockfile_holder(pg->users_fd, F_WRLCK);
	running = cluster_running(pg);
	if (running) {
		if (user > 0)
			fl_info(NULL,
			        "sharing the embedded PostgreSQL in %s with floe process %ld (and "
			        "any others using it); the last one to exit stops it",
			        pg->pgdata, user);
		else
			fl_info(NULL,
			        "adopting the embedded PostgreSQL in %s, left running by a floe "
			        "process that exited; it stops when its last floe user exits",
			        pg->pgdata);
	} else {
		snprintf(prog, sizeof(prog), "%s/pg_ctl", pg->bin);
		snprintf(opts, sizeof(opts), "-c listen_addresses='' -k %s -c max_connections=200",
		         pg->run);
		char *argv[] = {prog, "-D", pg->pgdata, "-w",    "-t",
		                "60", "-o", opts,       "start", NULL};
		if (run(pg, argv, true) != 0) {
			fl_err_set(err, FL_ERR_UNAVAILABLE,
			           "embedded PostgreSQL did not start; see %s", pg->log);
			goto fail;
		}
		running = true;
		fl_info(NULL, "started the embedded PostgreSQL in %s", pg->pgdata);
	}
	/* Still under pg.start.lock, so two first starts never both create it. */
	if (ensure_database(pg->run, err) != 0)
		goto fail;
	/* Cannot wait long: only a holder of pg.start.lock ever locks it exclusively. */
	if (fl_lockfile_set(pg->users_fd, F_RDLCK, true) != 0) {
		fl_err_set(err, FL_ERR_IO, "cannot lock %s/pg.users.lock: %s", pg->base,
		           strerror(errno));
		goto fail;
	}
	unlock_start(pg);
	snprintf(ci, sizeof(ci), "host=%s user=postgres dbname=floe", pg->run);
	*conninfo = strdup(ci);
	if (*conninfo == NULL) {
		srv_pg_stop(pg);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	*out = pg;
	return 0;
fail:
	/* Not a user: the same rule as srv_pg_stop, so a failed start leaves no
	 * cluster running that nobody uses. */
	if (running)
		stop_if_last(pg);
	if (locked)
		unlock_start(pg);
	free_pg(pg);
	return -1;
}

void srv_pg_stop(struct srv_pg *pg)
{
	struct fl_err err = {0};

	if (pg == NULL)
		return;
	if (lock_start(pg, &err) != 0) {
		/* Without the lock this process cannot know it is the last user. */
		fl_warn(NULL, "embedded PostgreSQL left running: %s", err.msg);
		goto out;
	}
	stop_if_last(pg);
	/* Drop the user lock before the start lock: a process starting next then
	 * finds the cluster stopped and nobody using it. */
	close(pg->users_fd);
	pg->users_fd = -1;
out:
	free_pg(pg);
}

int srv_pg_status(const char *data_dir, const char *bin_dir, FILE *out, struct fl_err *err)
{
	struct srv_pg *pg = NULL;
	char path[1200], line[32] = "";
	long user = 0;
	FILE *f;
	int fd;

	if (resolve(data_dir, bin_dir, false, &pg, err) != 0)
		return -1;
	fprintf(out, "cluster:        %s\n", pg->pgdata);
	if (pg->why[0] != '\0')
		fprintf(out, "                (not in the data directory: %s)\n", pg->why);
	fprintf(out, "socket:         %s/.s.PGSQL.5432\n", pg->run);
	fprintf(out, "server log:     %s\n", pg->log);
	snprintf(path, sizeof(path), "%s/PG_VERSION", pg->pgdata);
	if (access(path, F_OK) != 0) {
		fprintf(out, "state:          not created yet (floe serve creates it)\n");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/postmaster.pid", pg->pgdata);
	f = fopen(path, "r");
	if (f != NULL) {
		if (fgets(line, sizeof(line), f) == NULL)
			line[0] = '\0';
		line[strcspn(line, "\n")] = '\0';
		fclose(f);
	}
	if (cluster_running(pg))
		fprintf(out, "state:          running (postmaster pid %s)\n", line);
	else
		fprintf(out, "state:          stopped\n");
	/* Only asks: a status query never takes a lock, so it cannot disturb a
	 * process deciding whether it is the last user. */
	snprintf(path, sizeof(path), "%s/pg.users.lock", pg->base);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		user = fl_lockfile_holder(fd, F_WRLCK);
		close(fd);
	}
	if (user > 0)
		fprintf(out,
		        "floe users:     pid %ld (and any others; the last to exit stops it)\n",
		        user);
	else
		fprintf(out, "floe users:     none\n");
out:
	free_pg(pg);
	return 0;
}
