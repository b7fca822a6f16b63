/*
 * fuzz_import.c — `uniflow import xstate`'s converter (tools/uniflow/import_xstate.c,
 * compiled into this target by fuzz/run) with arbitrary machine text: the input is
 * the file's bytes, as the command reads them.
 *
 * Invariants checked beyond "no crash, no leak":
 *   - the status is UNIFLOW_IMPORT_OK with a definition and no error, or
 *     UNIFLOW_IMPORT_REFUSED with a one-line message and no definition (and no
 *     notes); a refusal's line is within the text, and so is each note's, whose
 *     message is one line;
 *   - the same bytes give the same result (the output is deterministic);
 *   - a definition is a JSON object that libuniflow registers (placeholder
 *     handlers for the guards and actions it names and services for what it
 *     invokes, as a host provides them), and the feature initializes into its
 *     initial state (a statechart's `always` may loop: UF_ELOOP is allowed for
 *     it): the converter never prints a definition the library refuses.
 */
#include "fuzz_common.h"
#include "import_xstate.h"

static int placeholder_guard(uf_binding_call *call, void *payload) {
    (void)call;
    (void)payload;
    return 1;
}

static int placeholder_service(const uf_invocation *inv, void *payload) {
    (void)inv;
    (void)payload;
    return 0;
}

/* Registers a placeholder for every handler the definition names (`call`, as a
 * guard, a guard tree or an effect, at any depth of a statechart) and a service
 * for every `src`. */
static void register_handlers(uf_dispatcher *d, json_t *value) {
    size_t i;
    json_t *item;
    if (json_is_array(value)) {
        json_array_foreach(value, i, item) register_handlers(d, item);
        return;
    }
    if (!json_is_object(value)) return;
    const char *key;
    json_object_foreach(value, key, item) {
        int status = UF_OK;
        if (strcmp(key, "call") == 0 && json_is_string(item)) {
            status = uf_register_handler(d, json_string_value(item), placeholder_guard, NULL, NULL);
        } else if (strcmp(key, "src") == 0 && json_is_string(item)) {
            status = uf_register_service(d, json_string_value(item), placeholder_service, NULL, NULL, NULL);
        } else {
            register_handlers(d, item);
        }
        FUZZ_ASSERT(status == UF_OK || status == UF_EEXISTS, "registering '%s' gave %s", json_string_value(item),
                    uf_status_name(status));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    char *definition = NULL, *error = NULL;
    unsigned long line = 0;
    uniflow_import_note *notes = NULL;
    size_t note_count = 0;
    int status = uniflow_import_xstate(text, size, NULL, "fuzz/machine.json", &definition, &error, &line,
                                       &notes, &note_count);

    unsigned long lines = 1;
    for (size_t i = 0; i < size; i++) lines += data[i] == '\n';
    if (status != UNIFLOW_IMPORT_OK) {
        FUZZ_ASSERT(status == UNIFLOW_IMPORT_REFUSED, "unknown status %d", status);
        FUZZ_ASSERT(definition == NULL, "a refusal with a definition");
        FUZZ_ASSERT(notes == NULL && note_count == 0, "a refusal with notes");
        FUZZ_ASSERT(error != NULL && error[0] != '\0', "a refusal without a message");
        FUZZ_ASSERT(strchr(error, '\n') == NULL, "a message over several lines: %s", error);
        FUZZ_ASSERT(line <= lines, "line %lu of a text of %lu lines: %s", line, lines, error);
    } else {
        FUZZ_ASSERT(error == NULL && line == 0, "a definition with an error: %s", error);
        FUZZ_ASSERT(definition != NULL, "success without a definition");
        FUZZ_ASSERT((notes == NULL) == (note_count == 0), "%zu notes at %p", note_count, (void *)notes);
        for (size_t i = 0; i < note_count; i++) {
            const char *note = notes[i].message;
            FUZZ_ASSERT(note != NULL && note[0] != '\0' && strchr(note, '\n') == NULL, "an empty or multi-line note");
            FUZZ_ASSERT(notes[i].line >= 1 && notes[i].line <= lines, "a note on line %lu of a text of %lu lines: %s",
                        notes[i].line, lines, note);
        }
    }

    char *again = NULL, *again_error = NULL;
    unsigned long again_line = 0;
    uniflow_import_note *again_notes = NULL;
    size_t again_note_count = 0;
    int again_status = uniflow_import_xstate(text, size, NULL, "fuzz/machine.json", &again, &again_error,
                                             &again_line, &again_notes, &again_note_count);
    int same_notes = again_note_count == note_count;
    for (size_t i = 0; same_notes && i < note_count; i++) {
        same_notes = again_notes[i].line == notes[i].line && strcmp(again_notes[i].message, notes[i].message) == 0;
    }
    FUZZ_ASSERT(again_status == status && again_line == line && same_notes &&
                    (definition ? again && strcmp(again, definition) == 0 : again == NULL) &&
                    (error ? again_error && strcmp(again_error, error) == 0 : again_error == NULL),
                "the same input converted twice gave different results");
    free(again);
    free(again_error);
    uniflow_import_free_notes(again_notes, again_note_count);
    uniflow_import_free_notes(notes, note_count);

    if (definition != NULL) {
        json_t *parsed = fuzz_parse_json("uniflow_import_xstate", definition);
        FUZZ_ASSERT(json_is_object(parsed), "the definition is not an object: %s", definition);
        uf_dispatcher *d = fuzz_new_dispatcher("{\"timers\": \"host\", \"clock\": \"manual\", \"max_cascade\": 1000}");
        register_handlers(d, parsed);
        int registered = uf_register(d, definition);
        fuzz_check_status("uf_register", registered);
        FUZZ_ASSERT(registered == UF_OK, "the library refuses a converted definition (%s): %s\n%s",
                    uf_status_name(registered), uf_last_error(), definition);

        json_t *action = json_pack("{s:s,s:O,s:O}", "kind", "initialize", "feature",
                                   json_object_get(parsed, "feature"), "into",
                                   json_array_get(json_object_get(parsed, "initial"), 0));
        FUZZ_ASSERT(action != NULL, "json_pack");
        char *action_text = json_dumps(action, 0);
        int initialized = uf_submit(d, action_text);
        fuzz_check_status("uf_submit", initialized);
        FUZZ_ASSERT(initialized == UF_OK || initialized == UF_ELOOP, "the converted feature does not initialize (%s): %s",
                    uf_status_name(initialized), uf_last_error());
        free(action_text);
        json_decref(action);
        json_decref(parsed);
        uf_dispatcher_free(d);
    }
    free(definition);
    free(error);
    return 0;
}
