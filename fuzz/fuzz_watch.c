/*
 * fuzz_watch.c — watches over a keyed feature: arbitrary selectors, keys and
 * filters, on a manual clock.
 *
 * The input's first line is a selector (JsonLogic, as uf_watch takes it), the
 * second a filter (uf_subscribe's `when`); every further line is a command:
 *   i<key>          initialize Job[key] into Idle (through uf_action)
 *   s<key> <event>  uf_send(Job, key, event)
 *   a<key> <n>      actualize Job[key] in Busy with {"n": n}
 *   d<key>          deinitialize Job[key]
 *   t<ms>           uf_clock_advance(ms): Idle's state timer expires instances
 *   anything else   uf_submit(line): JSON actions, keys and all
 *
 * Invariants (beyond the sanitizers): known statuses with messages; a watch is
 * never called with the value it had; after every command the direct watch's
 * last value is the selector applied (uf_logic_apply) to {"model": the model};
 * a subscription's filter sees only mutations of its instance when it names one;
 * every payload_free runs exactly once.
 */
#include "fuzz_common.h"

static const char *const jobs =
    "{\"feature\":\"Job\",\"instances\":\"keyed\","
    " \"states\":{\"Idle\":{\"on\":{\"go\":\"Busy\"},"
    "                     \"after\":[{\"ms\":5,\"submit\":[{\"kind\":\"transition\",\"feature\":\"Job\",\"into\":\"Expired\"}]}]},"
    "           \"Busy\":{\"fields\":{\"n\":{\"type\":\"number\",\"default\":0}},\"on\":{\"done\":\"Expired\"}},"
    "           \"Expired\":{}},"
    " \"initial\":[\"Idle\"]}";

typedef struct watcher {
    char *last; /* the value last delivered, NULL before the first */
    int frees;
} watcher;

static int on_value(const uf_watch_event *w, void *payload) {
    watcher *state = payload;
    const char *value = uf_watch_value_json(w);
    json_decref(fuzz_parse_json("uf_watch_value_json", value));
    FUZZ_ASSERT(state->last == NULL || strcmp(state->last, value) != 0, "a watch got the value it had: %.200s", value);
    free(state->last);
    state->last = strdup(value);
    return UF_KEEP;
}

static void free_watcher(void *payload) { ((watcher *)payload)->frees++; }

typedef struct follower {
    const char *key; /* the instance the filter names, or NULL */
    int frees;
} follower;

static int on_mutation(const uf_mutation *m, void *payload) {
    follower *f = payload;
    const char *key = uf_mutation_key(m);
    if (f->key) FUZZ_ASSERT(key && strcmp(key, f->key) == 0, "a filter on [%s] saw [%s]", f->key, key ? key : "");
    return UF_KEEP;
}

static void free_follower(void *payload) { ((follower *)payload)->frees++; }

/* The selector over the model now, as uf_logic_apply gives it (NULL if it fails). */
static char *expected_value(uf_dispatcher *d, const char *selector) {
    char *model = fuzz_state(d);
    size_t size = strlen(model) + 16;
    char *data = malloc(size);
    if (!data) abort();
    snprintf(data, size, "{\"model\":%s}", model);
    char *out = NULL;
    if (uf_logic_apply(selector, data, &out) != UF_OK) out = NULL;
    free(data);
    uf_free(model);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size) {
    char *text = fuzz_cstring(input, size);
    char *selector = text, *filter = strchr(text, '\n'), *script = NULL;
    if (filter) {
        *filter++ = '\0';
        script = strchr(filter, '\n');
        if (script) *script++ = '\0';
    }
    uf_dispatcher *d = fuzz_new_dispatcher("{\"clock\":\"manual\",\"max_cascade\":200}");
    FUZZ_ASSERT(uf_register(d, jobs) == UF_OK, "Job does not register: %s", uf_last_error());

    watcher w = {0};
    int status = uf_watch(d, selector, on_value, &w, free_watcher, NULL);
    fuzz_check_status("uf_watch", status);
    int watching = status == UF_OK;
    if (!watching) FUZZ_ASSERT(w.frees == 1, "a refused uf_watch ran payload_free %d times", w.frees);

    follower f = {0};
    char named[300] = "";
    if (filter) {
        const char *open = strchr(filter, '['), *close = open ? strchr(open, ']') : NULL;
        if (open && close && (size_t)(close - open) < sizeof named) {
            /* Blanks around the key are the grammar's, not the key's: Job[ a ] is Job[a]. */
            const char *first = open + 1, *end = close;
            while (first < end && (*first == ' ' || *first == '\t')) ++first;
            while (end > first && (end[-1] == ' ' || end[-1] == '\t')) --end;
            memcpy(named, first, (size_t)(end - first));
            named[end - first] = '\0';
        }
        status = uf_subscribe(d, filter, on_mutation, &f, free_follower, NULL);
        fuzz_check_status("uf_subscribe", status);
        /* A filter that names an instance (Job[k]) may see only that instance. */
        if (status == UF_OK && named[0] && strstr(filter, "Job[")) f.key = named;
    }

    for (char *line = script; line && *line;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = '\0';
        uf_action a = UF_ACTION_INIT;
        a.feature = "Job";
        a.key = line + 1;
        char *space = strchr(line, ' ');
        char payload[64];
        switch (line[0]) {
        case 'i': a.kind = UF_ACTION_INITIALIZE; a.into = "Idle"; status = uf_dispatch(d, &a); break;
        case 'd': a.kind = UF_ACTION_DEINITIALIZE; status = uf_dispatch(d, &a); break;
        case 's':
            if (space) *space = '\0';
            status = uf_send(d, "Job", line + 1, space ? space + 1 : "go", NULL);
            break;
        case 'a':
            if (space) *space = '\0';
            snprintf(payload, sizeof payload, "{\"n\": %d}", space ? atoi(space + 1) : 0);
            a.kind = UF_ACTION_ACTUALIZE;
            a.into = "Busy";
            a.payload_json = payload;
            status = uf_dispatch(d, &a);
            break;
        case 't': status = uf_clock_advance(d, (uint64_t)strtoul(line + 1, NULL, 10) % 100); break;
        default: status = uf_submit(d, line); break;
        }
        fuzz_check_status("a command", status);
        FUZZ_ASSERT(status != UF_QUEUED, "UF_QUEUED outside a callback");
        if (watching && w.last) {
            char *expected = expected_value(d, selector);
            /* A rule that fails gives null, and is reported. */
            FUZZ_ASSERT(strcmp(w.last, expected ? expected : "null") == 0,
                        "the watch's last value %.200s is not the selector over the model, %.200s", w.last,
                        expected ? expected : "null");
            uf_free(expected);
        }
        line = next;
    }

    uf_dispatcher_free(d);
    if (watching) FUZZ_ASSERT(w.frees == 1, "the watch's payload_free ran %d times", w.frees);
    FUZZ_ASSERT(f.frees <= 1, "a subscription's payload_free ran %d times", f.frees);
    free(w.last);
    free(text);
    return 0;
}
