/* rawtty: the local terminal in raw mode for `ptygate attach`, and its
   restoration on every way out: a normal return, exit(), and the fatal
   signals (the handled ones, SIGINT SIGTERM SIGHUP, go through the
   attach loop's signalfd and a normal return). One terminal per process,
   so the saved state is this file's own. */
#ifndef PTG_CLI_RAWTTY_H
#define PTG_CLI_RAWTTY_H

/* Saves fd's terminal settings and makes it raw as ssh does (no echo,
   no line editing, no signals from keys, no output processing: the
   remote PTY already turned "\n" into "\r\n"). Returns 0 or a negative
   errno. */
int rawtty_enter(int fd);
/* Puts the saved settings back; a no-op when not raw. Async-signal-safe. */
void rawtty_restore(void);
/* Writes the sequences that undo what a remote program may have left set
   on the terminal at fd (alternate screen, hidden cursor, mouse
   reporting, bracketed paste, application keys, colours). */
void rawtty_reset_modes(int fd);

#endif
