/*
 * relay.h - a TCP relay in the test process between a client under test (kwp proxy) and its
 * upstream (kwp sim), for faults that need no hook in kwp: hold the upstream->client bytes
 * (events in flight), cut every open connection (a broken upstream stream), reset new ones
 * (an upstream that went away).
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

/* Stops accepting, ends every pair (asserting all pair threads ended within 5 s), frees <r>. */
void relay_free(struct relay *r);

#endif
