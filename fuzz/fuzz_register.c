/*
 * fuzz_register.c — uf_register with arbitrary definition text.
 *
 * Invariants checked beyond "no crash, no leak":
 *   - the status is a known code and a failure leaves a message; an UF_ESCHEMA
 *     message names the path of the element and starts at "features[";
 *   - all or nothing: a failed registration leaves uf_definitions_get unchanged;
 *   - definitions that registered come back from uf_definitions_get as valid JSON
 *     that registers again on a fresh dispatcher, and give the same text there
 *     (round trip), and a second uf_register of them is UF_EEXISTS;
 *   - uf_graph_dot draws them.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_cstring(data, size);
    /* A fresh dispatcher per input keeps every finding reproducible on its own;
     * the handlers are what {"call": ...} may name. A small cascade limit: a
     * binding cycle (legal) would otherwise run 100,000 actions per input. */
    uf_dispatcher *d = fuzz_new_dispatcher("{\"max_cascade\": 50}");
    fuzz_register_handlers(d);

    char *before = NULL;
    FUZZ_ASSERT(uf_definitions_get(d, &before) == UF_OK, "uf_definitions_get");

    int status = uf_register(d, text);
    fuzz_check_status("uf_register", status);
    FUZZ_ASSERT(status != UF_QUEUED, "uf_register returned UF_QUEUED outside a callback");

    char *after = NULL;
    FUZZ_ASSERT(uf_definitions_get(d, &after) == UF_OK, "uf_definitions_get");
    json_decref(fuzz_parse_json("uf_definitions_get", after));

    if (status != UF_OK) {
        FUZZ_ASSERT(strcmp(before, after) == 0, "a failed uf_register changed the definitions: %s",
                    after);
        if (status == UF_ESCHEMA) {
            const char *message = uf_last_error();
            /* The path always starts at features[i] (docs/definitions.md); only a
             * top-level value of the wrong kind ("definitions must be an object ...")
             * has none. */
            FUZZ_ASSERT(strncmp(message, "features", 8) == 0 || strncmp(message, "definitions", 11) == 0,
                        "UF_ESCHEMA message without a path: %s", message);
        }
    } else {
        /* Round trip through uf_definitions_get. */
        uf_dispatcher *copy = fuzz_new_dispatcher(NULL);
        fuzz_register_handlers(copy);
        int again = uf_register(copy, after);
        FUZZ_ASSERT(again == UF_OK, "uf_definitions_get output does not register again (%s): %s",
                    uf_last_error(), after);
        char *copied = NULL;
        FUZZ_ASSERT(uf_definitions_get(copy, &copied) == UF_OK, "uf_definitions_get");
        FUZZ_ASSERT(strcmp(copied, after) == 0, "definitions differ after a round trip:\n%s\n%s",
                    after, copied);
        uf_free(copied);
        uf_dispatcher_free(copy);

        if (strcmp(after, before) != 0) {
            int twice = uf_register(d, text);
            fuzz_check_status("uf_register (twice)", twice);
            FUZZ_ASSERT(twice == UF_EEXISTS, "registering the same definitions twice gave %s",
                        uf_status_name(twice));
        }

        char *dot = NULL;
        int drawn = uf_graph_dot(d, NULL, &dot);
        fuzz_check_status("uf_graph_dot", drawn);
        FUZZ_ASSERT(drawn == UF_OK && dot && strncmp(dot, "digraph", 7) == 0, "uf_graph_dot: %s",
                    dot ? dot : "(NULL)");
        uf_free(dot);

        /* Reach the model through what registered: every feature's first state. */
        json_t *defs = fuzz_parse_json("uf_definitions_get", after);
        json_t *features = json_object_get(defs, "features");
        size_t i;
        json_t *feature;
        json_array_foreach(features, i, feature) {
            const char *name = json_string_value(json_object_get(feature, "feature"));
            json_t *states = json_object_get(feature, "states");
            void *first = json_object_iter(states);
            if (!name || !first) continue;
            uf_action action = UF_ACTION_INIT;
            action.kind = UF_ACTION_INITIALIZE;
            action.feature = name;
            action.into = json_object_iter_key(first);
            fuzz_check_status("uf_dispatch", uf_dispatch(d, &action));
            char *dot_one = NULL;
            fuzz_check_status("uf_graph_dot", uf_graph_dot(d, name, &dot_one));
            uf_free(dot_one);
        }
        json_decref(defs);
        uf_free(fuzz_state(d));
    }

    uf_free(before);
    uf_free(after);
    uf_dispatcher_free(d);
    free(text);
    return 0;
}
