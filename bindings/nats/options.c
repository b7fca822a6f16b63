/* options.c — the options object of uf_nats_node_new (uniflow_nats.h). Every
 * key is checked; an unknown one or a bad value is UF_EINVAL naming it. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"

static bool is_name(const char *s) {
    size_t len = strlen(s);
    if (len == 0 || len > UFN_NAME_MAX) return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
    }
    return true;
}

/* An integer option within [min, max]. */
static int integer(json_t *value, const char *key, int64_t min, int64_t max, int64_t *out) {
    if (!json_is_integer(value) || json_integer_value(value) < min || json_integer_value(value) > max)
        return ufn_fail(UF_EINVAL, "uf_nats_node_new: option \"%s\" must be an integer from %lld to %lld",
                        key, (long long)min, (long long)max);
    *out = json_integer_value(value);
    return UF_OK;
}

static int parse_owns(ufn_options *o, json_t *value) {
    if (json_is_string(value) && strcmp(json_string_value(value), "any") == 0) { o->owns = UFN_OWNS_ANY; return UF_OK; }
    if (json_is_string(value) && strcmp(json_string_value(value), "none") == 0) { o->owns = UFN_OWNS_NONE; return UF_OK; }
    if (!json_is_array(value))
        return ufn_fail(UF_EINVAL, "uf_nats_node_new: option \"owns\" must be \"any\", \"none\" or an array of partition numbers and \"global\"");
    size_t count = json_array_size(value);
    o->owns = UFN_OWNS_LIST;
    o->owns_list = calloc(count ? count : 1, sizeof *o->owns_list);
    if (!o->owns_list) return ufn_fail(UF_ENOMEM, "uf_nats_node_new: out of memory");
    for (size_t i = 0; i < count; i++) {
        json_t *item = json_array_get(value, i);
        if (json_is_string(item) && strcmp(json_string_value(item), "global") == 0) {
            o->owns_list[i] = -1;
        } else if (json_is_integer(item) && json_integer_value(item) >= 0 && json_integer_value(item) <= 1024) {
            o->owns_list[i] = json_integer_value(item);
        } else {
            return ufn_fail(UF_EINVAL, "uf_nats_node_new: owns[%zu] must be a partition number (0-1024) or \"global\"", i);
        }
        o->owns_count = (int)i + 1;
    }
    return UF_OK;
}

int ufn_options_parse(ufn_options *o, const char *text) {
    memset(o, 0, sizeof *o);
    o->owns = UFN_OWNS_ANY;
    o->max_owned = -1;
    o->lease_ms = 3000;
    o->timeout_ms = 2000;
    o->replicas = 1;
    o->snapshot_every = 1000;
    const char *url = "nats://127.0.0.1:4222";
    json_t *root = NULL;
    int rc = UF_OK;
    if (text) {
        json_error_t error;
        root = json_loads(text, JSON_REJECT_DUPLICATES, &error);
        if (!root)
            return ufn_fail(UF_EJSON, "uf_nats_node_new: options: %s (line %d, column %d)", error.text, error.line, error.column);
        if (!json_is_object(root)) {
            json_decref(root);
            return ufn_fail(UF_EINVAL, "uf_nats_node_new: options must be a JSON object");
        }
    }
    bool has_model = false;
    const char *key;
    json_t *value;
    json_object_foreach(root, key, value) {
        if (strcmp(key, "url") == 0) {
            if (!json_is_string(value) || !*json_string_value(value)) {
                rc = ufn_fail(UF_EINVAL, "uf_nats_node_new: option \"url\" must be a non-empty string");
                break;
            }
            url = json_string_value(value);
        } else if (strcmp(key, "model") == 0) {
            if (!json_is_string(value) || !is_name(json_string_value(value))) {
                rc = ufn_fail(UF_EINVAL, "uf_nats_node_new: option \"model\" must be a name ([A-Za-z_][A-Za-z0-9_]*, at most %d bytes)", UFN_NAME_MAX);
                break;
            }
            strcpy(o->model, json_string_value(value));
            has_model = true;
        } else if (strcmp(key, "owns") == 0) {
            rc = parse_owns(o, value);
        } else if (strcmp(key, "max_owned") == 0) {
            rc = integer(value, key, 0, 1025, &o->max_owned);
        } else if (strcmp(key, "lease_ms") == 0) {
            rc = integer(value, key, 300, 3600000, &o->lease_ms);
        } else if (strcmp(key, "timeout_ms") == 0) {
            rc = integer(value, key, 50, 600000, &o->timeout_ms);
        } else if (strcmp(key, "replicas") == 0) {
            rc = integer(value, key, 1, 5, &o->replicas);
        } else if (strcmp(key, "snapshot_every") == 0) {
            rc = integer(value, key, 0, INT64_C(1000000000), &o->snapshot_every);
        } else {
            rc = ufn_fail(UF_EINVAL, "uf_nats_node_new: unknown option \"%s\"", key);
        }
        if (rc != UF_OK) break;
    }
    if (rc == UF_OK && !has_model)
        rc = ufn_fail(UF_EINVAL, "uf_nats_node_new: option \"model\" is required (the stream is UF_<model>)");
    if (rc == UF_OK) {
        o->url = strdup(url);
        if (!o->url) rc = ufn_fail(UF_ENOMEM, "uf_nats_node_new: out of memory");
    }
    json_decref(root);
    if (rc != UF_OK) ufn_options_free(o);
    return rc;
}

void ufn_options_free(ufn_options *o) {
    free(o->url);
    free(o->owns_list);
    o->url = NULL;
    o->owns_list = NULL;
}

bool ufn_options_wants(const ufn_options *o, uint32_t p, uint32_t global) {
    switch (o->owns) {
    case UFN_OWNS_ANY: return true;
    case UFN_OWNS_NONE: return false;
    case UFN_OWNS_LIST:
        for (int i = 0; i < o->owns_count; i++) {
            int64_t want = o->owns_list[i] < 0 ? (int64_t)global : o->owns_list[i];
            if (want == (int64_t)p) return true;
        }
        return false;
    }
    return false;
}
