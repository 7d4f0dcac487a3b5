/* list: the project's one list primitive. Every intrusive list is a
   <sys/queue.h> LIST, TAILQ, SLIST or STAILQ; this header adds the
   FOREACH_SAFE forms (iteration that may free the current element) and
   STAILQ_LAST that the BSDs have and glibc's copy lacks, with the BSDs'
   names and meaning, so code reads the same as on those systems. */
#ifndef PTG_LIST_H
#define PTG_LIST_H

#include <stddef.h>
#include <sys/queue.h>

#ifndef LIST_FOREACH_SAFE
#define LIST_FOREACH_SAFE(var, head, field, tvar)                                        \
	for ((var) = LIST_FIRST(head); (var) && ((tvar) = LIST_NEXT(var, field), 1);     \
	     (var) = (tvar))
#endif

#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)                                       \
	for ((var) = TAILQ_FIRST(head); (var) && ((tvar) = TAILQ_NEXT(var, field), 1);   \
	     (var) = (tvar))
#endif

#ifndef SLIST_FOREACH_SAFE
#define SLIST_FOREACH_SAFE(var, head, field, tvar)                                       \
	for ((var) = SLIST_FIRST(head); (var) && ((tvar) = SLIST_NEXT(var, field), 1);   \
	     (var) = (tvar))
#endif

#ifndef STAILQ_FOREACH_SAFE
#define STAILQ_FOREACH_SAFE(var, head, field, tvar)                                      \
	for ((var) = STAILQ_FIRST(head); (var) && ((tvar) = STAILQ_NEXT(var, field), 1); \
	     (var) = (tvar))
#endif

/* The last element of a STAILQ (NULL when empty): stqh_last points at
   the last element's link, the first member of its entry. */
#ifndef STAILQ_LAST
#define STAILQ_LAST(head, type, field)                                                   \
	(STAILQ_EMPTY(head) ? NULL                                                       \
			    : (struct type *)(void *)((char *)((head)->stqh_last) -      \
						      offsetof(struct type, field)))
#endif

#endif
