/* SPDX-License-Identifier: MIT */
/* Intrusive circular doubly linked list (the usual kernel-style shape). */
#ifndef SR_LIST_H
#define SR_LIST_H

#include <stdbool.h>
#include "sr_common.h"

struct sr_list {
	struct sr_list *next, *prev;
};

#define SR_LIST_INIT(name) { &(name), &(name) }

static inline void sr_list_init(struct sr_list *l)
{
	l->next = l;
	l->prev = l;
}

static inline bool sr_list_empty(const struct sr_list *l)
{
	return l->next == l;
}

static inline void sr_list_add_tail(struct sr_list *head, struct sr_list *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void sr_list_del(struct sr_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	sr_list_init(n);
}

#define sr_list_entry(ptr, type, member) sr_container_of(ptr, type, member)
#define sr_list_first(head, type, member) sr_list_entry((head)->next, type, member)

#define sr_list_for_each_safe(pos, tmp, head) \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
	     (pos) = (tmp), (tmp) = (pos)->next)

#endif
