/*
 * handlers_list.h - LIST from the cache, for handlers.c (see handlers_list.c). The request
 * state is handlers_int.h's; nothing but handlers.c calls this.
 */
#ifndef KWP_PROXY_HANDLERS_LIST_H
#define KWP_PROXY_HANDLERS_LIST_H

struct hreq;
struct k8s_list_opts;

/*
 * Serves the LIST of request <h> with options <lo>, once handlers_serve found the cache
 * ready and the request cacheable: continue tokens, Exact and NotOlderThan, the freshness
 * wait, paging. Replies, suspends (the freshness wait; handlers_serve runs again), or
 * forwards where handlers_route says so. Called on the request's MHD thread.
 */
void handlers_list_serve(struct hreq *h, const struct k8s_list_opts *lo);

#endif
