/*
 * standin.c - starting and stopping t/standin/openai_standin.py for the
 * unit tests that talk HTTP (see unit.h).
 *
 * The stand-in is found under $APTIX_SOURCE_DIR, else above the current
 * directory, else above the test binary. Call these from a checked
 * fixture or a test, so the server belongs to the test's process; it
 * dies with it on Linux even when the test fails.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#ifndef _DEFAULT_SOURCE
# define _DEFAULT_SOURCE 1
#endif

#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
# include <sys/prctl.h>
#endif

#include <jansson.h>

#include "aptix/errors.h"
#include "http/http.h"
#include "unit.h"

static int is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Look for t/standin/openai_standin.py in dir and its ancestors. */
static int find_up(char *out, size_t size, const char *dir)
{
	char cur[PATH_MAX];

	if (!dir || snprintf(cur, sizeof(cur), "%s", dir) >= (int)sizeof(cur))
		return 0;
	for (;;) {
		char *slash;

		if (snprintf(out, size, "%s/t/standin/openai_standin.py",
			     cur) < (int)size && is_file(out))
			return 1;
		slash = strrchr(cur, '/');
		if (!slash || slash == cur)
			return 0;
		*slash = '\0';
	}
}

static int find_standin(char *out, size_t size)
{
	const char *src = getenv("APTIX_SOURCE_DIR");
	char cwd[PATH_MAX], exe[PATH_MAX];
	ssize_t n;

	if (src && *src &&
	    snprintf(out, size, "%s/t/standin/openai_standin.py", src) <
	    (int)size && is_file(out))
		return 1;
	if (getcwd(cwd, sizeof(cwd)) && find_up(out, size, cwd))
		return 1;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		if (find_up(out, size, exe))
			return 1;
	}
	return 0;
}

static int find_python(char *out, size_t size)
{
	const char *path = getenv("PATH");
	const char *p = path && *path ? path : "/usr/bin:/bin";

	while (*p) {
		size_t n = strcspn(p, ":");

		if (n && snprintf(out, size, "%.*s/python3", (int)n, p) <
		    (int)size && access(out, X_OK) == 0)
			return 1;
		p += n;
		if (*p == ':')
			p++;
	}
	return 0;
}

int unit_standin_start(struct unit_standin *s, const char *who,
		       const char *const *args)
{
	char script[PATH_MAX], python[PATH_MAX], port_file[PATH_MAX + 8];
	char log_dir[PATH_MAX + 8], err_file[PATH_MAX + 16];
	const char *argv[32];
	const char *tmp = getenv("TMPDIR");
	struct timespec ts = { 0, 20 * 1000000L };
	size_t n = 0;
	int i, port = 0;

	memset(s, 0, sizeof(*s));
	/* the stand-in is local: no proxy in between */
	unsetenv("http_proxy");
	unsetenv("HTTP_PROXY");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");
	if (!find_python(python, sizeof(python))) {
		fprintf(stderr, "%s: python3 not found: skipped\n", who);
		return 0;
	}
	if (!find_standin(script, sizeof(script))) {
		fprintf(stderr, "%s: t/standin/openai_standin.py not found "
			"(set APTIX_SOURCE_DIR): skipped\n", who);
		return 0;
	}
	snprintf(s->dir, sizeof(s->dir), "%s/aptix-standin.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(s->dir));
	snprintf(port_file, sizeof(port_file), "%s/port", s->dir);
	snprintf(log_dir, sizeof(log_dir), "%s/logs", s->dir);
	snprintf(err_file, sizeof(err_file), "%s/stderr.txt", s->dir);
	argv[n++] = "python3";
	argv[n++] = script;
	argv[n++] = "--port-file";
	argv[n++] = port_file;
	argv[n++] = "--log-dir";
	argv[n++] = log_dir;
	for (i = 0; args && args[i]; i++) {
		ck_assert_uint_lt(n, sizeof(argv) / sizeof(*argv) - 1);
		argv[n++] = args[i];
	}
	argv[n] = NULL;

	s->pid = fork();
	ck_assert_int_ge(s->pid, 0);
	if (s->pid == 0) {
		int fd = open(err_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int nul = open("/dev/null", O_RDWR);

#ifdef __linux__
		/* the server dies with the test, even a failed one */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
		}
		if (fd >= 0)
			dup2(fd, 2);
		execv(python, (char *const *)argv);
		_exit(127);
	}
	for (i = 0; i < 1000 && !port; i++) {	/* 20 s */
		FILE *f = fopen(port_file, "r");
		int status;

		if (f) {
			char line[32];

			if (fgets(line, sizeof(line), f) && strchr(line, '\n'))
				port = (int)strtol(line, NULL, 10);
			fclose(f);
		}
		if (port)
			break;
		ck_assert_msg(waitpid(s->pid, &status, WNOHANG) == 0,
			      "the stand-in exited early (see %s)", err_file);
		nanosleep(&ts, NULL);
	}
	ck_assert_msg(port > 0, "the stand-in did not start");
	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", port);
	snprintf(s->base, sizeof(s->base), "%s/v1", s->url);
	return 1;
}

void unit_standin_stop(struct unit_standin *s)
{
	int i, status;
	struct timespec ts = { 0, 20 * 1000000L };

	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		for (i = 0; i < 250; i++) {
			if (waitpid(s->pid, &status, WNOHANG) != 0)
				break;
			nanosleep(&ts, NULL);
		}
		if (i == 250) {
			kill(s->pid, SIGKILL);
			waitpid(s->pid, &status, 0);
		}
		s->pid = 0;
	}
	if (s->dir[0])
		unit_rmtree(s->dir);
	s->dir[0] = '\0';
	s->url[0] = '\0';
}

int unit_standin_start_openai(struct unit_standin *s, const char *who)
{
	static const char *const args[] = {
		"--api-key", UNIT_API_KEY, "--seed", "unit", NULL
	};

	return unit_standin_start(s, who, args);
}

/* --- Its control endpoint ---------------------------------------------- */

struct json_t *unit_standin_json(const struct unit_standin *s,
				 const char *method, const char *path,
				 const char *body)
{
	static const char *const hdrs[] = {
		"Content-Type: application/json", NULL
	};
	aptix_http_request req;
	aptix_http_response resp;
	char url[256];
	json_t *doc;

	memset(&req, 0, sizeof(req));
	snprintf(url, sizeof(url), "%s%s", s->url, path);
	req.method = method;
	req.url = url;
	req.headers = hdrs;
	req.body = body;
	req.body_len = body ? strlen(body) : 0;
	aptix_http_response_init(&resp);
	ck_assert_msg(aptix_http_perform(&resp, &req) == 0, "%s",
		      aptix_error_last()->message);
	ck_assert_msg(resp.status == 200, "%s %s: HTTP %ld: %s", method,
		      path, resp.status, resp.body.ptr);
	doc = json_loadb(resp.body.ptr, resp.body.len, 0, NULL);
	ck_assert_ptr_nonnull(doc);
	aptix_http_response_release(&resp);
	return doc;
}

void unit_standin_faults(const struct unit_standin *s, const char *json)
{
	char body[1024];

	snprintf(body, sizeof(body), "{\"faults\":%s}", json);
	json_decref(unit_standin_json(s, "POST", "/__control", body));
}

long unit_standin_requests(const struct unit_standin *s,
			   const char *endpoint)
{
	json_t *st = unit_standin_json(s, "GET", "/__control", NULL);
	long n = (long)json_integer_value(json_object_get(json_object_get(
		json_object_get(st, "counts"), "requests"), endpoint));

	json_decref(st);
	return n;
}
