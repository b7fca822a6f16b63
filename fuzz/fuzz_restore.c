/*
 * fuzz_restore.c — uf_state_restore with arbitrary models, against the fixed
 * definitions.
 *
 * Every input starts from the same model (BASE, restored first). Invariants: a
 * failed restore changes nothing; a successful one is exact and idempotent
 * (uf_state_get -> uf_state_restore -> uf_state_get gives the same bytes); the
 * restored model then accepts actions (the fixed script below runs, each with a
 * known status, and the restored features' model bindings are active), and
 * uf_state_get stays valid JSON throughout.
 */
#include "fuzz_common.h"

static const char base[] =
    "{\"FileDownloading\":{\"state\":\"InProgress\",\"payload\":{\"progress\":10}},"
    "\"Main\":{\"state\":\"Main\",\"payload\":{\"val\":7}}}";

static const char *const after_restore[] = {
    "{\"kind\":\"actualize\",\"feature\":\"FileDownloading\",\"in\":\"InProgress\",\"payload\":{\"progress\":100}}",
    "{\"kind\":\"initialize\",\"feature\":\"Stats\",\"into\":\"Counting\"}",
    "{\"kind\":\"transition\",\"feature\":\"Ping\",\"into\":\"A\"}",
    "{\"kind\":\"deinitialize\",\"feature\":\"Login\"}",
    ("{\"kind\":\"trigger\",\"feature\":\"Search\",\"initialized\":false,\"submit\":"
     "[{\"kind\":\"initialize\",\"feature\":\"Search\",\"into\":\"Ready\"}]}"),
    "{\"kind\":\"transition\",\"feature\":\"Gate\",\"into\":\"Open\",\"same\":true}",
    "{\"kind\":\"actualize\",\"feature\":\"Main\",\"in\":\"Main\",\"payload\":{\"val\":8}}",
};

static uf_dispatcher *dispatcher;
static char *base_text;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!dispatcher) {
        dispatcher = fuzz_fixed_dispatcher("{\"max_cascade\": 50}");
        FUZZ_ASSERT(uf_state_restore(dispatcher, base) == UF_OK, "the base model: %s", uf_last_error());
        base_text = fuzz_state(dispatcher);
    }
    FUZZ_ASSERT(uf_state_restore(dispatcher, base) == UF_OK, "the base model: %s", uf_last_error());
    char *model = fuzz_cstring(data, size);

    int status = uf_state_restore(dispatcher, model);
    fuzz_check_status("uf_state_restore", status);
    FUZZ_ASSERT(status != UF_QUEUED, "UF_QUEUED outside a callback");
    char *after = fuzz_state(dispatcher);
    if (status != UF_OK) {
        FUZZ_ASSERT(strcmp(after, base_text) == 0, "a failed restore changed the model to %s", after);
    } else {
        FUZZ_ASSERT(uf_state_restore(dispatcher, after) == UF_OK, "uf_state_get output does not restore: %s",
                    uf_last_error());
        char *again = fuzz_state(dispatcher);
        FUZZ_ASSERT(strcmp(after, again) == 0, "restore is not exact:\n%s\n%s", after, again);
        uf_free(again);
        for (size_t i = 0; i < sizeof after_restore / sizeof after_restore[0]; ++i) {
            int submitted = uf_submit(dispatcher, after_restore[i]);
            fuzz_check_status("uf_submit", submitted);
            FUZZ_ASSERT(submitted == UF_OK || submitted == UF_REJECTED, "%s gave %s", after_restore[i],
                        uf_status_name(submitted));
            uf_free(fuzz_state(dispatcher));
        }
    }
    uf_free(after);
    free(model);
    return 0;
}
