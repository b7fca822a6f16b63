/*
 * fuzz_replay.c — uf_replay_file with arbitrary journals.
 *
 * The input is a journal's body: the target writes the header line of the
 * definitions below first (a fuzzer cannot guess their fingerprint), then the
 * input, to a file, and replays it into a dispatcher on the manual clock that
 * holds a model and an API timer already. Invariants: a failed replay changes
 * neither the model nor the timers; a successful one leaves a model whose
 * uf_state_get restores exactly and whose uf_snapshot_get restores with
 * uf_snapshot_restore (the replay brought in nothing a snapshot would refuse);
 * then actions and the clock run on it: every timer fires without a crash, and
 * the dispatcher's seq goes on counting.
 */
#include <unistd.h>

#include "fuzz_common.h"

static const char definitions[] =
    "{\"features\": ["
    " {\"feature\":\"Job\",\"instances\":\"keyed\","
    "  \"states\":{\"Idle\":{\"on\":{\"go\":\"Busy\"},"
    "                      \"after\":[{\"ms\":5,\"submit\":[{\"kind\":\"transition\",\"feature\":\"Job\",\"into\":\"Expired\"}]}]},"
    "            \"Busy\":{\"fields\":{\"n\":{\"type\":\"number\",\"default\":0}},\"on\":{\"done\":\"Expired\"},"
    "                      \"after\":[{\"ms\":50,\"reset\":\"update\",\"on_restore\":\"resume\",\"submit\":[{\"kind\":\"send\",\"feature\":\"Job\",\"event\":\"done\"}]}]},"
    "            \"Expired\":{}},"
    "  \"initial\":[\"Idle\"]},"
    " {\"feature\":\"Counter\",\"states\":{\"Counting\":{\"fields\":{\"n\":\"integer\"}}}},"
    " {\"feature\":\"Lamp\",\"states\":{\"Off\":{},\"On\":{\"after\":[{\"ms\":10,\"on_restore\":\"restart\","
    "   \"submit\":[{\"kind\":\"transition\",\"feature\":\"Lamp\",\"into\":\"Off\"}]}]}}}"
    "]}";

static const char base_model[] = "{\"Counter\":{\"state\":\"Counting\",\"payload\":{\"n\":1}}}";

static const char *const afterwards[] = {
    "{\"kind\":\"initialize\",\"feature\":\"Job\",\"key\":\"z\",\"into\":\"Idle\"}",
    "{\"kind\":\"send\",\"feature\":\"Job\",\"key\":\"a\",\"event\":\"go\"}",
    "{\"kind\":\"transition\",\"feature\":\"Lamp\",\"into\":\"On\"}",
    "{\"kind\":\"actualize\",\"feature\":\"Counter\",\"in\":\"Counting\",\"payload\":{\"n\":2}}",
};

static char header[512];
static char path[64];

static uf_dispatcher *base_dispatcher(void) {
    uf_dispatcher *d = fuzz_new_dispatcher("{\"clock\":\"manual\",\"timers\":\"host\",\"max_cascade\":20}");
    FUZZ_ASSERT(uf_register(d, definitions) == UF_OK, "the definitions: %s", uf_last_error());
    FUZZ_ASSERT(uf_state_restore(d, base_model) == UF_OK, "the base model: %s", uf_last_error());
    FUZZ_ASSERT(uf_submit_after(d, "{\"kind\":\"trigger\",\"feature\":\"Counter\"}", 7, "base", 0) == UF_OK,
                "the base timer: %s", uf_last_error());
    return d;
}

/* The header line a journaling dispatcher writes for the definitions. */
static void make_header(void) {
    char journal[64];
    snprintf(journal, sizeof journal, "/tmp/uniflow-fuzz-replay-header-%d.jsonl", (int)getpid());
    unlink(journal);
    char options[128];
    snprintf(options, sizeof options, "{\"journal\":\"%s\"}", journal);
    uf_dispatcher *d = fuzz_new_dispatcher(options);
    FUZZ_ASSERT(uf_register(d, definitions) == UF_OK, "the definitions: %s", uf_last_error());
    uf_dispatcher_free(d);
    FILE *file = fopen(journal, "rb");
    FUZZ_ASSERT(file != NULL && fgets(header, sizeof header, file) != NULL, "no header line in %s", journal);
    fclose(file);
    unlink(journal);
}

static char *timers(uf_dispatcher *d) {
    char *text = NULL;
    int status = uf_timers_get(d, &text);
    fuzz_check_status("uf_timers_get", status);
    FUZZ_ASSERT(status == UF_OK, "uf_timers_get failed");
    json_decref(fuzz_parse_json("uf_timers_get", text));
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (header[0] == '\0') {
        make_header();
        snprintf(path, sizeof path, "/tmp/uniflow-fuzz-replay-%d.jsonl", (int)getpid());
    }
    FILE *file = fopen(path, "wb");
    FUZZ_ASSERT(file != NULL, "cannot write %s", path);
    fputs(header, file);
    if (size > 0) fwrite(data, 1, size, file);
    fclose(file);

    uf_dispatcher *d = base_dispatcher();
    char *model_before = fuzz_state(d);
    char *timers_before = timers(d);
    int status = uf_replay_file(d, path);
    fuzz_check_status("uf_replay_file", status);
    FUZZ_ASSERT(status != UF_QUEUED, "UF_QUEUED outside a callback");
    char *model_after = fuzz_state(d);
    char *timers_after = timers(d);
    if (status != UF_OK) {
        FUZZ_ASSERT(strcmp(model_before, model_after) == 0, "a failed replay changed the model to %s", model_after);
        FUZZ_ASSERT(strcmp(timers_before, timers_after) == 0, "a failed replay changed the timers to %s", timers_after);
    } else {
        FUZZ_ASSERT(uf_state_restore(d, model_after) == UF_OK, "uf_state_get output does not restore: %s",
                    uf_last_error());
        char *snapshot = NULL;
        FUZZ_ASSERT(uf_snapshot_get(d, &snapshot) == UF_OK, "uf_snapshot_get: %s", uf_last_error());
        int restored = uf_snapshot_restore(d, snapshot);
        FUZZ_ASSERT(restored == UF_OK, "a replayed dispatcher's snapshot does not restore: %s\n%.500s",
                    uf_last_error(), snapshot);
        uf_free(snapshot);
        for (size_t i = 0; i < sizeof afterwards / sizeof afterwards[0]; ++i) {
            int submitted = uf_submit(d, afterwards[i]);
            fuzz_check_status("uf_submit", submitted);
        }
        /* Every timer, however far, fires or stays: no crash, no spin. */
        fuzz_check_status("uf_clock_advance", uf_clock_advance(d, 1));
        fuzz_check_status("uf_clock_advance", uf_clock_advance(d, 100));
        fuzz_check_status("uf_clock_advance", uf_clock_advance(d, 1000000));
        uf_free(fuzz_state(d));
        uf_free(timers(d));
    }
    uf_free(model_before);
    uf_free(timers_before);
    uf_free(model_after);
    uf_free(timers_after);
    uf_dispatcher_free(d);
    return 0;
}
