/* test_flows_state: what the sidecar keeps and guards: a restart with
   --state-dir (the honest boundary), the screen written at the state's
   pace, not per Keyframe asked for, and --session-user programs that
   cannot reach the link or the state. A real ptygate-sidecar driven over
   its link (flows_fixture.h). */
#include <errno.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "flows_fixture.h"
#include "timeutil.h"

/* ---- sidecar restart with --state-dir: the honest boundary ---- */

static void test_restart_boundary(void **state)
{
	struct fixture *fx = *state;
	char statedir[] = "/tmp/ptg-it-state-XXXXXX";
	const char *extra[] = {"--state-dir", statedir, "--state-plaintext", NULL};
	struct attach_req a = {.attach_id = 5,
			       .role = PTG__ROLE__ROLE_CONTROLLER,
			       .label = "back",
			       .scopes = SC_OBSERVE | SC_CONTROL,
			       .has_replay = 1};
	Ptg__SessionInfo *info;
	Ptg__AttachResult *ar;
	uint64_t before;
	struct peer *p;
	struct joined j;
	Ptg__Frame *f;
	char sid[FLOWS_SID_MAX];

	assert_non_null(mkdtemp(statedir));
	p = start_shell_controller(fx, extra, sid, &j);
	send_input(p, sid, 1, "echo before-$((6*7))\n", NULL);
	/* The prompt too: output after `before` would be counted in it. */
	wait_output(p, "before-42\r\n$ ", STEP_MS);
	before = get_session(p, sid)->current_sequence;
	sleep_ms(1200); /* the record is rewritten on the next second's tick */
	assert_int_equal(sidecar_stop(fx), 0);

	/* A new sidecar on the same state dir: the session is listed, exited,
	   its sequence goes on above every number that may have been issued
	   (reserved on disk in blocks), its history is still there (the
	   frame log), and its lost program is said to be lost. */
	sidecar_start(fx, extra);
	p = peer_open(fx);
	info = get_session(p, sid);
	assert_int_equal(info->state, PTG__SESSION_STATE__SESSION_EXITED);
	assert_false(info->has_exit_code);
	assert_true(info->current_sequence >= before + 2);
	assert_int_equal(info->oldest_retained_sequence, 1);
	before = info->current_sequence - 2; /* the boundary: log line, Closed */

	a.session = sid;
	a.replay_from = before;
	ar = attach_ok(p, &a);
	assert_string_equal(ar->replay_error, "");
	assert_int_equal(ar->role, PTG__ROLE__ROLE_OBSERVER);
	next_frame(p, PTG__FRAME__KIND_ROLE_ASSIGNED, 5);
	f = next_frame(p, PTG__FRAME__KIND_OUTPUT, 5);
	assert_int_equal(f->sequence, before + 1);
	assert_int_equal(f->output->stream, PTG__STREAM__STREAM_LOG);
	f = next_frame(p, PTG__FRAME__KIND_CLOSED, 5);
	assert_int_equal(f->closed->reason, PTG__CLOSE_REASON__CLOSE_INSTANCE_TERMINATED);
	f = next_frame(p, PTG__FRAME__KIND_KEYFRAME, 5);
	assert_true(snapshot_shows(f->keyframe, "before-42"));
	assert_true(snapshot_shows(f->keyframe, "sidecar restarted"));
	next_membership(p, 5);
	next_frame(p, PTG__FRAME__KIND_CLOSED, 5);

	/* Ahead of the counter is still out of range. */
	a.attach_id = 6;
	a.replay_from = before + 1000;
	assert_non_null(
	    strstr(join_out_of_range(p, &a), "ahead of the current sequence"));
	assert_int_equal(sidecar_stop(fx), 0);
	remove_tree(statedir);
}

/* ---- the screen on disk is not rewritten per Keyframe asked for ---- */

/* How many times name was put in place in the watched directory
   (write_atomic renames a finished file over it). */
static int count_renames_to(int ifd, const char *name)
{
	char evbuf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;
	int count = 0;

	while ((n = read(ifd, evbuf, sizeof(evbuf))) > 0) {
		for (char *q = evbuf; q < evbuf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)q;

			if ((ev->mask & IN_MOVED_TO) && ev->len &&
			    !strcmp(ev->name, name))
				count++;
			q += sizeof(*ev) + ev->len;
		}
	}
	return count;
}

/* A sidecar with a fresh --state-dir and the options in more (NULL-
   terminated, at most 8), its usual shell controller, and an inotify fd
   on the state directory for count_renames_to. */
struct watched {
	char statedir[32];
	char sid[FLOWS_SID_MAX], screen[FLOWS_SID_MAX + 8];
	struct peer *p;
	int ifd;
};

static void start_watched(struct fixture *fx, struct watched *w, const char *const *more)
{
	const char *extra[12] = {"--state-dir", w->statedir, "--state-plaintext"};
	struct joined j;
	size_t n = 3;

	snprintf(w->statedir, sizeof(w->statedir), "/tmp/ptg-it-state-XXXXXX");
	assert_non_null(mkdtemp(w->statedir));
	while (more && *more && n < 11)
		extra[n++] = *more++;
	extra[n] = NULL;
	w->p = start_shell_controller(fx, extra, w->sid, &j);
	snprintf(w->screen, sizeof(w->screen), "%s.screen", w->sid);
	w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	assert_true(w->ifd >= 0);
	/* With IN_MOVED_FROM between them, the renames are not merged into one
	   event (the kernel merges identical events in a row). */
	assert_true(inotify_add_watch(w->ifd, w->statedir, IN_MOVED_FROM | IN_MOVED_TO) >=
		    0);
}

/* How many times the screen file was written until now; then stops the
   sidecar and removes its state. */
static int stop_watched(struct fixture *fx, struct watched *w)
{
	int writes = count_renames_to(w->ifd, w->screen);

	close(w->ifd);
	assert_int_equal(sidecar_stop(fx), 0);
	remove_tree(w->statedir);
	return writes;
}

/* A connection that fell behind gets a Keyframe of its own; a thousand
   observers falling behind at once wrote a thousand screen files on the
   sidecar's loop (each of these 20 did), and a controller's echo waited
   behind them. The screen goes to disk at the state's own pace, at most
   once a second (and once more at most for the second already begun). */
static void test_lag_keyframes_do_not_write_the_screen(void **state)
{
	struct watched w;
	int64_t t0, elapsed_ms;

	start_watched(*state, &w, NULL);
	t0 = time_mono_ms();
	for (int i = 0; i < 20; i++) {
		send_lag_recovery(w.p, w.sid, 1, 4096); /* start_shell_controller's */
		expect_frame(w.p, PTG__FRAME__KIND_ERROR, 1,
			     STEP_MS); /* PTY_OUTPUT_LAGGED */
		expect_frame(w.p, PTG__FRAME__KIND_KEYFRAME, 1, STEP_MS);
	}
	elapsed_ms = time_mono_ms() - t0;
	assert_true(stop_watched(*state, &w) <= 2 + elapsed_ms / 1000);
}

/* The cadence's Keyframes (here every 5 Output frames) come every 100
   frames of a person typing, and each keystroke's echo is a frame: each
   of them wrote the screen file on the loop, and the echo after it
   waited (the echo's p99 doubled with --state-dir). The screen goes to
   disk at most once a second (and once more for the second begun). */
static void test_cadence_keyframes_of_typing_do_not_write_the_screen(void **state)
{
	const char *more[] = {"--keyframe-frames", "5", NULL};
	struct watched w;
	int64_t t0, elapsed_ms;

	start_watched(*state, &w, more);
	t0 = time_mono_ms();
	for (int i = 0; i < 60; i++) {
		char key[2] = {(char)('a' + i % 26), 0};

		send_input(w.p, w.sid, 1, key, NULL); /* the tty echoes it: a frame */
		wait_output(w.p, key, STEP_MS);
	}
	elapsed_ms = time_mono_ms() - t0;
	assert_true(stop_watched(*state, &w) <= 2 + elapsed_ms / 1000);
}

/* A flood's cadence Keyframes still save the screen once the frame log
   has grown by a quarter of its budget since the last save, however
   little time passed: retention drops the oldest frames, and a restart
   rebuilds the screen from the frames logged after the saved one. */
static void test_flood_saves_the_screen_as_the_log_grows(void **state)
{
	const char *more[] = {"--keyframe-frames",
			      "2",
			      "--replay-bytes",
			      "262144",
			      "--state-segment-bytes",
			      "65536",
			      NULL};
	struct watched w;
	int writes;

	start_watched(*state, &w, more);
	/* 2 MB: 32 log budgets' quarters, in frames of up to 64 KiB. */
	send_input(w.p, w.sid, 1,
		   "head -c 2000000 /dev/zero | tr '\\0' x; echo; echo flood-$((6*7))\n",
		   NULL);
	wait_output(w.p, "flood-42", 30000);
	writes = stop_watched(*state, &w);
	print_message("screen saved %d times during a 2 MB flood\n", writes);
	assert_true(writes >= 8);
}

/* ---- --session-user: programs cannot reach the link or the state ---- */

/* Run as the session user, it reports who it is and what it can reach. */
static const char PROBE_PY[] =
    "import errno, os, socket, sys\n"
    "sys.stdin.readline()\n"
    "def probe(f):\n"
    "    try:\n"
    "        f()\n"
    "        return 'ok'\n"
    "    except OSError as e:\n"
    "        return errno.errorcode.get(e.errno, str(e.errno))\n"
    "sock, state = sys.argv[1], sys.argv[2]\n"
    "print('uid=%d gid=%d home=%s user=%s' % (os.getuid(), os.getgid(),\n"
    "      os.environ.get('HOME'), os.environ.get('USER')))\n"
    "print('connect=' + probe(lambda: socket.socket(socket.AF_UNIX).connect(sock)))\n"
    "print('state=' + probe(lambda: os.listdir(state)))\n"
    "print('setuid=' + probe(lambda: os.setuid(0)))\n"
    "print('fds=' + ','.join(sorted(os.listdir('/proc/self/fd'))))\n"
    "print('probe-done')\n";

static void test_session_user(void **state)
{
	struct fixture *fx = *state;
	char statedir[] = "/tmp/ptg-it-state-XXXXXX";
	const char *extra[] = {"--session-user",    "nobody", "--state-dir", statedir,
			       "--state-plaintext", NULL};
	const char *argv[] = {"python3", "-c", PROBE_PY, fx->sock, statedir, NULL};
	struct create_req cr = {argv, NULL, 80, 24, PTG__POLICY__POLICY_KEEP_RUNNING};
	const struct passwd *pw = getpwnam("nobody");
	char want[64], sid[FLOWS_SID_MAX];
	struct stat st;
	struct peer *p;
	struct joined j;

	if (geteuid() != 0 || !pw) {
		print_message("skipped: needs root and the user nobody\n");
		skip();
	}
	expect_refused("--session-user", "no-such-user-ptg");
	assert_non_null(mkdtemp(statedir));
	assert_int_equal(chmod(statedir, 0755), 0); /* the sidecar must tighten it */
	sidecar_start(fx, extra);
	/* Only the socket's own mode keeps the session user out. */
	assert_int_equal(chmod(fx->dir, 0755), 0);
	assert_int_equal(stat(statedir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(stat(fx->sock, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_uid, 0);

	p = peer_open(fx);
	create_session(p, &cr, sid);
	join_simple(p, sid, 1, PTG__ROLE__ROLE_CONTROLLER, "ctl", &j);
	send_input(p, sid, 1, "go\n", NULL);
	wait_output(p, "probe-done", STEP_MS);
	print_message("%.*s", (int)p->text.len, (const char *)p->text.data);
	snprintf(want, sizeof(want), "uid=%u gid=%u", (unsigned)pw->pw_uid,
		 (unsigned)pw->pw_gid);
	assert_non_null(text_find(p, 0, want));
	snprintf(want, sizeof(want), "user=%s", pw->pw_name);
	assert_non_null(text_find(p, 0, want));
	assert_non_null(text_find(p, 0, "connect=EACCES"));
	assert_non_null(text_find(p, 0, "state=EACCES"));
	assert_non_null(text_find(p, 0, "setuid=EPERM"));
	/* Nothing of the sidecar's leaks in, not even what its own launcher
	   left open: the terminal, and the probe's own listing. */
	assert_non_null(text_find(p, 0, "fds=0,1,2,3\r\n"));
	assert_int_equal(sidecar_stop(fx), 0);
	remove_tree(statedir);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    FLOWS_TEST(test_restart_boundary),
	    FLOWS_TEST(test_lag_keyframes_do_not_write_the_screen),
	    FLOWS_TEST(test_cadence_keyframes_of_typing_do_not_write_the_screen),
	    FLOWS_TEST(test_flood_saves_the_screen_as_the_log_grows),
	    FLOWS_TEST(test_session_user),
	};

	return FLOWS_RUN("integration.flows_state", tests);
}
