/*
 * tree.h - the small cJSON helpers the simulator's object code shares (objects.c, defaults.c,
 * alloc.c, gen.c): set, add and look up members of a tree the caller owns, and the string
 * hash every seeded choice (generated names, node ports, generator streams) starts from.
 *
 * Allocation failures abort (STYLE OOM): no helper returns NULL for lack of memory. The
 * helpers are pure functions of their arguments: any thread, no locks. This file may include
 * libc and cJSON only; it knows nothing of kinds, writes or Kubernetes rules.
 */
#ifndef KWP_SIM_TREE_H
#define KWP_SIM_TREE_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

/* The FNV-1a offset basis: the first <h> of a tree_hash_str chain. */
#define TREE_HASH_INIT 0xcbf29ce484222325ULL

/* Returns <item>; aborts with a message when it is NULL (a cJSON constructor that ran out
 * of memory). Wrap every cJSON_Create* and cJSON_Duplicate in it. */
cJSON *tree_must(cJSON *item);

/* Sets obj[key] = item, replacing an existing member (the first of that name); takes
 * ownership of <item> and returns it. */
cJSON *tree_set(cJSON *obj, const char *key, cJSON *item);

/* tree_set of a new string or number. */
void tree_set_str(cJSON *obj, const char *key, const char *s);
void tree_set_num(cJSON *obj, const char *key, double v);

/* The object member <key> of <obj>, created (or replacing a non-object) when needed. Lent. */
cJSON *tree_child_obj(cJSON *obj, const char *key);

/* The string member <key> of <obj>, or "" when absent or not a string (<obj> may be NULL).
 * Lent: valid while the member is. */
const char *tree_str(const cJSON *obj, const char *key);

/* Appends a new member without looking for an existing one (for building fresh objects).
 * The _obj and _arr forms return the new container (lent). */
void tree_add_str(cJSON *obj, const char *key, const char *s);
void tree_add_num(cJSON *obj, const char *key, double v);
cJSON *tree_add_obj(cJSON *obj, const char *key);
cJSON *tree_add_arr(cJSON *obj, const char *key);

/* Appends a new empty object to array <arr> and returns it (lent). */
cJSON *tree_push_obj(cJSON *arr);

/* True when <obj> has member <key> and it is neither null nor "". */
bool tree_is_set(const cJSON *obj, const char *key);

/* The object member <key> of <obj>, NULL when absent or not an object (<obj> may be NULL). */
cJSON *tree_obj_at(cJSON *obj, const char *key);

/* FNV-1a of <s> (NULL hashes as "") continuing from <h>, then a separator, so that
 * ("ab","c") and ("a","bc") differ. Start a chain with TREE_HASH_INIT. */
uint64_t tree_hash_str(uint64_t h, const char *s);

/* splitmix64's finalizer: spreads the bits of <z> (a hash, a counter) over the word. */
uint64_t tree_mix64(uint64_t z);

#endif
