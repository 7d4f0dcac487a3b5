/* unit: gateway */
/* conn_take_role: the role a join or a RoleAssigned gives a connection
   decides whether its socket is read before the other ready ios of a
   loop turn (a controller's keystroke before a link's turn of fan-out:
   ev_io_set_urgent; test_ev checks the order itself), and which
   connection gauge counts it. A controller downgraded to an observer
   loses the urgency, and an observer made controller gains it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "conn_int.h"
#include "ev.h"
#include "metrics.h"

static void on_io(struct ev_io *io, int fd, unsigned events, void *user) {}

struct fixture {
	struct ev_loop *loop;
	int fd[2];
	struct metrics m;
	struct conn_host host;
	struct conn c;
};

static void fixture_init(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	f->loop = ev_loop_new();
	assert_non_null(f->loop);
	assert_int_equal(pipe(f->fd), 0);
	f->host.loop = f->loop;
	f->host.metrics = &f->m;
	f->m.conns_pending = 1; /* upgraded, not yet joined */
	f->c.host = &f->host;
	f->c.io = ev_io_new(f->loop, f->fd[0], EV_READ, on_io, &f->c);
	assert_non_null(f->c.io);
}

static void fixture_done(struct fixture *f)
{
	ev_io_free(f->c.io);
	close(f->fd[0]);
	close(f->fd[1]);
	ev_loop_free(f->loop);
}

static void test_controller_is_read_first(void **state)
{
	struct fixture f;

	fixture_init(&f);
	assert_false(ev_io_urgent(f.c.io)); /* not before the join */
	conn_take_role(&f.c, PTG__ROLE__ROLE_CONTROLLER);
	assert_true(ev_io_urgent(f.c.io));
	assert_int_equal(f.c.role, PTG__ROLE__ROLE_CONTROLLER);
	assert_int_equal(f.m.conns_controller, 1);
	assert_int_equal(f.m.conns_pending, 0);
	fixture_done(&f);
}

static void test_observer_waits_its_turn(void **state)
{
	struct fixture f;

	fixture_init(&f);
	conn_take_role(&f.c, PTG__ROLE__ROLE_OBSERVER);
	assert_false(ev_io_urgent(f.c.io));
	assert_int_equal(f.m.conns_observer, 1);
	assert_int_equal(f.m.conns_pending, 0);
	fixture_done(&f);
}

/* RoleAssigned moves a connection both ways (a downgrade, a grant). */
static void test_role_changes_move_urgency(void **state)
{
	struct fixture f;

	fixture_init(&f);
	conn_take_role(&f.c, PTG__ROLE__ROLE_CONTROLLER);
	conn_take_role(&f.c, PTG__ROLE__ROLE_OBSERVER);
	assert_false(ev_io_urgent(f.c.io));
	assert_int_equal(f.m.conns_controller, 0);
	assert_int_equal(f.m.conns_observer, 1);
	conn_take_role(&f.c, PTG__ROLE__ROLE_CONTROLLER);
	assert_true(ev_io_urgent(f.c.io));
	assert_int_equal(f.m.conns_controller, 1);
	assert_int_equal(f.m.conns_observer, 0);
	fixture_done(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_controller_is_read_first),
	    cmocka_unit_test(test_observer_waits_its_turn),
	    cmocka_unit_test(test_role_changes_move_urgency),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
