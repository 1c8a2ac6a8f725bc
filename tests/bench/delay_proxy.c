/* delay_proxy.c - a TCP proxy that puts a network between two processes
 * on one machine: every chunk is forwarded DELAY_US microseconds after it
 * arrived, in each direction, in order, so a request and its answer take
 * one round trip of 2 x DELAY_US more than they would directly.
 *
 *   delay_proxy LISTEN_PORT TARGET_PORT DELAY_US [MBIT]
 *
 * Listens on 127.0.0.1:LISTEN_PORT, prints "ready" once it does, and
 * connects each client to 127.0.0.1:TARGET_PORT.  Each direction of a
 * connection has a reader thread, which stamps each chunk with the time it
 * is due, and a writer thread, which sleeps until then (clock_nanosleep,
 * absolute) and sends it: chunks that arrive together leave together, as
 * they would over a link with that latency.  With MBIT (megabits per
 * second, > 0) each direction is also one link of that rate shared by every
 * connection: a chunk leaves the link when the bytes queued before it have,
 * plus its own bytes' time on the wire, then arrives DELAY_US later.  The
 * benchmark's tool (pg_rtt_bench.sh), not part of Floe. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct chunk {
	struct chunk *next;
	struct timespec due;
	size_t n;
	char data[];
};

struct pipe_dir {
	int from, to;
	int dir; /* 0 = client to server, 1 = back */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct chunk *head, *tail;
	int eof;
};

static long delay_ns;
static int target_port;
static double ns_per_byte; /* 0 = no bandwidth limit */
static pthread_mutex_t link_mu = PTHREAD_MUTEX_INITIALIZER;
static long long link_free[2]; /* ns: when each direction's link is idle again */

static long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* When n bytes of direction dir that arrive now reach the other side. */
static long long due_ns(int dir, size_t n)
{
	long long t = mono_ns();

	if (ns_per_byte > 0) {
		pthread_mutex_lock(&link_mu);
		if (link_free[dir] > t)
			t = link_free[dir];
		t += (long long)(ns_per_byte * (double)n);
		link_free[dir] = t;
		pthread_mutex_unlock(&link_mu);
	}
	return t + delay_ns;
}

static void *reader(void *arg)
{
	struct pipe_dir *p = arg;
	char buf[65536];

	for (;;) {
		ssize_t n = read(p->from, buf, sizeof(buf));
		struct chunk *c;

		if (n <= 0 || (c = malloc(sizeof(*c) + (size_t)n)) == NULL)
			break;
		long long due = due_ns(p->dir, (size_t)n);

		c->due.tv_sec = (time_t)(due / 1000000000LL);
		c->due.tv_nsec = (long)(due % 1000000000LL);
		c->n = (size_t)n;
		c->next = NULL;
		memcpy(c->data, buf, (size_t)n);
		pthread_mutex_lock(&p->mu);
		if (p->tail != NULL)
			p->tail->next = c;
		else
			p->head = c;
		p->tail = c;
		pthread_cond_signal(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	pthread_mutex_lock(&p->mu);
	p->eof = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void *writer(void *arg)
{
	struct pipe_dir *p = arg;

	for (;;) {
		struct chunk *c;
		size_t off = 0;

		pthread_mutex_lock(&p->mu);
		while (p->head == NULL && !p->eof)
			pthread_cond_wait(&p->cv, &p->mu);
		c = p->head;
		if (c != NULL && (p->head = c->next) == NULL)
			p->tail = NULL;
		pthread_mutex_unlock(&p->mu);
		if (c == NULL)
			break;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &c->due, NULL) == EINTR)
			;
		while (off < c->n) {
			ssize_t w = write(p->to, c->data + off, c->n - off);

			if (w <= 0)
				break;
			off += (size_t)w;
		}
		free(c);
	}
	shutdown(p->to, SHUT_WR);
	return NULL;
}

/* Runs both directions of one client connection, then closes it. */
static void *conn_main(void *arg)
{
	int client = (int)(long)arg, server, one = 1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)target_port)};
	struct pipe_dir d[2];
	pthread_t t[4];

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	server = socket(AF_INET, SOCK_STREAM, 0);
	if (server < 0 || connect(server, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(client);
		if (server >= 0)
			close(server);
		return NULL;
	}
	setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(d, 0, sizeof(d));
	d[0].from = client;
	d[0].to = server;
	d[1].from = server;
	d[1].to = client;
	d[1].dir = 1;
	for (int i = 0; i < 2; i++) {
		pthread_mutex_init(&d[i].mu, NULL);
		pthread_cond_init(&d[i].cv, NULL);
		pthread_create(&t[2 * i], NULL, reader, &d[i]);
		pthread_create(&t[2 * i + 1], NULL, writer, &d[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	close(client);
	close(server);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	int s, one = 1;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: delay_proxy LISTEN_PORT TARGET_PORT DELAY_US [MBIT]\n");
		return 2;
	}
	target_port = atoi(argv[2]);
	delay_ns = atol(argv[3]) * 1000L;
	if (argc == 5 && atof(argv[4]) > 0)
		ns_per_byte = 8000.0 / atof(argv[4]); /* 8 bits at MBIT per microsecond */
	a.sin_port = htons((uint16_t)atoi(argv[1]));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(s, 128) != 0) {
		perror("delay_proxy: listen");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int c = accept(s, NULL, NULL);
		pthread_t t;

		if (c < 0) {
			if (errno == EINTR)
				continue;
			perror("delay_proxy: accept");
			return 1;
		}
		if (pthread_create(&t, NULL, conn_main, (void *)(long)c) != 0)
			close(c);
		else
			pthread_detach(t);
	}
}
