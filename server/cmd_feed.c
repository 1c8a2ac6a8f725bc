/* cmd_feed.c - `floe feed`: a client of the feed management API.
 *
 * It talks HTTP to a running floe (--url, default http://127.0.0.1:8181;
 * --token or FLOE_TOKEN for a bearer token), so it works against any
 * replica, under the same authorization as the API, and refuses exactly
 * what the API refuses with the API's words. */
#include "cmd_feed.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "io/libcurl.h"
#include "pct.h"

#define BODY_MAX ((size_t)16 << 20)

struct opts {
	const char *url, *token;
	const char *from, *to, *since, *until;
	bool force;
	const struct st_libcurl *curl;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct fl_buf *b = arg;

	if (b->len + size * n > BODY_MAX || fl_buf_append(b, p, size * n) != 0)
		return 0;
	return size * n;
}

/* One request; prints the answer.  Returns the exit status. */
static int call(const struct opts *o, const char *method, const char *path, const char *body)
{
	const struct st_libcurl *cu = o->curl;
	struct curl_slist *h = NULL;
	struct fl_buf url = FL_BUF_INIT, auth = FL_BUF_INIT, out = FL_BUF_INIT;
	CURL *c = cu->easy_init();
	long status = 0;
	int rc = 1;
	CURLcode cc;

	if (c == NULL || fl_buf_printf(&url, "%s%s", o->url, path) != 0)
		goto out;
	h = cu->slist_append(h, "Content-Type: application/json");
	if (o->token != NULL && o->token[0] != '\0') {
		if (fl_buf_printf(&auth, "Authorization: Bearer %s", o->token) != 0)
			goto out;
		h = cu->slist_append(h, auth.data);
	}
	cu->easy_setopt(c, CURLOPT_URL, url.data);
	cu->easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	cu->easy_setopt(c, CURLOPT_HTTPHEADER, h);
	cu->easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	cu->easy_setopt(c, CURLOPT_WRITEDATA, &out);
	cu->easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	cu->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (body != NULL)
		cu->easy_setopt(c, CURLOPT_POSTFIELDS, body);
	cc = cu->easy_perform(c);
	if (cc != CURLE_OK) {
		fprintf(stderr, "floe feed: %s %s: %s\n", method, url.data, cu->easy_strerror(cc));
		goto out;
	}
	cu->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 200 && status < 300) {
		json_t *v = out.len ? json_loadb(out.data, out.len, 0, NULL) : NULL;
		char *pretty = v ? json_dumps(v, JSON_INDENT(2)) : NULL;

		if (pretty != NULL)
			printf("%s\n", pretty);
		free(pretty);
		json_decref(v);
		rc = 0;
	} else {
		json_t *v = out.len ? json_loadb(out.data, out.len, 0, NULL) : NULL;
		const char *msg =
		        json_string_value(json_object_get(json_object_get(v, "error"), "message"));

		fprintf(stderr, "floe feed: %ld: %s\n", status,
		        msg ? msg : (out.len ? out.data : "(no body)"));
		json_decref(v);
	}
out:
	cu->slist_free_all(h);
	cu->easy_cleanup(c);
	fl_buf_free(&url);
	if (auth.data != NULL)
		memset(auth.data, 0, auth.len);
	fl_buf_free(&auth);
	fl_buf_free(&out);
	return rc;
}

/* The definition argument: inline JSON, "-" for standard input, or a file. */
static char *read_definition(const char *arg)
{
	struct fl_buf b = FL_BUF_INIT;
	char chunk[4096];
	FILE *f;
	size_t n;

	if (arg[0] == '{')
		return strdup(arg);
	f = strcmp(arg, "-") == 0 ? stdin : fopen(arg, "r");
	if (f == NULL) {
		fprintf(stderr, "floe feed: cannot open %s\n", arg);
		return NULL;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (b.len + n > BODY_MAX || fl_buf_append(&b, chunk, n) != 0) {
			fl_buf_free(&b);
			b.data = NULL;
			break;
		}
	if (f != stdin)
		fclose(f);
	if (b.data == NULL)
		fprintf(stderr, "floe feed: cannot read the definition %s\n", arg);
	return fl_buf_steal(&b);
}

void srv_cmd_feed_help(FILE *f)
{
	fprintf(f,
	        "subcommands:\n"
	        "  create DEFINITION   define a feed; DEFINITION is JSON inline, a file, or - (stdin)\n"
	        "  list                every feed\n"
	        "  show NAME           one feed: definition, state, backlog, last batches\n"
	        "  pause NAME          stop running it (pushes are still spooled)\n"
	        "  resume NAME         run it again, now\n"
	        "  delete NAME         remove the definition (the table stays)\n"
	        "  replay NAME         land a range of its objects again:\n"
	        "      --from KEY --to KEY        key range (inclusive)\n"
	        "      --since TIME --until TIME  modification times (RFC 3339, UTC)\n"
	        "      --force                    also objects already landed (new batch ids)\n"
	        "options:\n"
	        "  --url URL           the floe to talk to (FLOE_URL; default http://127.0.0.1:8181)\n"
	        "  --token TOKEN       bearer token (FLOE_TOKEN)\n");
}

int srv_cmd_feed(int argc, char **argv)
{
	struct opts o = {.url = getenv("FLOE_URL"), .token = getenv("FLOE_TOKEN")};
	const char *pos[2] = {NULL, NULL};
	struct fl_buf path = FL_BUF_INIT;
	struct fl_err err;
	int npos = 0, rc = 2;

	if (o.url == NULL || o.url[0] == '\0')
		o.url = "http://127.0.0.1:8181";
	for (int i = 0; i < argc; i++) {
		const char **dst = strcmp(argv[i], "--url") == 0     ? &o.url
		                   : strcmp(argv[i], "--token") == 0 ? &o.token
		                   : strcmp(argv[i], "--from") == 0  ? &o.from
		                   : strcmp(argv[i], "--to") == 0    ? &o.to
		                   : strcmp(argv[i], "--since") == 0 ? &o.since
		                   : strcmp(argv[i], "--until") == 0 ? &o.until
		                                                     : NULL;

		if (strcmp(argv[i], "--force") == 0) {
			o.force = true;
		} else if (dst != NULL) {
			if (i + 1 >= argc) {
				fprintf(stderr, "floe feed: %s needs a value\n", argv[i]);
				return 2;
			}
			*dst = argv[++i];
		} else if (strncmp(argv[i], "--", 2) == 0 || npos == 2) {
			/* Up to an '=': "--token=<secret>" must not print its value. */
			fprintf(stderr,
			        "floe feed: unexpected argument '%.*s' (see floe feed --help)\n",
			        (int)strcspn(argv[i], "="), argv[i]);
			return 2;
		} else {
			pos[npos++] = argv[i];
		}
	}
	const char *sub = pos[0], *arg = pos[1];
	bool needs_name = sub && strcmp(sub, "list") != 0;

	if (sub == NULL || (needs_name && arg == NULL) || (!needs_name && arg != NULL)) {
		fprintf(stderr, "floe feed: usage: floe feed create|list|show|pause|resume|delete|"
		                "replay [NAME|DEFINITION] [options]\n");
		return 2;
	}
	if ((o.curl = st_libcurl_load(&err)) == NULL) {
		fprintf(stderr, "floe feed: %s\n", err.msg);
		rc = 1;
		goto out;
	}
	if (strcmp(sub, "create") == 0) {
		char *def = read_definition(arg);

		rc = def ? call(&o, "POST", "/management/v1/feeds", def) : 1;
		free(def);
		goto out;
	}
	if (strcmp(sub, "list") == 0) {
		rc = call(&o, "GET", "/management/v1/feeds", NULL);
		goto out;
	}
	{
		char enc[3 * 256 + 1];
		size_t n = strlen(arg);

		if (n == 0 || n > 255 || fl_pct_encode(arg, n, enc, sizeof(enc)) < 0 ||
		    fl_buf_printf(&path, "/management/v1/feeds/%s", enc) != 0) {
			fprintf(stderr, "floe feed: bad feed name '%.64s'\n", arg);
			goto out;
		}
	}
	if (strcmp(sub, "show") == 0) {
		rc = call(&o, "GET", path.data, NULL);
	} else if (strcmp(sub, "delete") == 0) {
		rc = call(&o, "DELETE", path.data, NULL);
	} else if (strcmp(sub, "pause") == 0 || strcmp(sub, "resume") == 0) {
		rc = fl_buf_printf(&path, "/%s", sub) != 0 ? 1 : call(&o, "POST", path.data, "");
	} else if (strcmp(sub, "replay") == 0) {
		json_t *req = json_pack("{s:b}", "force", o.force);
		char *text;

		if (o.from)
			json_object_set_new(req, "from", json_string(o.from));
		if (o.to)
			json_object_set_new(req, "to", json_string(o.to));
		if (o.since)
			json_object_set_new(req, "since", json_string(o.since));
		if (o.until)
			json_object_set_new(req, "until", json_string(o.until));
		text = json_dumps(req, JSON_COMPACT);
		json_decref(req);
		rc = text == NULL || fl_buf_puts(&path, "/replay") != 0
		             ? 1
		             : call(&o, "POST", path.data, text);
		if (rc == 0 && o.force)
			fprintf(stderr,
			        "floe feed: forced replay: objects already landed will be landed AGAIN "
			        "under new batch ids (their rows will be in the table twice)\n");
		free(text);
	} else {
		fprintf(stderr, "floe feed: unknown subcommand '%s' (see floe feed --help)\n", sub);
	}
out:
	fl_buf_free(&path);
	return rc;
}
