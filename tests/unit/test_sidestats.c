/* unit: gateway */
/* sidestats: the GetStats poll on its own, through struct sidestats_link
   (no upstream, no socket): a sidecar that does not offer stats is never
   asked, one question at most is in flight, the next waits
   SIDESTATS_POLL_MS, an answer is kept field by field, and a question
   unanswered (timeout, link down) or a link that went down clears it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sidestats.h"

/* The link as sidestats sees it: whether it is up, the ids it hands out,
   and the questions sent (the last one's reply callback kept). */
struct fake_link {
	int up;
	int refuse; /* request answers -ENOTCONN */
	uint64_t next_id;
	unsigned asked;
	uint64_t last_id;
	int last_case;
	void (*reply)(const Ptg__Reply *r, void *user);
	void *user;
};

static int fake_up(void *owner)
{
	return ((struct fake_link *)owner)->up;
}

static uint64_t fake_next_id(void *owner)
{
	return ++((struct fake_link *)owner)->next_id;
}

static int fake_request(void *owner, const Ptg__LinkMessage *m, uint64_t id,
			void (*reply)(const Ptg__Reply *r, void *user), void *user)
{
	struct fake_link *l = owner;

	if (l->refuse)
		return -ENOTCONN;
	l->asked++;
	l->last_id = id;
	l->last_case = (int)m->msg_case;
	assert_int_equal(m->get_stats->request_id, id);
	l->reply = reply;
	l->user = user;
	return 0;
}

static const struct sidestats_link fake = {
    .up = fake_up,
    .next_id = fake_next_id,
    .request = fake_request,
};

/* The sidecar answers the question in flight with version. */
static void answer(struct fake_link *l, const char *version)
{
	Ptg__Reply r = PTG__REPLY__INIT;
	Ptg__SidecarStats st = PTG__SIDECAR_STATS__INIT;

	st.version = (char *)version;
	st.sessions_running = 3;
	st.rss_bytes = 4096;
	r.request_id = l->last_id;
	r.code = PTG__ERROR_CODE__OK;
	r.result_case = PTG__REPLY__RESULT_STATS;
	r.stats = &st;
	l->reply(&r, l->user);
}

static void test_not_offered_never_asked(void **state)
{
	struct fake_link l = {.up = 1};
	struct sidestats s;

	sidestats_init(&s, &fake, &l);
	sidestats_poll(&s, 0); /* before the hello is answered */
	sidestats_linked(&s, 0);
	sidestats_poll(&s, 0);
	sidestats_poll(&s, 10 * SIDESTATS_POLL_MS);
	assert_int_equal(l.asked, 0);
	assert_false(s.have);
}

static void test_one_question_then_the_period(void **state)
{
	struct fake_link l = {.up = 1};
	struct sidestats s;

	sidestats_init(&s, &fake, &l);
	sidestats_linked(&s, 1);
	sidestats_poll(&s, 1000);
	assert_int_equal(l.asked, 1);
	assert_int_equal(l.last_case, PTG__LINK_MESSAGE__MSG_GET_STATS);
	assert_int_equal(s.pending, l.last_id);
	sidestats_poll(&s, 1000 + 2 * SIDESTATS_POLL_MS); /* still in flight */
	assert_int_equal(l.asked, 1);

	answer(&l, "1.2.3");
	assert_true(s.have);
	assert_int_equal(s.pending, 0);
	assert_string_equal(s.last.version, "1.2.3");
	assert_int_equal(s.last.sessions_running, 3);
	assert_int_equal(s.last.rss_bytes, 4096);

	sidestats_poll(&s, 1000 + SIDESTATS_POLL_MS - 1);
	assert_int_equal(l.asked, 1);
	sidestats_poll(&s, 1000 + SIDESTATS_POLL_MS);
	assert_int_equal(l.asked, 2);
	assert_true(s.have); /* the last answer stands while the next is asked */
}

static void test_unanswered_and_down_clear(void **state)
{
	struct fake_link l = {.up = 1};
	struct sidestats s;

	sidestats_init(&s, &fake, &l);
	sidestats_linked(&s, 1);
	sidestats_poll(&s, 0);
	answer(&l, "1");
	assert_true(s.have);

	sidestats_poll(&s, SIDESTATS_POLL_MS);
	l.reply(NULL, l.user); /* timed out, or the link dropped */
	assert_false(s.have);
	assert_int_equal(s.pending, 0);

	sidestats_poll(&s, 2 * SIDESTATS_POLL_MS);
	answer(&l, "2");
	assert_true(s.have);
	l.up = 0;
	sidestats_poll(&s, 3 * SIDESTATS_POLL_MS);
	assert_false(s.have);
	assert_int_equal(l.asked, 3);
}

/* A question the link cannot send is not in flight: the next goes a
   period later. */
static void test_refused_request(void **state)
{
	struct fake_link l = {.up = 1, .refuse = 1};
	struct sidestats s;

	sidestats_init(&s, &fake, &l);
	sidestats_linked(&s, 1);
	sidestats_poll(&s, 0);
	assert_int_equal(s.pending, 0);
	l.refuse = 0;
	sidestats_poll(&s, SIDESTATS_POLL_MS - 1);
	assert_int_equal(l.asked, 0);
	sidestats_poll(&s, SIDESTATS_POLL_MS);
	assert_int_equal(l.asked, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_not_offered_never_asked),
	    cmocka_unit_test(test_one_question_then_the_period),
	    cmocka_unit_test(test_unanswered_and_down_clear),
	    cmocka_unit_test(test_refused_request),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
