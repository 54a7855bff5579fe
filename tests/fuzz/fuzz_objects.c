/*
 * fuzz_objects.c - sim/objects.c, what `kwp sim` does with a client's write body (POST, PUT,
 * PATCH merge and strategic merge).
 *
 * Input: byte 0 picks the resource (a built-in namespaced, cluster-scoped, generation-less or
 * Secret kind, or a custom one), whether the URL names the object and the request's namespace;
 * the rest is "BODY[\0PATCH]": BODY is decoded as sim.c does (one JSON object and blanks;
 * anything else is its 400, so it is skipped), PATCH with cJSON. Checked:
 *  - objects_prepare_create: 0, -EINVAL, -EDOM or -EIO; a failure leaves a non-empty message
 *    terminated inside the buffer (a 1-byte buffer or none changes nothing else); a success
 *    has kind and apiVersion first, no repeated key at any level, metadata.name non-empty
 *    (generated names end in 5 characters of kube's alphabet), uid, creationTimestamp and
 *    resourceVersion as given, no deletion fields, no namespace on cluster-scoped kinds, no
 *    stringData on a Secret, generation 1 exactly when the kind keeps one and has a spec, and
 *    it prints to JSON that parses and prints back the same;
 *  - objects_merge_patch of PATCH onto the created object: -EINVAL unless both are objects;
 *    otherwise every member the patch sets (last occurrence of a key) is in the result, every
 *    null it sends is gone, and applying the patch again changes nothing (RFC 7386 is
 *    idempotent);
 *  - objects_prepare_update of the patched copy (or of BODY again) over the created object:
 *    0, -EINVAL or -EBUSY with a message; a success has no repeated key, keeps the stored uid
 *    and creationTimestamp, sets the new resourceVersion, and moves generation by 0 or 1;
 *  - gen_mutate on the result: 0 and still printable.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "sim/gen.h"
#include "sim/objects.h"
#include "tests/fuzz/fuzz.h"

#define UID "6a0fe1b4-0000-4000-8000-00000000c0de"
#define CREATED "2025-01-02T03:04:05Z"
#define GEN_ALPHABET "bcdfghjklmnpqrstvwxz2456789"

static const char *const resources[] = {"pods",        "secrets", "namespaces", "services",
                                        "deployments", "nodes",   "configmaps", "widgets"};

static const char *str_at(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The last member named <key> (the one a Go decoder keeps), or NULL. */
static const cJSON *last_item(const cJSON *obj, const char *key)
{
    const cJSON *found = NULL;

    for (const cJSON *c = cJSON_IsObject(obj) ? obj->child : NULL; c != NULL; c = c->next) {
        if (strcmp(c->string, key) == 0) {
            found = c;
        }
    }
    return found;
}

/* A failure's message: terminated inside the buffer, not empty (a success writes none). */
static void check_err(int rc, const char *err, size_t cap)
{
    CHECK(rc == 0 || (memchr(err, '\0', cap) != NULL && err[0] != '\0'));
}

/* cJSON keeps an overflowing number (1e400) as infinity and prints it as null. */
static bool has_nonfinite(const cJSON *v)
{
    if (cJSON_IsNumber(v)) {
        return !isfinite(v->valuedouble);
    }
    for (const cJSON *c = v->child; c != NULL; c = c->next) {
        if (has_nonfinite(c)) {
            return true;
        }
    }
    return false;
}

/* Prints <obj> (caller frees). */
static char *print(const cJSON *obj)
{
    char *s = cJSON_PrintUnformatted(obj);

    CHECK(s != NULL);
    return s;
}

/* No object anywhere in <v> has two members of one name (quadratic: inputs are small). */
static void check_unique_keys(const cJSON *v)
{
    for (const cJSON *c = v->child; c != NULL; c = c->next) {
        if (cJSON_IsObject(v)) {
            for (const cJSON *d = c->next; d != NULL; d = d->next) {
                CHECK(strcmp(c->string, d->string) != 0);
            }
        }
        check_unique_keys(c);
    }
}

static void check_printable(const cJSON *obj)
{
    char *s = print(obj), *s2;
    cJSON *back = cJSON_Parse(s);

    CHECK(back != NULL);
    if (!has_nonfinite(obj)) {
        s2 = print(back);
        CHECK(strcmp(s, s2) == 0);
        free(s2);
    }
    cJSON_Delete(back);
    free(s);
}

static void check_created(const cJSON *obj, const char *resource, const char *body_name)
{
    const struct apires_kind *t = objects_type(resource);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *gen = cJSON_GetObjectItemCaseSensitive(meta, "generation");
    const char *name = str_at(meta, "name");
    const char *kind = str_at(obj, "kind");

    CHECK(obj->child != NULL && strcmp(obj->child->string, "kind") == 0);
    CHECK(obj->child->next != NULL && strcmp(obj->child->next->string, "apiVersion") == 0);
    CHECK(kind != NULL && (t == NULL || strcmp(kind, t->kind) == 0));
    CHECK(cJSON_IsObject(meta));
    check_unique_keys(obj);
    CHECK(name != NULL && name[0] != '\0');
    if (body_name == NULL || body_name[0] == '\0') {
        size_t n = strlen(name);

        CHECK(n >= 5 && strspn(name + n - 5, GEN_ALPHABET) == 5);
    }
    CHECK(strcmp(str_at(meta, "uid"), UID) == 0);
    CHECK(strcmp(str_at(meta, "creationTimestamp"), CREATED) == 0);
    CHECK(strcmp(str_at(meta, "resourceVersion"), "42") == 0);
    CHECK(cJSON_GetObjectItemCaseSensitive(meta, "deletionTimestamp") == NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(meta, "deletionGracePeriodSeconds") == NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(meta, "selfLink") == NULL);
    if (t != NULL && !t->namespaced) {
        CHECK(cJSON_GetObjectItemCaseSensitive(meta, "namespace") == NULL);
    }
    if (strcmp(kind, "Secret") == 0) {
        CHECK(cJSON_GetObjectItemCaseSensitive(obj, "stringData") == NULL);
    }
    if (cJSON_GetObjectItemCaseSensitive(obj, "spec") != NULL && strcmp(kind, "Namespace") != 0 &&
        strcmp(kind, "Node") != 0 && strcmp(kind, "Service") != 0) {
        CHECK(cJSON_IsNumber(gen) && gen->valuedouble == 1);
    } else {
        CHECK(gen == NULL);
    }
    check_printable(obj);
}

/* The patch's last occurrence of each key decides; an earlier duplicate is overridden. */
static bool last_of_key(const cJSON *p)
{
    for (const cJSON *q = p->next; q != NULL; q = q->next) {
        if (strcmp(q->string, p->string) == 0) {
            return false;
        }
    }
    return true;
}

static void check_merged(const cJSON *target, const cJSON *patch)
{
    for (const cJSON *p = patch->child; p != NULL; p = p->next) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(target, p->string);

        if (!last_of_key(p)) {
            continue;
        }
        if (cJSON_IsNull(p)) {
            CHECK(t == NULL);
        } else if (cJSON_IsObject(p)) {
            CHECK(cJSON_IsObject(t));
            check_merged(t, p);
        } else {
            char *a, *b;

            CHECK(t != NULL);
            a = print(t);
            b = print(p);
            CHECK(strcmp(a, b) == 0);
            free(a);
            free(b);
        }
    }
}

static void check_update(const cJSON *stored, const cJSON *body, const char *resource,
                         const char *ns)
{
    const cJSON *old_meta = cJSON_GetObjectItemCaseSensitive(stored, "metadata");
    const cJSON *old_gen = cJSON_GetObjectItemCaseSensitive(old_meta, "generation");
    cJSON *upd = cJSON_Duplicate(body, true);
    const cJSON *meta, *gen;
    char err[256];
    int rc;

    memset(err, 'X', sizeof(err));
    rc = objects_prepare_update(upd, stored, resource, ns, NULL, 43, err, sizeof(err));
    CHECK(rc == 0 || rc == -EINVAL || rc == -EBUSY);
    check_err(rc, err, sizeof(err));
    if (rc == 0) {
        meta = cJSON_GetObjectItemCaseSensitive(upd, "metadata");
        gen = cJSON_GetObjectItemCaseSensitive(meta, "generation");
        CHECK(strcmp(str_at(meta, "uid"), UID) == 0);
        CHECK(strcmp(str_at(meta, "creationTimestamp"), CREATED) == 0);
        CHECK(strcmp(str_at(meta, "resourceVersion"), "43") == 0);
        CHECK(strcmp(str_at(meta, "name"), str_at(old_meta, "name")) == 0);
        check_unique_keys(upd);
        if (cJSON_IsNumber(old_gen)) {
            CHECK(cJSON_IsNumber(gen) && (gen->valuedouble == old_gen->valuedouble ||
                                          gen->valuedouble == old_gen->valuedouble + 1));
        } else {
            CHECK(gen == NULL);
        }
        check_printable(upd);
        CHECK(gen_mutate(upd, 7) == 0);
        CHECK(gen_mutate(upd, 8) == 0);
        check_printable(upd);
    }
    cJSON_Delete(upd);
}

/* sim.c's decode_body: one JSON object, nothing but blanks after it; NULL otherwise. */
static cJSON *parse_body(const char *body, size_t len)
{
    const char *end = NULL;
    cJSON *obj = cJSON_ParseWithLengthOpts(body, len, &end, 0);

    while (obj != NULL && end != NULL && end < body + len && strchr(" \n\r\t", *end) != NULL &&
           *end != '\0') {
        end++;
    }
    if (obj != NULL && (!cJSON_IsObject(obj) || (end != NULL && end != body + len))) {
        cJSON_Delete(obj);
        obj = NULL;
    }
    return obj;
}

static void run(uint8_t sel, const char *body, size_t blen, const char *patch, size_t plen)
{
    const char *resource = resources[sel & 7];
    const char *ns = sel & 8 ? "ns1" : NULL;
    cJSON *obj = parse_body(body, blen);
    cJSON *p = patch != NULL ? cJSON_ParseWithLength(patch, plen) : NULL;
    const char *url_name = NULL;
    char body_name[256] = "";
    char err[256], tiny[1];
    int rc;

    if (obj == NULL) {
        cJSON_Delete(p);
        return;
    }
    if (cJSON_IsString(last_item(last_item(obj, "metadata"), "name"))) {
        snprintf(body_name, sizeof(body_name), "%s",
                 last_item(last_item(obj, "metadata"), "name")->valuestring);
    }
    if (sel & 16) {
        url_name = sel & 32 ? "n1" : body_name;
    }
    {
        cJSON *a = cJSON_Duplicate(obj, true), *b = cJSON_Duplicate(obj, true);
        char *sa, *sb;

        tiny[0] = 'X';
        rc = objects_prepare_create(a, resource, ns, url_name, 42, UID, CREATED, tiny, 1);
        CHECK(rc == 0 || tiny[0] == '\0'); /* a 1-byte buffer holds just the NUL */
        CHECK(objects_prepare_create(b, resource, ns, url_name, 42, UID, CREATED, NULL, 0) == rc);
        sa = print(a);
        sb = print(b);
        CHECK(strcmp(sa, sb) == 0); /* the message buffer changes nothing else */
        free(sa);
        free(sb);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    memset(err, 'X', sizeof(err));
    rc = objects_prepare_create(obj, resource, ns, url_name, 42, UID, CREATED, err, sizeof(err));
    CHECK(rc == 0 || rc == -EINVAL || rc == -EDOM || rc == -EIO);
    check_err(rc, err, sizeof(err));
    if (rc != 0) {
        cJSON_Delete(obj);
        cJSON_Delete(p);
        return;
    }
    check_created(obj, resource, body_name);
    if (p != NULL) {
        cJSON *patched = cJSON_Duplicate(obj, true), *twice;
        char *s1, *s2;

        rc = objects_merge_patch(patched, p);
        CHECK(rc == (cJSON_IsObject(p) ? 0 : -EINVAL));
        if (rc == 0) {
            check_merged(patched, p);
            twice = cJSON_Duplicate(patched, true);
            CHECK(objects_merge_patch(twice, p) == 0);
            s1 = print(patched);
            s2 = print(twice);
            CHECK(strcmp(s1, s2) == 0);
            free(s1);
            free(s2);
            cJSON_Delete(twice);
            check_update(obj, patched, resource, ns);
        }
        cJSON_Delete(patched);
    } else {
        cJSON *again = parse_body(body, blen);

        check_update(obj, again, resource, ns);
        cJSON_Delete(again);
    }
    cJSON_Delete(obj);
    cJSON_Delete(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *d;
    const char *nul;

    if (size < 1) {
        return 0;
    }
    /* An exact-size copy of the text after the selector byte. */
    d = malloc(size - 1 ? size - 1 : 1);
    memcpy(d, data + 1, size - 1);
    nul = memchr(d, '\0', size - 1);
    if (nul != NULL) {
        run(data[0], d, (size_t)(nul - d), nul + 1, size - 1 - (size_t)(nul - d) - 1);
    } else {
        run(data[0], d, size - 1, NULL, 0);
    }
    free(d);
    return 0;
}
