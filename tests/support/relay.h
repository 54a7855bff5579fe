/*
 * relay.h - a TCP relay in the test process between a client under test (kwp proxy) and its
 * upstream (kwp sim), for faults that need no hook in kwp: hold the upstream->client bytes
 * (events in flight), cut every open connection (a broken upstream stream), reset new ones
 * (an upstream that went away), delay what upstream sends (latency).
 *
 * In HTTP mode (relay_http) each connection carries one request: the relay reads its head,
 * tells a LIST (?limit=), a WATCH (watch=true/1) and anything else apart, records when it
 * came, and then either answers it itself (relay_answer: 401/429/500/503 with a Status body
 * and Retry-After), keeps it unanswered (relay_blackhole), or forwards it with
 * "Connection: close" and no Accept-Encoding (so the body is plain). On a forwarded WATCH it
 * can cut the stream after K bytes of body (relay_cut_after) or insert a chunk of its own at
 * a line boundary (relay_inject), once each.
 *
 * The relay listens on 127.0.0.1 port 0; an acceptor thread pairs each connection with a new
 * one to the upstream and a thread per pair pumps both directions (polling every 20 ms for a
 * change of mode). Settings are guarded by the relay's mutex: relay_hold, relay_refuse and
 * relay_cut may be called from any thread; relay_new and relay_free assert with Criterion,
 * so call them from a Test's thread.
 */
#ifndef KWP_SUPPORT_RELAY_H
#define KWP_SUPPORT_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct relay;

/* Starts a relay to <upstream_url> ("http://127.0.0.1:PORT"). Returns a new relay the
 * caller owns (relay_free); asserts on failure. */
struct relay *relay_new(const char *upstream_url);

/* "http://127.0.0.1:PORT" of the relay itself: give it to the client. Lent until relay_free. */
const char *relay_url(const struct relay *r);

/* <on>: stop reading from the upstream (its bytes stay in flight) on every connection; once
 * this returns nothing more is passed to the client. Off: pass them again. */
void relay_hold(struct relay *r, bool on);

/* <on>: as relay_hold, but only for the connections open now (a stuck upstream watch):
 * connections made later are relayed. Off: pass them all again. */
void relay_hold_open(struct relay *r, bool on);

/* <on>: reset every new connection at once (the upstream seems gone); off: relay them. */
void relay_refuse(struct relay *r, bool on);

/* Resets every open connection (whatever is in flight is lost), then stops holding. New
 * connections are relayed as before (unless refused). */
void relay_cut(struct relay *r);

/* Sends everything to <upstream_url> from now on (open connections stay where they are). */
void relay_retarget(struct relay *r, const char *upstream_url);

/* <ms> > 0: every read from the upstream is passed on <ms> later; 0: at once. */
void relay_latency(struct relay *r, int ms);

/* What a request is, in HTTP mode. */
enum relay_kind { RELAY_LIST = 0, RELAY_WATCH, RELAY_OTHER, RELAY_ANY };

/* HTTP mode on or off (set it before the client's first connection). */
void relay_http(struct relay *r, bool on);

/* Answers every request of <kind> (RELAY_ANY: all) itself with <status> (401, 429, 500, 503)
 * and a kube Status body, plus "Retry-After: <retry_after_s>" when that is >= 0; <status> 0:
 * forward them again. One rule per kind; RELAY_ANY is looked at first. */
void relay_answer(struct relay *r, enum relay_kind kind, int status, int retry_after_s);

/* <on>: requests of <kind> are read and never answered (the connection stays open). */
void relay_blackhole(struct relay *r, enum relay_kind kind, bool on);

/* The forwarded WATCH stream that next receives data (the open one, or the next) is reset
 * after exactly <k> more bytes of body (once). */
void relay_cut_after(struct relay *r, size_t k);

/* The forwarded WATCH stream that next receives data gets <n> bytes of <data> (copied) as
 * one chunk of its own, at the first chunk boundary at a line end after <after_lines> more
 * complete lines of body (once). */
void relay_inject(struct relay *r, const char *data, size_t n, unsigned after_lines);

/* One-shot faults (relay_cut_after, relay_inject) done so far; *<midline> (if not NULL) tells
 * whether the last cut left a partial line. */
unsigned relay_fired(struct relay *r, bool *midline);

/* Copies the arrival times (http_now_ms clock) of the requests of <kind> seen so far, oldest
 * first, into <ms> (at most <cap>); returns how many there were. */
size_t relay_requests(struct relay *r, enum relay_kind kind, uint64_t *ms, size_t cap);

/* Stops accepting, ends every pair (asserting all pair threads ended within 5 s), frees <r>. */
void relay_free(struct relay *r);

#endif
