/*
 * run_services.c — statechart services under `uniflow run` (docs/cli.md).
 *
 * A command line has no service code: each service a definition invokes gets a
 * placeholder that only remembers what runs, so that an actions file can settle
 * an invocation by its feature, key and id (`uniflow paths` prints such lines
 * for states that only a service's result enters). The tool runs one dispatcher
 * at a time, on its main thread (a manual clock fires timers there too), so the
 * list of what runs is the program's own.
 */
#define _POSIX_C_SOURCE 200809L

#include "run_services.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct invocation {
    uint64_t serial;
    char *feature;
    char *key; /* NULL for a single feature */
    char *id;
} invocation;

static invocation *running;
static size_t running_count, running_capacity;

static int placeholder_start(const uf_invocation *inv, void *payload) {
    (void)payload;
    if (running_count == running_capacity) {
        size_t capacity = running_capacity ? 2 * running_capacity : 16;
        invocation *grown = realloc(running, sizeof(invocation) * capacity);
        if (grown == NULL) return -1; /* settles it as an error: better than lost */
        running = grown;
        running_capacity = capacity;
    }
    const char *key = uf_invocation_key(inv);
    running[running_count++] = (invocation){uf_invocation_serial(inv), strdup(uf_invocation_feature(inv)),
                                            key ? strdup(key) : NULL, strdup(uf_invocation_id(inv))};
    return 0;
}

static void forget(size_t i) {
    free(running[i].feature);
    free(running[i].key);
    free(running[i].id);
    running[i] = running[--running_count];
}

static int placeholder_stop(const uf_invocation *inv, void *payload) {
    (void)payload;
    for (size_t i = 0; i < running_count; i++) {
        if (running[i].serial == uf_invocation_serial(inv)) {
            forget(i);
            break;
        }
    }
    return 0;
}

int register_placeholder_service(uf_dispatcher *d, const char *name) {
    return uf_register_service(d, name, placeholder_start, placeholder_stop, NULL, NULL);
}

int is_settle_line(json_t *value) {
    return json_is_object(value) && json_object_get(value, "kind") == NULL
           && (json_object_get(value, "service_done") != NULL || json_object_get(value, "service_error") != NULL);
}

int settle_service(uf_dispatcher *d, json_t *value, const char **problem) {
    static char message[600];
    int done = json_object_get(value, "service_done") != NULL;
    const char *verb = done ? "service_done" : "service_error";
    const char *result_key = done ? "output" : "error";
    const char *id = json_string_value(json_object_get(value, verb));
    const char *feature = json_string_value(json_object_get(value, "feature"));
    json_t *key_value = json_object_get(value, "key");
    const char *key = json_string_value(key_value);
    const char *member;
    json_t *item;
    json_object_foreach(value, member, item) {
        if (strcmp(member, verb) != 0 && strcmp(member, "feature") != 0 && strcmp(member, "key") != 0
            && strcmp(member, result_key) != 0) {
            snprintf(message, sizeof message, "%s: unknown member '%.256s'", verb, member);
            *problem = message;
            return UF_ESCHEMA;
        }
    }
    if (id == NULL || feature == NULL || (key_value != NULL && key == NULL)) {
        snprintf(message, sizeof message, "%s: expected an invocation id, a feature and (for a keyed feature) a key, as strings", verb);
        *problem = message;
        return UF_ESCHEMA;
    }
    /* The newest: a state left and entered again runs a new invocation. */
    for (size_t i = running_count; i-- > 0;) {
        const invocation *r = &running[i];
        if (strcmp(r->id, id) != 0 || strcmp(r->feature, feature) != 0) continue;
        if ((r->key == NULL) != (key == NULL) || (key != NULL && strcmp(r->key, key) != 0)) continue;
        json_t *result = json_object_get(value, result_key);
        char *text = result ? json_dumps(result, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        uint64_t serial = r->serial;
        int status = done ? uf_service_done(d, serial, text) : uf_service_error(d, serial, text);
        free(text);
        /* Settled: it runs no more (its stop is not called). Found again, as
         * what the result started may have grown the list. */
        for (size_t j = 0; j < running_count; j++) {
            if (running[j].serial == serial) {
                forget(j);
                break;
            }
        }
        return status;
    }
    snprintf(message, sizeof message, "%s: no invocation '%.200s' of %.200s%s%.100s%s is running", verb, id, feature,
             key ? "[" : "", key ? key : "", key ? "]" : "");
    *problem = message;
    return UF_ESCHEMA;
}
