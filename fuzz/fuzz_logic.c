/*
 * fuzz_logic.c — uf_logic_apply (JsonLogic) with arbitrary rules and data.
 *
 * The input is the rule, then (after the first newline) the data; without a
 * newline the data is NULL (JSON null). Invariants: the status is UF_OK with a
 * result that is valid JSON, or an input error (UF_EJSON, UF_ESCHEMA) with a
 * message; a rule is deterministic (applied twice, the same result); NULL data
 * and "null" data give the same result.
 */
#include "fuzz_common.h"

static int apply(const char *rule, const char *data, char **out) {
    *out = NULL;
    int status = uf_logic_apply(rule, data, out);
    fuzz_check_status("uf_logic_apply", status);
    FUZZ_ASSERT(status == UF_OK || status == UF_EJSON || status == UF_ESCHEMA,
                "uf_logic_apply gave %s", uf_status_name(status));
    if (status == UF_OK) json_decref(fuzz_parse_json("uf_logic_apply", *out));
    else FUZZ_ASSERT(*out == NULL, "a failed uf_logic_apply set its output");
    return status;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *rule = fuzz_cstring(data, size);
    char *newline = strchr(rule, '\n');
    char *input = NULL;
    if (newline) {
        *newline = '\0';
        input = newline + 1;
    }
    char *first = NULL, *second = NULL;
    int status = apply(rule, input, &first);
    int again = apply(rule, input, &second);
    FUZZ_ASSERT(status == again, "uf_logic_apply is not deterministic: %d then %d", status, again);
    if (status == UF_OK)
        FUZZ_ASSERT(strcmp(first, second) == 0, "uf_logic_apply is not deterministic: %s then %s", first,
                    second);
    uf_free(first);
    uf_free(second);
    if (!input) {
        int with_null = apply(rule, "null", &first);
        FUZZ_ASSERT(with_null == status, "NULL data and \"null\" differ: %d, %d", status, with_null);
        uf_free(first);
    }
    free(rule);
    return 0;
}
