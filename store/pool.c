/*
 * pool.c - floe's connections to PostgreSQL: the pool worker threads
 * borrow from, the liveness check, running one prepared statement within
 * a deadline, reconnecting, and transactions.
 *
 * Not for SQL of a relation (each relation's file holds its own) nor for
 * what a failure means (sqlstate.c).
 */
#include "store.h"
#include "store_admin.h"
#include "store_internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "log.h"
#include "metric.h"
#include "txguard.h"

enum { ST_PING, ST_BEGIN, ST_COMMIT, ST_ROLLBACK, ST_XACT_ID, ST_COUNT };

/* One statement a row, its SQL laid out as SQL. */
/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	[ST_PING] = { "ping", "SELECT 1" },
	[ST_BEGIN] = { "begin", "BEGIN" },
	[ST_COMMIT] = { "commit", "COMMIT" },
	[ST_ROLLBACK] = { "rollback", "ROLLBACK" },
	/* NULL for a transaction that wrote nothing: there is no outcome
	 * to settle, and asking must not assign an xid. */
	[ST_XACT_ID] = { "xact_id", "SELECT pg_current_xact_id_if_assigned()::text" },
};
/* clang-format on */

const struct store_statements store_pool_statements = { statements, ST_COUNT, NULL };

/* Every registry, prepared on every connection; NULL ends the list. */
static const struct store_statements *const registries[] = {
	&store_pool_statements,
	&store_ns_statements,
	&store_table_statements,
	&store_purge_statements,
	&store_metrics_statements,
	&store_idem_statements,
	&store_hook_statements,
	&store_run_statements,
	&store_event_statements,
	&store_trail_statements,
	&store_principal_statements,
	&store_role_statements,
	&store_grant_statements,
	&store_feed_statements,
	&store_release_statements,
	&store_sub_statements,
	NULL,
};

struct store_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *conninfo;
	int size;
	struct store *slots;
	const char *name;
	size_t metric; /* its cell in the pool metrics */
	/* The database watch's own (store_watch_pool_new): it asks whether
	 * the database answers, so a stall neither refuses nor interrupts it. */
	bool watch;
	struct store_pool *next; /* in the list of every pool */
};

/* Every pool, so that a stall can reach the statements waiting in them. */
static pthread_mutex_t pools_mu = PTHREAD_MUTEX_INITIALIZER;
static struct store_pool *pools;

/* While the database is stalled (store_stall_begin), how long the watch
 * waited for it in ms; 0 when it answers. */
static atomic_int stalled_ms;

/* Server notices (NOTICE, WARNING) go to the log, not to stderr raw. */
static void store_notice(void *arg, const char *message)
{
	(void)arg;
	size_t len = strlen(message);
	while (len > 0 && message[len - 1] == '\n')
		len--;
	log_debug("store", "%.*s", (int)len, message);
}

/* The transaction of s ended (or never began): the thread's txguard
 * stops counting it. */
static void store_tx_ended(struct store *s)
{
	if (s->in_tx) {
		s->in_tx = false;
		txguard_leave();
	}
}

/* Set once at start-up by store_set_limits, read-only afterwards. */
static struct store_limits limits = { 30000, 10000, 5000 };

/* How long past the statement timeout the client waits for an answer
 * before it takes the database for gone (a stopped server, a partition:
 * the server-side timeout cannot fire then). */
#define STORE_RESPONSE_GRACE_MS 5000

void store_set_limits(const struct store_limits *l)
{
	limits = *l;
}

/* The client-side wait for one answer, in ms; -1: forever. */
static int store_response_wait_ms(void)
{
	if (limits.statement_timeout_ms <= 0)
		return -1;
	return limits.statement_timeout_ms + STORE_RESPONSE_GRACE_MS;
}

/*
 * Opens one session. Our defaults come first so that the caller's
 * conninfo, expanded in place of dbname, overrides them; the timeouts go
 * into "options" after it, ahead of any options the caller gave (a later
 * -c wins, so the caller can still override those too). Migration
 * sessions (bounded false) get no statement or lock timeout: a migration may
 * rewrite a large table or wait for another replica's migration.
 */
/* libpq's reason a connection failed, its trailing newlines cut (in
 * conn's own buffer, valid until PQfinish). */
static const char *connect_reason(PGconn *conn)
{
	char *msg = PQerrorMessage(conn);
	size_t len = strlen(msg);

	while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
		msg[--len] = '\0';
	return msg;
}

static PGconn *connect_within(const char *conninfo, bool bounded, const char *connect_timeout,
			      struct floe_error *err)
{
	char options[1024];
	const char *given = NULL;
	PQconninfoOption *parsed = PQconninfoParse(conninfo, NULL);

	if (parsed != NULL) {
		for (PQconninfoOption *o = parsed; o->keyword != NULL; o++) {
			if (strcmp(o->keyword, "options") == 0 && o->val != NULL)
				given = o->val;
		}
	}
	(void)snprintf(options, sizeof(options), "-c statement_timeout=%d -c lock_timeout=%d%s%s",
		       bounded ? limits.statement_timeout_ms : 0,
		       bounded ? limits.lock_timeout_ms : 0, given ? " " : "", given ? given : "");
	if (parsed != NULL)
		PQconninfoFree(parsed);
	const char *keys[] = { "connect_timeout",
			       "application_name",
			       "keepalives",
			       "keepalives_idle",
			       "keepalives_interval",
			       "keepalives_count",
			       "tcp_user_timeout",
			       "dbname",
			       "options",
			       NULL };
	const char *values[] = { connect_timeout, "floe",   "1",     "15", "5", "3",
				 "30000",         conninfo, options, NULL };
	PGconn *conn = PQconnectdbParams(keys, values, 1);

	if (conn == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	if (PQstatus(conn) != CONNECTION_OK) {
		log_warn("store", "cannot connect to PostgreSQL: %s", connect_reason(conn));
		PQfinish(conn);
		floe_err(err, FE_UNAVAILABLE, "the catalog database is unavailable");
		return NULL;
	}
	PQsetNoticeProcessor(conn, store_notice, NULL);
	/* Sending never blocks either: a stopped server with a full socket
	 * buffer must not hang the sender past the deadline (store_await). */
	if (bounded && PQsetnonblocking(conn, 1) != 0)
		log_warn("store", "cannot make a PostgreSQL connection nonblocking");
	return conn;
}

PGconn *store_connect_as(const char *conninfo, bool bounded, struct floe_error *err)
{
	return connect_within(conninfo, bounded, "5", err);
}

PGconn *store_connect(const char *conninfo, struct floe_error *err)
{
	return store_connect_as(conninfo, true, err);
}

bool store_try_connect(const char *conninfo, struct floe_error *err)
{
	const char *keys[] = { "connect_timeout", "application_name", "dbname", NULL };
	const char *values[] = { "5", "floe", conninfo, NULL };
	PGconn *conn = PQconnectdbParams(keys, values, 1);

	if (conn == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	if (PQstatus(conn) != CONNECTION_OK) {
		floe_err(err, FE_UNAVAILABLE, "%s", connect_reason(conn));
		PQfinish(conn);
		return false;
	}
	PQfinish(conn);
	return true;
}

static PGresult *store_collect(PGconn *conn, int wait, bool *timed_out);

static bool store_prepare(PGconn *conn, const struct store_statement *st, struct floe_error *err)
{
	bool timed_out = false;
	PGresult *r = NULL;

	if (PQsendPrepare(conn, st->name, st->sql, 0, NULL))
		r = store_collect(conn, store_response_wait_ms(), &timed_out);
	bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
	if (!ok)
		log_error("store", "cannot prepare statement %s: %s", st->name,
			  timed_out ? "no answer in time" : PQresultErrorMessage(r));
	PQclear(r);
	if (!ok)
		return floe_err(err, PQstatus(conn) == CONNECTION_OK ? FE_INTERNAL : FE_UNAVAILABLE,
				"the catalog database is unavailable");
	return true;
}

static bool store_prepare_all(PGconn *conn, struct floe_error *err)
{
	for (size_t k = 0; registries[k] != NULL; k++) {
		for (size_t i = 0; i < registries[k]->count; i++) {
			if (!store_prepare(conn, &registries[k]->list[i], err))
				return false;
		}
	}
	return true;
}

bool store_on_connect(struct store *s, struct floe_error *err)
{
	for (size_t k = 0; registries[k] != NULL; k++) {
		if (registries[k]->on_connect != NULL && !registries[k]->on_connect(s, err))
			return false;
	}
	return true;
}

/* True when an idle connection has been closed by the server (a restart,
 * an administrator's terminate): the socket is readable while we expect
 * nothing, and reading shows the end. */
static bool store_conn_dead(PGconn *conn)
{
	struct pollfd p;

	if (PQstatus(conn) != CONNECTION_OK || PQtransactionStatus(conn) != PQTRANS_IDLE)
		return true;
	p.fd = PQsocket(conn);
	if (p.fd < 0)
		return true;
	/* An idle connection has nothing to read unless the server is
	 * going away: a backend that outlived its postmaster sends a FATAL
	 * (which libpq takes for a notice on an idle connection) and then
	 * closes. Read on until the end shows; a connection that keeps
	 * sending while idle is not one to hand out either. */
	for (int reads = 0; reads < 4; reads++) {
		p.events = POLLIN;
		p.revents = 0;
		if (poll(&p, 1, 0) <= 0)
			return false;
		if (!PQconsumeInput(conn) || PQstatus(conn) != CONNECTION_OK)
			return true;
	}
	return true;
}

static struct store_pool *pool_new(const char *conninfo, int size, const char *name, bool watch)
{
	struct store_pool *pool = calloc(1, sizeof(*pool));

	if (pool == NULL)
		return NULL;
	pool->conninfo = strdup(conninfo);
	pool->slots = calloc((size_t)size, sizeof(*pool->slots));
	if (pool->conninfo == NULL || pool->slots == NULL) {
		free(pool->conninfo);
		free(pool->slots);
		free(pool);
		return NULL;
	}
	pool->size = size;
	pool->name = name;
	pool->watch = watch;
	pool->metric = metric_label_find(METRIC_POOL_SIZE, 0, name);
	metric_add(METRIC_POOL_SIZE, pool->metric, size);
	for (int i = 0; i < size; i++) {
		pool->slots[i].index = i;
		pool->slots[i].warehouse = "";
		pool->slots[i].conninfo = pool->conninfo;
		pool->slots[i].pool = pool;
		pool->slots[i].waiting_fd = -1;
		pthread_mutex_init(&pool->slots[i].wait_mu, NULL);
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&pool->mu, NULL);
	pthread_cond_init(&pool->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_lock(&pools_mu);
	pool->next = pools;
	pools = pool;
	pthread_mutex_unlock(&pools_mu);
	return pool;
}

struct store_pool *store_pool_new(const char *conninfo, int size, const char *name)
{
	return pool_new(conninfo, size, name, false);
}

struct store_pool *store_watch_pool_new(const char *conninfo)
{
	return pool_new(conninfo, 1, "watch", true);
}

void store_pool_free(struct store_pool **poolp)
{
	struct store_pool *pool = *poolp;

	if (pool == NULL)
		return;
	pthread_mutex_lock(&pools_mu);
	for (struct store_pool **p = &pools; *p != NULL; p = &(*p)->next) {
		if (*p == pool) {
			*p = pool->next;
			break;
		}
	}
	pthread_mutex_unlock(&pools_mu);
	metric_add(METRIC_POOL_SIZE, pool->metric, -pool->size);
	for (int i = 0; i < pool->size; i++) {
		if (pool->slots[i].conn != NULL)
			PQfinish(pool->slots[i].conn);
		pthread_mutex_destroy(&pool->slots[i].wait_mu);
	}
	pthread_mutex_destroy(&pool->mu);
	pthread_cond_destroy(&pool->cv);
	free(pool->slots);
	free(pool->conninfo);
	free(pool);
	*poolp = NULL;
}

/* Registers the socket s waits on, so a stall can end the wait
 * (store_stall_begin); wait_end takes it back and tells whether it did. */
static void wait_begin(struct store *s)
{
	pthread_mutex_lock(&s->wait_mu);
	s->waiting_fd = PQsocket(s->conn);
	s->interrupted = false;
	pthread_mutex_unlock(&s->wait_mu);
}

static bool wait_end(struct store *s)
{
	pthread_mutex_lock(&s->wait_mu);
	bool interrupted = s->interrupted;
	s->waiting_fd = -1;
	pthread_mutex_unlock(&s->wait_mu);
	return interrupted;
}

/* True (err set) when the database is stalled and pool is not the
 * watch's: a request gets its 503 at once instead of waiting on it. */
static bool stall_refuses(const struct store_pool *pool, struct floe_error *err)
{
	int stalled = atomic_load(&stalled_ms);

	if (stalled == 0 || pool->watch)
		return false;
	metric_add(METRIC_POOL_TIMEOUTS, pool->metric, 1);
	floe_err(err, FE_UNAVAILABLE, "the catalog database did not answer within %d ms; retry",
		 stalled);
	store_error_detail(err, FO_FAILED, "57014");
	return true;
}

struct store *store_pool_acquire(struct store_pool *pool, struct floe_error *err)
{
	struct store *s = NULL;
	struct timespec deadline, asked, got;

	if (stall_refuses(pool, err))
		return NULL;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	asked = deadline;
	deadline.tv_sec += limits.acquire_timeout_ms / 1000;
	deadline.tv_nsec += (long)(limits.acquire_timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&pool->mu);
	for (;;) {
		for (int i = 0; i < pool->size; i++) {
			if (!pool->slots[i].busy) {
				s = &pool->slots[i];
				break;
			}
		}
		if (s != NULL)
			break;
		if (limits.acquire_timeout_ms <= 0) {
			pthread_cond_wait(&pool->cv, &pool->mu);
		} else if (pthread_cond_timedwait(&pool->cv, &pool->mu, &deadline) == ETIMEDOUT) {
			pthread_mutex_unlock(&pool->mu);
			metric_add(METRIC_POOL_TIMEOUTS, pool->metric, 1);
			log_warn("store",
				 "no free database connection within %d ms (%s pool of %d)",
				 limits.acquire_timeout_ms, pool->name, pool->size);
			floe_err(err, FE_UNAVAILABLE,
				 "every catalog database connection is busy; retry");
			return NULL;
		}
	}
	s->busy = true;
	s->warehouse = "";
	pthread_mutex_unlock(&pool->mu);
	clock_gettime(CLOCK_MONOTONIC, &got);
	metric_observe(METRIC_POOL_WAIT, pool->metric, metric_elapsed_us(&asked, &got));
	metric_add(METRIC_POOL_IN_USE, pool->metric, 1);

	s->sqlstate[0] = '\0';
	/* The stall may have begun while this waited for the slot. */
	if (stall_refuses(pool, err)) {
		store_pool_release(pool, s);
		return NULL;
	}
	if (s->conn != NULL && store_conn_dead(s->conn)) {
		log_info("store", "connection %d to PostgreSQL was lost; reconnecting", s->index);
		PQfinish(s->conn);
		s->conn = NULL;
	}
	if (s->conn == NULL) {
		/* The watch notices a stall within its own deadline: a
		 * connect that waits longer than that tells it nothing. */
		s->conn = pool->watch ? connect_within(pool->conninfo, true, "2", err)
				      : store_connect(pool->conninfo, err);
		bool prepared = false;
		if (s->conn != NULL) {
			wait_begin(s);
			prepared = store_prepare_all(s->conn, err);
			(void)wait_end(s);
		}
		/* What the relations run on a new connection next: the feed
		 * notes its timeline, as this may be the first connection to a
		 * newly promoted primary (migration 0032). */
		if (s->conn != NULL && (!prepared || !store_on_connect(s, err))) {
			PQfinish(s->conn);
			s->conn = NULL;
		}
		if (s->conn == NULL) {
			/* Nothing the request asked for was attempted. */
			floe_error_set_outcome(err, FO_NOT_ATTEMPTED);
			store_pool_release(pool, s);
			return NULL;
		}
	}
	return s;
}

void store_pool_release(struct store_pool *pool, struct store *s)
{
	/* A connection given back inside BEGIN is replaced on its next
	 * acquire (store_conn_dead); its transaction is no longer ours. */
	store_tx_ended(s);
	metric_add(METRIC_POOL_IN_USE, pool->metric, -1);
	pthread_mutex_lock(&pool->mu);
	s->busy = false;
	pthread_cond_signal(&pool->cv);
	pthread_mutex_unlock(&pool->mu);
}

/* True when a statement can change rows (and so, run on its own, commits
 * a change as it runs). */
static bool statement_writes(const char *sql)
{
	return strstr(sql, "INSERT ") != NULL || strstr(sql, "UPDATE ") != NULL ||
	       strstr(sql, "DELETE ") != NULL;
}

/* Sends what is queued on conn (a nonblocking connection) and waits until
 * a whole answer is ready (true), or until the deadline (false;
 * *timed_out set), or a broken connection (true: the next PQgetResult
 * reports it). */
static bool store_await(PGconn *conn, const struct timespec *deadline, bool *timed_out)
{
	bool flushed = false;

	for (;;) {
		if (!flushed) {
			int f = PQflush(conn);
			if (f < 0)
				return true;
			flushed = f == 0;
		}
		if (flushed && !PQisBusy(conn))
			return true;
		struct pollfd p = { .fd = PQsocket(conn),
				    .events = (short)(POLLIN | (flushed ? 0 : POLLOUT)),
				    .revents = 0 };
		int wait = -1;

		if (p.fd < 0)
			return true;
		if (deadline != NULL) {
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			long long ms = (long long)(deadline->tv_sec - now.tv_sec) * 1000LL +
				       (deadline->tv_nsec - now.tv_nsec) / 1000000L;
			if (ms <= 0) {
				*timed_out = true;
				return false;
			}
			wait = ms > 1000000 ? 1000000 : (int)ms;
		}
		int n = poll(&p, 1, wait);
		if (n < 0 && errno != EINTR)
			return true;
		if (n > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP)) != 0 &&
		    !PQconsumeInput(conn))
			return true;
	}
}

/*
 * Waits for the answer to what was just sent on conn, at most wait ms (-1:
 * forever; else the statement timeout plus a grace, or a probe's deadline). On timeout the socket is shut down, so
 * the connection reads as broken from then on (and is replaced on the
 * next acquire); *timed_out is set and NULL returned. Else the last
 * result (caller PQclear()s it).
 */
static PGresult *store_collect(PGconn *conn, int wait, bool *timed_out)
{
	struct timespec deadline;
	PGresult *last = NULL;

	*timed_out = false;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += wait / 1000;
	deadline.tv_nsec += (long)(wait % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	for (;;) {
		if (!store_await(conn, wait < 0 ? NULL : &deadline, timed_out)) {
			PQclear(last);
			shutdown(PQsocket(conn), SHUT_RDWR);
			(void)PQconsumeInput(conn);
			for (;;) {
				PGresult *rest = PQgetResult(conn);
				if (rest == NULL)
					break;
				PQclear(rest);
			}
			return NULL;
		}
		PGresult *r = PQgetResult(conn);
		if (r == NULL)
			return last;
		PQclear(last);
		last = r;
		if (PQstatus(conn) != CONNECTION_OK)
			return last;
	}
}

/* Sends one prepared statement and waits for its answer (store_collect);
 * NULL when it could not be sent. */
static PGresult *store_run(struct store *s, const char *name, int nparams,
			   const char *const *params, int result_format, int wait, bool *timed_out)
{
	*timed_out = false;
	if (!PQsendQueryPrepared(s->conn, name, nparams, params, NULL, NULL, result_format))
		return NULL;
	wait_begin(s);
	PGresult *r = store_collect(s->conn, wait, timed_out);
	if (wait_end(s))
		*timed_out = true;
	return r;
}

/* store_exec with the results in result_format (0 text, 1 binary), waiting
 * at most wait_ms for the answer (0: the statement timeout plus a grace). */
static PGresult *exec_as(struct store *s, const struct store_statement *stmt, int nparams,
			 const char *const *params, int result_format, int wait_ms,
			 struct floe_error *err)
{
	if (s->conn == NULL) {
		floe_err(err, FE_UNAVAILABLE, "the catalog database is unavailable");
		store_error_detail(err, FO_FAILED, "08003");
		return NULL;
	}
	PGTransactionStatusType before = PQtransactionStatus(s->conn);
	/* Inside BEGIN nothing but the COMMIT itself can have taken effect;
	 * a write on its own commits as it runs. */
	bool inside = before == PQTRANS_INTRANS || before == PQTRANS_INERROR;
	bool unknown = stmt == &statements[ST_COMMIT] || (!inside && statement_writes(stmt->sql));
	bool timed_out = false;
	int wait = wait_ms != 0 ? wait_ms : store_response_wait_ms();
	PGresult *r = store_run(s, stmt->name, nparams, params, result_format, wait, &timed_out);
	ExecStatusType st = PQresultStatus(r);

	if (timed_out) {
		int stalled = atomic_load(&stalled_ms);
		if (stalled > 0 && wait_ms == 0)
			log_warn("store",
				 "statement %s: abandoned, PostgreSQL did not answer the watch "
				 "within %d ms; closing the connection",
				 stmt->name, stalled);
		else
			log_warn("store",
				 "statement %s: no answer from PostgreSQL within %d ms; closing "
				 "the connection",
				 stmt->name, wait);
		PQclear(r);
		floe_err(err, FE_UNAVAILABLE, "the catalog database did not answer in time; retry");
		store_error_detail(err, unknown ? FO_UNKNOWN : FO_FAILED, "57014");
		store_tx_ended(s); /* its socket is shut: the transaction is gone */
		return NULL;
	}
	s->sqlstate[0] = '\0';
	/* A broken connection takes its transaction with it. */
	if (PQstatus(s->conn) != CONNECTION_OK || PQtransactionStatus(s->conn) == PQTRANS_IDLE)
		store_tx_ended(s);
	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
		return r;
	const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	if (state != NULL)
		(void)snprintf(s->sqlstate, sizeof(s->sqlstate), "%s", state);
	store_classify(stmt->name, r, s->sqlstate, s->conn, unknown, err);
	PQclear(r);
	return NULL;
}

PGresult *store_exec(struct store *s, const struct store_statement *stmt, int nparams,
		     const char *const *params, struct floe_error *err)
{
	return exec_as(s, stmt, nparams, params, 0, 0, err);
}

PGresult *store_exec_binary(struct store *s, const struct store_statement *stmt, int nparams,
			    const char *const *params, struct floe_error *err)
{
	return exec_as(s, stmt, nparams, params, 1, 0, err);
}

bool store_ping(struct store *s, struct floe_error *err)
{
	PGresult *r = store_exec(s, &statements[ST_PING], 0, NULL, err);

	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

bool store_probe(struct store *s, int deadline_ms, bool *timed_out, struct floe_error *err)
{
	PGresult *r = exec_as(s, &statements[ST_PING], 0, NULL, 0, deadline_ms, err);

	*timed_out = r == NULL && strcmp(err->sqlstate, "57014") == 0;
	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

void store_stall_begin(int waited_ms)
{
	int ended = 0;

	if (waited_ms <= 0)
		waited_ms = 1;
	atomic_store(&stalled_ms, waited_ms);
	/* Each statement waiting on the database reads its connection as
	 * broken and answers 503 (or, for a COMMIT in flight, "unknown"),
	 * as it would at its own deadline; its slot reconnects later. */
	pthread_mutex_lock(&pools_mu);
	for (struct store_pool *pool = pools; pool != NULL; pool = pool->next) {
		if (pool->watch)
			continue;
		for (int i = 0; i < pool->size; i++) {
			struct store *s = &pool->slots[i];
			pthread_mutex_lock(&s->wait_mu);
			if (s->waiting_fd >= 0 && !s->interrupted) {
				(void)shutdown(s->waiting_fd, SHUT_RDWR);
				s->interrupted = true;
				ended++;
			}
			pthread_mutex_unlock(&s->wait_mu);
		}
	}
	pthread_mutex_unlock(&pools_mu);
	if (ended > 0)
		log_warn("store", "abandoned %d statements waiting on the stalled database", ended);
}

void store_stall_end(void)
{
	atomic_store(&stalled_ms, 0);
}

bool store_reconnect(struct store *s, struct floe_error *err)
{
	store_tx_ended(s);
	if (s->conn != NULL)
		PQfinish(s->conn);
	s->conn = store_connect(s->conninfo, err);
	if (s->conn != NULL && (!store_prepare_all(s->conn, err) || !store_on_connect(s, err))) {
		PQfinish(s->conn);
		s->conn = NULL;
	}
	return s->conn != NULL;
}

/* --- transactions --- */

bool store_exec_noparams(struct store *s, const struct store_statement *st, struct floe_error *err)
{
	PGresult *r = store_exec(s, st, 0, NULL, err);
	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

bool store_begin(struct store *s, struct floe_error *err)
{
	s->xid[0] = '\0';
	if (!store_exec_noparams(s, &statements[ST_BEGIN], err))
		return false;
	if (!s->in_tx) {
		s->in_tx = true;
		txguard_enter();
	}
	return true;
}

void store_note_xid(struct store *s, const char *xid)
{
	if (xid != NULL && xid[0] != '\0')
		(void)snprintf(s->xid, sizeof(s->xid), "%s", xid);
}

void store_xact_id(const struct store *s, char *xid, size_t len)
{
	(void)snprintf(xid, len, "%s", s->xid);
}

bool store_commit(struct store *s, struct floe_error *err)
{
	/* The xid first, unless a statement of the transaction returned it
	 * already: once the COMMIT is sent, only the xid can tell a commit
	 * still waiting (on a synchronous standby, say) from one that did
	 * not happen. Failing here, nothing was committed: the transaction
	 * is rolled back (and no longer counted). */
	if (s->xid[0] == '\0' && s->conn != NULL &&
	    PQtransactionStatus(s->conn) == PQTRANS_INTRANS) {
		PGresult *r = store_exec(s, &statements[ST_XACT_ID], 0, NULL, err);
		if (r == NULL) {
			store_rollback(s);
			return false;
		}
		store_note_xid(s, PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : NULL);
		PQclear(r);
	}
	bool ok = store_exec_noparams(s, &statements[ST_COMMIT], err);

	store_tx_ended(s); /* committed, rolled back, or gone with the connection */
	if (ok)
		return true;
	if (err != NULL && err->outcome == FO_UNKNOWN)
		floe_err(err, FE_COMMIT_STATE_UNKNOWN,
			 "the database connection broke during the commit; its outcome is unknown");
	return false;
}

void store_rollback(struct store *s)
{
	struct floe_error ignored;
	if (PQtransactionStatus(s->conn) != PQTRANS_IDLE)
		(void)store_exec_noparams(s, &statements[ST_ROLLBACK], &ignored);
	store_tx_ended(s);
}

void store_use_warehouse(struct store *s, const char *warehouse)
{
	s->warehouse = warehouse != NULL ? warehouse : "";
}

const char *store_warehouse(const struct store *s)
{
	return s->warehouse;
}
