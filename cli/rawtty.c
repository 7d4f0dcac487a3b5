/* rawtty: raw mode with restoration that survives crashes. The fatal
   signals get a one-shot handler that restores the terminal and
   re-raises, so a crash still leaves a usable shell behind. */
#include "rawtty.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

static struct termios rawtty_saved;
static int rawtty_fd = -1;
static volatile sig_atomic_t rawtty_active;

void rawtty_restore(void)
{
	if (!rawtty_active)
		return;
	rawtty_active = 0;
	/* TCSADRAIN: let our last output out before echo comes back. */
	tcsetattr(rawtty_fd, TCSADRAIN, &rawtty_saved);
}

static void fatal(int sig)
{
	rawtty_restore();
	raise(sig); /* SA_RESETHAND: the default action now */
}

static void hook_fatal(void)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGQUIT};
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fatal;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

int rawtty_enter(int fd)
{
	static bool hooked;
	struct termios t;

	if (rawtty_active)
		return 0;
	if (tcgetattr(fd, &rawtty_saved) < 0)
		return -errno;
	t = rawtty_saved;
	cfmakeraw(&t);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	rawtty_fd = fd;
	if (!hooked) {
		hooked = true;
		atexit(rawtty_restore);
		hook_fatal();
	}
	if (tcsetattr(fd, TCSADRAIN, &t) < 0)
		return -errno;
	rawtty_active = 1;
	return 0;
}

void rawtty_reset_modes(int fd)
{
	/* Main screen, visible cursor, no mouse reporting, no bracketed paste,
	   normal cursor keys and keypad, default pen. */
	static const char seq[] = "\033[?1049l\033[?25h\033[?1000l\033[?1002l\033[?1003l"
				  "\033[?1006l\033[?2004l\033[?1l\033>\033[0m";
	ssize_t n;

	do
		n = write(fd, seq, sizeof(seq) - 1);
	while (n < 0 && errno == EINTR);
}
