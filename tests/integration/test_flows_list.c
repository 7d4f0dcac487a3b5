/* test_flows_list: the paged session list (ListSessions page_size and
   after, SessionList next_after) in session id order, and list entries
   whose argv is cut to a bounded prefix (argv_truncated) while
   GetSession keeps it whole. A real ptygate-sidecar driven over its link
   (flows_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "flows_fixture.h"

#define LIST_ARGV_BYTES 256 /* sidecar/server.c */

static Ptg__SessionList *list_page(struct peer *p, unsigned page_size, const char *after)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__ListSessions ls = PTG__LIST_SESSIONS__INIT;
	Ptg__Reply *r;

	ls.request_id = ++p->next_rid;
	ls.page_size = page_size;
	ls.after = (char *)after;
	m.msg_case = PTG__LINK_MESSAGE__MSG_LIST_SESSIONS;
	m.list_sessions = &ls;
	peer_send(p, &m);
	r = expect_reply(p, ls.request_id, STEP_MS);
	assert_int_equal(r->code, PTG__ERROR_CODE__OK);
	assert_int_equal(r->result_case, PTG__REPLY__RESULT_SESSIONS);
	return r->sessions;
}

static void test_pages_in_id_order(void **state)
{
	struct fixture *fx = *state;
	char ids[7][FLOWS_SID_MAX], seen[7][FLOWS_SID_MAX], after[FLOWS_SID_MAX] = "";
	size_t n = 0, pages = 0;
	struct peer *p;

	sidecar_start(fx, NULL);
	p = peer_open(fx);
	for (int i = 0; i < 7; i++)
		create_sh(p, 80, 24, ids[i]);
	do {
		Ptg__SessionList *l = list_page(p, 3, after);

		assert_in_range(l->n_sessions, 1, 3);
		for (size_t i = 0; i < l->n_sessions; i++) {
			assert_true(n < 7);
			snprintf(seen[n++], sizeof(seen[0]), "%s",
				 l->sessions[i]->session_id);
		}
		snprintf(after, sizeof(after), "%s", l->next_after);
		if (after[0])
			assert_string_equal(after, seen[n - 1]);
		pages++;
	} while (after[0]);
	assert_int_equal(n, 7);
	assert_int_equal(pages, 3);
	for (size_t i = 1; i < n; i++)
		assert_true(strcmp(seen[i - 1], seen[i]) < 0);
	for (int i = 0; i < 7; i++) {
		int found = 0;

		for (size_t k = 0; k < n; k++)
			found += !strcmp(ids[i], seen[k]);
		assert_int_equal(found, 1);
	}
	/* page_size 0 is the default page (100): everything, no next. */
	assert_int_equal(list_page(p, 0, "")->n_sessions, 7);
	assert_string_equal(list_page(p, 0, "")->next_after, "");
	/* Past the last id: an empty last page. */
	assert_int_equal(list_page(p, 3, seen[6])->n_sessions, 0);
}

static void test_argv_summarised(void **state)
{
	struct fixture *fx = *state;
	char arg[4001], sid[FLOWS_SID_MAX];
	const char *argv[] = {"/bin/sh", "-c", "exec sleep 60", arg, arg, NULL};
	Ptg__SessionList *l;
	Ptg__SessionInfo *s;
	size_t bytes = 0;
	struct peer *p;

	memset(arg, 'x', sizeof(arg) - 1);
	arg[sizeof(arg) - 1] = '\0';
	sidecar_start(fx, NULL);
	p = peer_open(fx);
	create_session(p, &(struct create_req){.argv = argv, .cols = 80, .rows = 24},
		       sid);
	l = list_page(p, 0, "");
	assert_int_equal(l->n_sessions, 1);
	s = l->sessions[0];
	assert_true(s->argv_truncated);
	assert_int_equal(s->n_argv, 4);
	assert_string_equal(s->argv[2], "exec sleep 60");
	for (size_t i = 0; i < s->n_argv; i++)
		bytes += strlen(s->argv[i]) + 1;
	assert_int_equal(bytes, LIST_ARGV_BYTES);
	assert_int_equal(strspn(s->argv[3], "x"), strlen(s->argv[3]));
	s = get_session(p, sid);
	assert_false(s->argv_truncated);
	assert_int_equal(s->n_argv, 5);
	assert_int_equal(strlen(s->argv[4]), 4000);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    FLOWS_TEST(test_pages_in_id_order),
	    FLOWS_TEST(test_argv_summarised),
	};

	return FLOWS_RUN("integration.flows_list", tests);
}
