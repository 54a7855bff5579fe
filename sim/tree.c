/*
 * tree.c - cJSON member helpers and the seed hash shared by the simulator's object rooms
 * (see tree.h). Pure functions: any thread, no locks, no I/O except the one line printed
 * before an out-of-memory abort.
 */
#include "sim/tree.h"

#include <stdio.h>
#include <stdlib.h>

cJSON *tree_must(cJSON *item)
{
    /* cJSON allocates with malloc; like xmalloc, running out of memory is fatal (STYLE OOM). */
    if (item == NULL) {
        fputs("objects: out of memory building a cJSON tree\n", stderr);
        abort();
    }
    return item;
}

cJSON *tree_set(cJSON *obj, const char *key, cJSON *item)
{
    cJSON *old = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (old != NULL) {
        /* (ReplaceItemViaPointer would leave item without its key.) */
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item);
    } else {
        cJSON_AddItemToObject(obj, key, item);
    }
    return item;
}

void tree_set_str(cJSON *obj, const char *key, const char *s)
{
    tree_set(obj, key, tree_must(cJSON_CreateString(s)));
}

void tree_set_num(cJSON *obj, const char *key, double v)
{
    tree_set(obj, key, tree_must(cJSON_CreateNumber(v)));
}

cJSON *tree_child_obj(cJSON *obj, const char *key)
{
    cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (cJSON_IsObject(c)) {
        return c;
    }
    return tree_set(obj, key, tree_must(cJSON_CreateObject()));
}

const char *tree_str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(v) ? v->valuestring : "";
}

void tree_add_str(cJSON *obj, const char *key, const char *s)
{
    cJSON_AddItemToObject(obj, key, tree_must(cJSON_CreateString(s)));
}

void tree_add_num(cJSON *obj, const char *key, double v)
{
    cJSON_AddItemToObject(obj, key, tree_must(cJSON_CreateNumber(v)));
}

cJSON *tree_add_obj(cJSON *obj, const char *key)
{
    cJSON *c = tree_must(cJSON_CreateObject());

    cJSON_AddItemToObject(obj, key, c);
    return c;
}

cJSON *tree_add_arr(cJSON *obj, const char *key)
{
    cJSON *c = tree_must(cJSON_CreateArray());

    cJSON_AddItemToObject(obj, key, c);
    return c;
}

cJSON *tree_push_obj(cJSON *arr)
{
    cJSON *c = tree_must(cJSON_CreateObject());

    cJSON_AddItemToArray(arr, c);
    return c;
}

bool tree_is_set(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return v != NULL && !cJSON_IsNull(v) && !(cJSON_IsString(v) && v->valuestring[0] == '\0');
}

cJSON *tree_obj_at(cJSON *obj, const char *key)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsObject(v) ? v : NULL;
}

uint64_t tree_hash_str(uint64_t h, const char *s)
{
    for (; s != NULL && *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    }
    return (h ^ 0xff) * 0x100000001b3ULL;
}

uint64_t tree_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
