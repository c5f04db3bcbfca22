/*
 * porcelain/chat-tty.c - the terminal half of `aptix chat` (chat.h):
 * libedit for the input line (BSD-licensed, unlike GNU readline), the
 * picker's drawing and keys, one-key questions and $EDITOR.
 *
 * libedit runs with the terminal's ISIG off while it reads, so that
 * Ctrl-C arrives as a key: it drops the line typed, as shells do. During
 * a turn the terminal is back in its normal mode and Ctrl-C is a
 * SIGINT, which chat.c turns into a cancel.
 *
 * Text is UTF-8: chat sets LC_CTYPE from the environment (a C.UTF-8 one
 * when that is not UTF-8), only LC_CTYPE, so that numbers and dates keep
 * the C locale; libedit then edits wide characters. Its characters come
 * from tty_getc(), which also notices a resized window (SIGWINCH, through
 * a pipe) and redraws the prompt and the line at the new width. An input
 * may hold newlines: Ctrl-J or Alt-Enter inserts one, and a paste
 * (bracketed paste, on while the prompt waits) is inserted whole, so a
 * stack trace is one message, not a turn a line.
 *
 * libedit is loaded with dlopen() when chat opens the terminal, not
 * linked: it and the libraries it needs (tinfo, bsd, md) would be
 * mapped and relocated by every aptix process, some 0.5 million
 * instructions each (`aptix --version` costs 0.3 million without), and
 * each object in the global scope makes every later dlopen (libcurl)
 * slower.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#define _XOPEN_SOURCE 700	/* wcwidth() */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <wchar.h>
#include <histedit.h>

#include <aptix.h>
#include "chat.h"
#include "cli.h"
#include "view.h"

/* libedit's functions, from dlopen() (load_libedit). */
static struct {
	EditLine *(*el_init)(const char *, FILE *, FILE *, FILE *);
	void (*el_end)(EditLine *);
	int (*el_set)(EditLine *, int, ...);
	int (*el_get)(EditLine *, int, ...);
	const char *(*el_gets)(EditLine *, int *);
	const LineInfo *(*el_line)(EditLine *);
	const LineInfoW *(*el_wline)(EditLine *);
	int (*el_cursor)(EditLine *, int);
	void (*el_deletestr)(EditLine *, int);
	int (*el_insertstr)(EditLine *, const char *);
	int (*el_winsertstr)(EditLine *, const wchar_t *);
	void (*el_resize)(EditLine *);
	int (*el_source)(EditLine *, const char *);
	History *(*history_init)(void);
	void (*history_end)(History *);
	int (*history)(History *, HistEvent *, int, ...);
} E;

#define EDIT_SYM(field) (*(void **)&E.field = dlsym(lib, #field))

static void load_libedit(void)
{
	static const char *const names[] = {
		"libedit.so.2", "libedit.so.0", "libedit.so"
	};
	void *lib = NULL;
	size_t i;

	if (E.el_init)
		return;
	for (i = 0; !lib && i < sizeof(names) / sizeof(names[0]); i++)
		lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		die("cannot start line editing: cannot load libedit: %s",
		    dlerror());
	if (!EDIT_SYM(el_init) || !EDIT_SYM(el_end) || !EDIT_SYM(el_set) ||
	    !EDIT_SYM(el_get) || !EDIT_SYM(el_gets) || !EDIT_SYM(el_line) ||
	    !EDIT_SYM(el_wline) || !EDIT_SYM(el_cursor) ||
	    !EDIT_SYM(el_deletestr) || !EDIT_SYM(el_insertstr) ||
	    !EDIT_SYM(el_winsertstr) || !EDIT_SYM(el_resize) ||
	    !EDIT_SYM(el_source) ||
	    !EDIT_SYM(history_init) || !EDIT_SYM(history_end) ||
	    !EDIT_SYM(history))
		die("cannot start line editing: libedit lacks a function");
}

struct chat_tty {
	EditLine *el;
	History *hist;
	char *history_path;
	const char *prompt;
	int interrupted;	/* Ctrl-C was typed */
	int winch[2];		/* SIGWINCH's pipe: read end, write end */
	struct winsize size;	/* the window's, as libedit last drew */
};

/* --- Locale, window size, reading characters ---------------------------- */

/*
 * LC_CTYPE from the environment, so that libedit reads and shows UTF-8;
 * C.UTF-8 when the environment's is not UTF-8 (the C locale, say): the
 * instructions are UTF-8 whatever the terminal claims. Nothing else: the
 * other categories stay "C", so numbers, dates and messages do not move.
 */
static void tty_locale(void)
{
	const char *cs;

	if (setlocale(LC_CTYPE, "") && (cs = nl_langinfo(CODESET)) &&
	    (!strcmp(cs, "UTF-8") || !strcmp(cs, "utf8")))
		return;
	if (!setlocale(LC_CTYPE, "C.UTF-8"))
		setlocale(LC_CTYPE, "C");
}

static int winch_fd = -1;	/* write end of the open chat's pipe */

static void on_winch(int sig)
{
	int e = errno;
	ssize_t n;

	(void)sig;
	if (winch_fd >= 0)
		n = write(winch_fd, "w", 1);	/* full: a redraw is due */
	(void)n;
	errno = e;
}

/* Columns c takes when libedit draws it at column col (^X, \U+XXXX). */
static int cols_of(wchar_t c, int col)
{
	int w;

	if (c == L'\t')
		return 8 - col % 8;
	if (c < 0x20 || c == 0x7f)
		return 2;
	w = wcwidth(c);
	if (w >= 0)
		return w;
	return c > 0xffff ? 8 : 7;
}

/*
 * The screen rows from the prompt's first to the cursor's, at a width of
 * cols: what a terminal that rewraps its lines on a resize (tmux, VTE,
 * iTerm2, kitty...) shows once it has rewrapped them.
 */
static int rows_to_cursor(struct chat_tty *t, int cols)
{
	const LineInfoW *li = E.el_wline(t->el);
	const wchar_t *p;
	wchar_t wc;
	mbstate_t mbs;
	const char *s = t->prompt ? t->prompt : "> ";
	size_t n, left = strlen(s);
	int col = 0, rows = 0;

	memset(&mbs, 0, sizeof(mbs));
	while (left && (n = mbrtowc(&wc, s, left, &mbs)) > 0 &&
	       n <= left) {
		col += cols_of(wc, col);
		s += n;
		left -= n;
	}
	for (p = li->buffer; p < li->cursor; p++) {
		if (*p == L'\n') {
			rows += col ? (col - 1) / cols + 1 : 1;
			col = 0;
		} else {
			col += cols_of(*p, col);
		}
	}
	return rows + col / cols;
}

static int window_size(struct winsize *ws)
{
	memset(ws, 0, sizeof(*ws));
	return ioctl(fileno(chat_tty_out()), TIOCGWINSZ, ws) == 0 &&
	       ws->ws_col > 0 ? 0 : -1;
}

/*
 * When the window changed size, redraw the prompt and the line at the
 * new width: up to the prompt's first row, clear, let libedit draw.
 */
static void redraw_if_resized(struct chat_tty *t)
{
	FILE *out = chat_tty_out();
	struct winsize ws;
	int up;

	if (window_size(&ws) < 0 || (ws.ws_col == t->size.ws_col &&
				     ws.ws_row == t->size.ws_row))
		return;
	t->size = ws;
	up = rows_to_cursor(t, ws.ws_col);
	fputc('\r', out);
	if (up > 0)
		fprintf(out, "\033[%dA", up);
	fputs("\033[J", out);
	fflush(out);
	E.el_resize(t->el);
	E.el_set(t->el, EL_REFRESH);
}

/*
 * libedit's character source (EL_GETCFN): one character, decoded from
 * UTF-8 (LC_CTYPE). A window resized meanwhile is redrawn, at once when
 * SIGWINCH comes, and before a key is handed over in any case (the
 * signal may come after the keys typed at the new size). Returns 1, 0
 * at the end of input, -1 on an error.
 */
static int tty_getc(EditLine *el, wchar_t *wc)
{
	struct chat_tty *t = NULL;
	struct pollfd pfd[2];
	char buf[MB_LEN_MAX], drain[64];
	size_t have = 0, r;
	mbstate_t mbs;
	ssize_t got;

	E.el_get(el, EL_CLIENTDATA, &t);
	for (;;) {
		pfd[0].fd = 0;
		pfd[0].events = POLLIN;
		pfd[1].fd = t ? t->winch[0] : -1;
		pfd[1].events = POLLIN;
		pfd[0].revents = pfd[1].revents = 0;
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (pfd[1].revents & POLLIN) {
			while (read(t->winch[0], drain, sizeof(drain)) > 0)
				;
			redraw_if_resized(t);
			continue;
		}
		if (!pfd[0].revents)
			continue;
		got = read(0, buf + have, 1);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0) {
			*wc = L'\0';
			return got < 0 ? -1 : 0;
		}
		have++;
		memset(&mbs, 0, sizeof(mbs));
		r = mbrtowc(wc, buf, have, &mbs);
		if (r == (size_t)-2 && have < sizeof(buf))
			continue;	/* more bytes of this character */
		if (r == (size_t)-1 || r == (size_t)-2) {
			have = 0;	/* not UTF-8: dropped */
			continue;
		}
		if (t)
			redraw_if_resized(t);
		return 1;
	}
}

/* --- Keys --------------------------------------------------------------- */

FILE *chat_tty_out(void)
{
	return isatty(1) ? stdout : stderr;
}

static char *get_prompt(EditLine *el)
{
	struct chat_tty *t = NULL;

	E.el_get(el, EL_CLIENTDATA, &t);
	return (char *)(t && t->prompt ? t->prompt : "> ");
}

/* Ctrl-C: drop the line (and the lines it continues). */
static unsigned char on_interrupt(EditLine *el, int ch)
{
	struct chat_tty *t = NULL;
	const LineInfoW *li = E.el_wline(el);

	(void)ch;
	E.el_get(el, EL_CLIENTDATA, &t);
	E.el_cursor(el, (int)(li->lastchar - li->cursor));
	li = E.el_wline(el);
	E.el_deletestr(el, (int)(li->cursor - li->buffer));
	if (t)
		t->interrupted = 1;
	fputs("^C", chat_tty_out());
	return CC_NEWLINE;
}

/*
 * Insert len bytes of UTF-8 text at the cursor, a line break as "\n"
 * ("\r\n" and "\r" too: what terminals send), NUL bytes and bytes that
 * are not UTF-8 left out. 0, or -1 when libedit refused it.
 */
static int insert_text(EditLine *el, const char *s, size_t len)
{
	wchar_t *w = calloc(len + 1, sizeof(*w));
	size_t i = 0, n = 0, r;
	mbstate_t mbs;
	int ret;

	if (!w)
		die("out of memory");
	memset(&mbs, 0, sizeof(mbs));
	while (i < len) {
		if (s[i] == '\r' || s[i] == '\n') {
			w[n++] = L'\n';
			i += s[i] == '\r' && i + 1 < len && s[i + 1] == '\n';
			i++;
			continue;
		}
		r = mbrtowc(&w[n], s + i, len - i, &mbs);
		if (r == (size_t)-1 || r == (size_t)-2 || r == 0) {
			memset(&mbs, 0, sizeof(mbs));
			i++;
			continue;
		}
		n++;
		i += r;
	}
	ret = n ? E.el_winsertstr(el, w) : 0;
	free(w);
	return ret < 0 ? -1 : 0;
}

/* One byte of a paste; -1 at its end, or when none comes for 2 s. */
static int paste_byte(unsigned char *c)
{
	struct pollfd pfd = { 0, POLLIN, 0 };
	ssize_t n;
	int r;

	for (;;) {
		r = poll(&pfd, 1, 2000);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		n = read(0, c, 1);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		return n == 1 ? 0 : -1;
	}
}

/*
 * ESC [ 200 ~ (bracketed paste): everything up to ESC [ 201 ~ is text,
 * newlines included, inserted as one piece: a paste is one message.
 */
static unsigned char on_paste(EditLine *el, int ch)
{
	static const char end[] = "\033[201~";
	aptix_buf text = APTIX_BUF_INIT;
	size_t matched = 0;
	unsigned char c;
	int r;

	(void)ch;
	while (end[matched] && paste_byte(&c) == 0) {
		if (c == (unsigned char)end[matched]) {
			matched++;
			continue;
		}
		/* ESC only starts the marker: a broken one is text */
		aptix_buf_put(&text, end, matched);
		matched = c == (unsigned char)end[0];
		if (!matched)
			aptix_buf_putc(&text, (char)c);
	}
	if (aptix_buf_oom(&text))
		die("out of memory");
	r = insert_text(el, text.ptr, text.len);
	aptix_buf_release(&text);
	return r < 0 ? CC_ERROR : CC_REFRESH;
}

/* Ctrl-J, Alt-Enter: a new line in the input, not the end of it. */
static unsigned char on_newline(EditLine *el, int ch)
{
	(void)ch;
	return E.el_winsertstr(el, L"\n") < 0 ? CC_ERROR : CC_REFRESH;
}

/* Tab: complete a slash command at the start of the line. */
static unsigned char on_tab(EditLine *el, int ch)
{
	const struct chat_cmd *v[32];
	const LineInfo *li = E.el_line(el);
	size_t len = (size_t)(li->cursor - li->buffer), n, common, i;
	char add[32];
	FILE *out = chat_tty_out();

	(void)ch;
	if (!len || li->buffer[0] != '/' ||
	    memchr(li->buffer, ' ', len) || memchr(li->buffer, '\t', len))
		return CC_ERROR;
	n = chat_complete(v, 32, li->buffer + 1, len - 1, &common);
	if (!n)
		return CC_ERROR;
	if (common > len - 1 || n == 1) {
		snprintf(add, sizeof(add), "%.*s%s", (int)(common - (len - 1)),
			 v[0]->name + len - 1, n == 1 ? " " : "");
		if (*add && E.el_insertstr(el, add) < 0)
			return CC_ERROR;
		return CC_REFRESH;
	}
	fputc('\n', out);
	for (i = 0; i < n && i < 32; i++)
		fprintf(out, "/%s%s", v[i]->name, i + 1 < n ? "  " : "\n");
	return CC_REDISPLAY;
}

struct chat_tty *chat_tty_open(const char *history_path)
{
	struct chat_tty *t = calloc(1, sizeof(*t));
	HistEvent ev;
	int i;

	if (!t)
		die("out of memory");
	load_libedit();
	tty_locale();
	if (pipe(t->winch) < 0)
		die_errno("cannot start line editing");
	for (i = 0; i < 2; i++) {
		fcntl(t->winch[i], F_SETFD, FD_CLOEXEC);
		fcntl(t->winch[i], F_SETFL, O_NONBLOCK);
	}
	t->el = E.el_init("aptix", stdin, chat_tty_out(), stderr);
	t->hist = E.history_init();
	if (!t->el || !t->hist)
		die("cannot start line editing");
	E.history(t->hist, &ev, H_SETSIZE, 1000);
	E.history(t->hist, &ev, H_SETUNIQUE, 1);
	if (history_path) {
		t->history_path = strdup(history_path);
		E.history(t->hist, &ev, H_LOAD, history_path);
	}
	E.el_set(t->el, EL_CLIENTDATA, t);
	E.el_set(t->el, EL_GETCFN, tty_getc);
	E.el_set(t->el, EL_EDITOR, "emacs");
	E.el_set(t->el, EL_PROMPT, get_prompt);
	E.el_set(t->el, EL_HIST, E.history, t->hist);
	E.el_set(t->el, EL_ADDFN, "aptix-complete",
		 "complete a slash command", on_tab);
	E.el_set(t->el, EL_ADDFN, "aptix-interrupt", "drop the line",
	       on_interrupt);
	E.el_set(t->el, EL_ADDFN, "aptix-paste", "insert a paste whole",
		 on_paste);
	E.el_set(t->el, EL_ADDFN, "aptix-newline", "a new line in the input",
		 on_newline);
	/* the user's ~/.editrc first; the keys chat needs win */
	E.el_source(t->el, NULL);
	E.el_set(t->el, EL_BIND, "^I", "aptix-complete", NULL);
	E.el_set(t->el, EL_BIND, "^C", "aptix-interrupt", NULL);
	E.el_set(t->el, EL_BIND, "^R", "em-inc-search-prev", NULL);
	/* Enter is ^M, Ctrl-J ^J: no CR/NL mapping to make them one */
	E.el_set(t->el, EL_BIND, "^M", "ed-newline", NULL);
	E.el_set(t->el, EL_BIND, "^J", "aptix-newline", NULL);
	E.el_set(t->el, EL_BIND, "\\e^M", "aptix-newline", NULL);
	E.el_set(t->el, EL_BIND, "\\e^J", "aptix-newline", NULL);
	E.el_set(t->el, EL_BIND, "\\e[13;2u", "aptix-newline", NULL);
	E.el_set(t->el, EL_BIND, "\\e[200~", "aptix-paste", NULL);
	E.el_set(t->el, EL_SETTY, "-d", "-isig", "-icrnl", "-inlcr", NULL);
	return t;
}

void chat_tty_close(struct chat_tty *t)
{
	if (!t)
		return;
	E.el_end(t->el);
	E.history_end(t->hist);
	close(t->winch[0]);
	close(t->winch[1]);
	free(t->history_path);
	free(t);
}

/*
 * One line from libedit, with bracketed paste on and resizes redrawn
 * while it waits; both off again for what runs next (a turn, $EDITOR).
 */
static const char *edit_line(struct chat_tty *t, int *count)
{
	FILE *out = chat_tty_out();
	struct sigaction sa, old;
	const char *line;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_winch;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	winch_fd = t->winch[1];
	sigaction(SIGWINCH, &sa, &old);
	window_size(&t->size);	/* libedit reads it too, as it starts */
	fputs("\033[?2004h", out);
	fflush(out);
	line = E.el_gets(t->el, count);
	fputs("\033[?2004l", out);
	fflush(out);
	sigaction(SIGWINCH, &old, NULL);
	winch_fd = -1;
	return line;
}

/* What the instruction check refuses: a credential, a configured key. */
static int holds_credential(const char *s)
{
	const char *keys[2];

	cli_env_keys(keys);
	return aptix_credscan_find(NULL, s, strlen(s), keys, 2);
}

char *chat_tty_read(struct chat_tty *t, const char *prompt)
{
	aptix_buf in = APTIX_BUF_INIT;
	HistEvent ev;
	const char *line;
	char *copy, *out;
	int count, more;

again:
	aptix_buf_clear(&in);
	t->prompt = prompt;
	do {
		t->interrupted = 0;
		line = edit_line(t, &count);
		if (t->interrupted) {
			fputc('\n', chat_tty_out());
			goto again;
		}
		if (!line || count <= 0) {
			if (in.len)
				break;	/* Ctrl-D ends a continued input */
			aptix_buf_release(&in);
			return NULL;
		}
		if (!(copy = strdup(line)))
			die("out of memory");
		more = chat_line_continues(copy);
		if (in.len)
			aptix_buf_putc(&in, '\n');
		aptix_buf_puts(&in, copy);
		free(copy);
		t->prompt = "... ";
	} while (more);
	if (!(out = strdup(in.ptr)))
		die("out of memory");
	aptix_buf_release(&in);
	/* a line chat refuses (a credential) is never saved */
	if (*out && strspn(out, " \t\n") < strlen(out) &&
	    !holds_credential(out)) {
		E.history(t->hist, &ev, H_ENTER, out);
		if (t->history_path)
			E.history(t->hist, &ev, H_SAVE, t->history_path);
	}
	return out;
}

/* --- Raw keys ----------------------------------------------------------- */

static struct termios saved_tio;
static int raw_on;

static int raw_mode(int on)
{
	struct termios tio;

	if (on) {
		if (tcgetattr(0, &saved_tio) < 0)
			return -1;
		tio = saved_tio;
		tio.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG);
		/* Enter stays ^M: typed ahead of the prompt, it submits the
		 * line there (^J inserts a newline into it) */
		tio.c_iflag &= ~(tcflag_t)ICRNL;
		tio.c_cc[VMIN] = 1;
		tio.c_cc[VTIME] = 0;
		if (tcsetattr(0, TCSAFLUSH, &tio) < 0)
			return -1;
		raw_on = 1;
	} else if (raw_on) {
		/* keys typed after the answer are kept for the prompt */
		tcsetattr(0, TCSADRAIN, &saved_tio);
		raw_on = 0;
	}
	return 0;
}

enum {
	KEY_EOF = -1, KEY_UP = 256, KEY_DOWN, KEY_PGUP, KEY_PGDN, KEY_ESC
};

/* One key: a byte, or one of the names above for escape sequences. */
static int read_key(void)
{
	unsigned char c, seq[8];
	struct pollfd pfd = { 0, POLLIN, 0 };
	size_t n = 0;

	if (read(0, &c, 1) != 1)
		return KEY_EOF;
	if (c != 27)
		return c;
	/* an escape sequence follows at once; a lone Esc does not */
	while (n < sizeof(seq) && poll(&pfd, 1, 50) > 0 &&
	       read(0, &seq[n], 1) == 1) {
		n++;
		if (n >= 2 && ((seq[n - 1] >= 'A' && seq[n - 1] <= 'Z') ||
			       seq[n - 1] == '~'))
			break;
	}
	if (!n)
		return KEY_ESC;
	if (n >= 2 && (seq[0] == '[' || seq[0] == 'O')) {
		if (seq[1] == 'A')
			return KEY_UP;
		if (seq[1] == 'B')
			return KEY_DOWN;
		if (seq[1] == '5' && n >= 3)
			return KEY_PGUP;
		if (seq[1] == '6' && n >= 3)
			return KEY_PGDN;
	}
	return 0;	/* a key we do not use */
}

int chat_ask(const char *question, const char *keys)
{
	FILE *out = chat_tty_out();
	int k;

	if (!isatty(0))
		return 0;
	/* raw first: a key pressed once the question shows is never lost
	 * (entering raw mode drops what was typed before it) */
	raw_mode(1);
	fputs(question, out);
	fflush(out);
	do {
		k = read_key();
		if (k == KEY_EOF || k == KEY_ESC || k == 3) {
			k = 0;
			break;
		}
	} while (k > 255 || !k || !strchr(keys, k));
	raw_mode(0);
	fprintf(out, "%c\n", k ? k : ' ');
	return k;
}

/* --- The picker --------------------------------------------------------- */

static void draw_row(FILE *out, const struct picker *p, size_t e)
{
	const aptix_conv_info *ci = &p->rows[p->vis[e - 1]].ci;
	char date[64];

	fprintf(out, "%s%3lu  %-8.8s  %s  %3lu turn%s  %-9s  ",
		p->sel == e ? "> " : "  ", (unsigned long)e, ci->id,
		view_date(date, ci->updated_at, 1),
		(unsigned long)ci->committed,
		ci->committed == 1 ? " " : "s", ci->turns ?
		aptix_session_status_name(ci->last_status) : "new");
	if (*ci->title)
		view_put_truncated(out, ci->title, 40, 0);
	else
		fputs("(no title)", out);
	fputs("\033[K\r\n", out);
}

static void draw(FILE *out, const struct picker *p, const char *scope,
		 int filtering, const char *number)
{
	size_t page = picker_page_of(p), e, first, last;

	fputs("\033[H\033[2J", out);
	fprintf(out, "Conversations of %s, most recent first\r\n",
		p->all ? "every workspace" : scope ? "this workspace" :
		"the store");
	fputs("Up/Down or a number, Enter: open; /: filter; a: all "
	      "workspaces; n: new; Esc: quit\r\n", out);
	if (filtering || *p->filter) {
		fputs("Filter: ", out);
		view_puts(out, p->filter);
		fputs(filtering ? "_  (Enter: done)\r\n" : "\r\n", out);
	}
	fputs("\r\n", out);
	fprintf(out, "%s  0  + new conversation\033[K\r\n",
		p->sel == 0 ? "> " : "  ");
	first = page * PICKER_PAGE + 1;
	last = first + PICKER_PAGE - 1;
	if (last > p->nvis)
		last = p->nvis;
	for (e = first; e <= last; e++)
		draw_row(out, p, e);
	if (!p->nvis)
		fputs("  (no conversation matches)\r\n", out);
	fprintf(out, "\r\nPage %lu/%lu (PgUp/PgDn)%s%s\r\n",
		(unsigned long)page + 1, (unsigned long)picker_pages(p),
		*number ? "  Number: " : "", number);
	fflush(out);
}

int chat_pick(struct picker *p, const char *scope)
{
	FILE *out = chat_tty_out();
	char number[16] = "", filter[sizeof(p->filter)];
	int filtering = 0, k, chosen = -1;
	size_t n;

	if (raw_mode(1) < 0)
		return 0;
	while (chosen < 0) {
		draw(out, p, scope, filtering, number);
		k = read_key();
		if (k == KEY_EOF) {
			chosen = 0;
		} else if (filtering) {
			snprintf(filter, sizeof(filter), "%s", p->filter);
			n = strlen(filter);
			if (k == '\r' || k == '\n') {
				filtering = 0;
			} else if (k == KEY_ESC || k == 3) {
				filtering = 0;
				picker_set_filter(p, "");
			} else if ((k == 127 || k == 8) && n) {
				filter[n - 1] = '\0';
				picker_set_filter(p, filter);
			} else if (k >= 32 && k < 256 && k != 127 &&
				   n + 1 < sizeof(filter)) {
				filter[n] = (char)k;
				filter[n + 1] = '\0';
				picker_set_filter(p, filter);
			} else if (k == KEY_UP || k == KEY_DOWN) {
				picker_move(p, k == KEY_UP ? -1 : 1);
			}
		} else if (k >= '0' && k <= '9') {
			n = strlen(number);
			if (n + 1 < sizeof(number)) {
				number[n] = (char)k;
				number[n + 1] = '\0';
			}
		} else if (k == '\r' || k == '\n') {
			if (*number && picker_select_number(p,
					strtoul(number, NULL, 10)) < 0) {
				*number = '\0';
				continue;
			}
			chosen = 1;
		} else if (k == 127 || k == 8) {
			if (*number)
				number[strlen(number) - 1] = '\0';
		} else {
			*number = '\0';
			if (k == KEY_ESC || k == 'q' || k == 3)
				chosen = 0;
			else if (k == KEY_UP || k == 'k')
				picker_move(p, -1);
			else if (k == KEY_DOWN || k == 'j')
				picker_move(p, 1);
			else if (k == KEY_PGUP)
				picker_page(p, -1);
			else if (k == KEY_PGDN || k == ' ')
				picker_page(p, 1);
			else if (k == '/')
				filtering = 1;
			else if (k == 'a')
				picker_toggle_all(p);
			else if (k == 'n') {
				p->sel = 0;
				chosen = 1;
			}
		}
	}
	raw_mode(0);
	fputs("\033[H\033[2J", out);
	fflush(out);
	return chosen;
}

/* --- $EDITOR ------------------------------------------------------------ */

char *chat_edit_text(const char *path)
{
	const char *editor = getenv("VISUAL");
	aptix_process p = APTIX_PROCESS_INIT;
	const char *argv[3];
	aptix_buf text = APTIX_BUF_INIT;
	FILE *fp;
	int status = 0;
	char *out;

	if (!editor || !*editor)
		editor = getenv("EDITOR");
	if (!editor || !*editor)
		editor = "vi";
	argv[0] = editor;
	argv[1] = path;
	argv[2] = NULL;
	if (!(fp = fopen(path, "w"))) {
		error_errno("cannot write %s", path);
		return NULL;
	}
	fclose(fp);
	p.argv = argv;
	p.shell = 1;	/* as git runs it: the editor may hold arguments */
	status = cli_run_foreground(&p);
	if (status) {
		if (status > 0)
			error("the editor '%s' failed", editor);
		unlink(path);
		return NULL;
	}
	if (aptix_buf_read_file(&text, path) < 0) {
		error_aptix();
		unlink(path);
		return NULL;
	}
	unlink(path);
	out = strdup(text.ptr);
	aptix_buf_release(&text);
	if (!out)
		die("out of memory");
	return out;
}
