/*
 * The journal's crash test (docs/journal.md): a writer applies actions with the journal on
 * and is killed with SIGKILL at a random moment; replaying its journal must give
 * the model of an applied prefix, never a partial action.
 *
 *   journal_crash write JOURNAL        actualize Main.val = 1, 2, 3, ... forever,
 *                                      printing each value once it is applied
 *   journal_crash check JOURNAL LAST   replay; val must be LAST or LAST + 1 (the
 *                                      action in flight when the kill came)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uniflow.h>

static const char *definition =
    "{\"feature\":\"Main\",\"states\":{\"Main\":{\"fields\":{\"val\":\"integer\"}}}}";

static uf_dispatcher *open_dispatcher(const char *options) {
    uf_dispatcher *d = NULL;
    if (uf_dispatcher_new(&d, options) != UF_OK || uf_register(d, definition) != UF_OK) {
        fprintf(stderr, "setup: %s\n", uf_last_error());
        exit(2);
    }
    return d;
}

static int write_forever(const char *path) {
    char options[4096], action[256];
    snprintf(options, sizeof options, "{\"journal\":\"%s\"}", path);
    uf_dispatcher *d = open_dispatcher(options);
    if (uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Main\",\"into\":\"Main\",\"payload\":{\"val\":0}}") != UF_OK)
        return 2;
    for (long i = 1;; i++) {
        snprintf(action, sizeof action,
                 "{\"kind\":\"actualize\",\"feature\":\"Main\",\"in\":\"Main\",\"payload\":{\"val\":%ld}}", i);
        if (uf_submit(d, action) != UF_OK) {
            fprintf(stderr, "submit: %s\n", uf_last_error());
            return 2;
        }
        printf("%ld\n", i);
        fflush(stdout);
    }
}

/* Whether the file holds no complete line: the writer died before it journaled
 * anything (the header is written at uf_register). */
static int holds_no_line(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 1;
    int c, newline = 0;
    while ((c = fgetc(f)) != EOF && !newline) newline = (c == '\n');
    fclose(f);
    return !newline;
}

static int check(const char *path, long last) {
    if (last < 0 && holds_no_line(path)) {
        printf("ok: killed before the journal had a line\n");
        return 0;
    }
    uf_dispatcher *d = open_dispatcher(NULL);
    if (uf_replay_file(d, path) != UF_OK) {
        printf("FAIL: replay: %s: %s\n", uf_status_name(uf_last_status()), uf_last_error());
        return 1;
    }
    char *state = NULL;
    uf_state_get(d, &state);
    /* The writer prints a value once its action returned, so the journal holds
     * that value or the next one (in flight when the kill came). Before the first
     * print: nothing, the initialization (0) or the first actualization (1). */
    long confirmed = last < 0 ? 0 : last;
    char expected[2][128];
    snprintf(expected[0], sizeof expected[0], "{\"Main\":{\"state\":\"Main\",\"payload\":{\"val\":%ld}}}", confirmed);
    snprintf(expected[1], sizeof expected[1], "{\"Main\":{\"state\":\"Main\",\"payload\":{\"val\":%ld}}}", confirmed + 1);
    int ok = strcmp(state, expected[0]) == 0 || strcmp(state, expected[1]) == 0 ||
             (last < 0 && strcmp(state, "{}") == 0);
    printf("%s: last applied %ld, replayed %s\n", ok ? "ok" : "FAIL", last, state);
    uf_free(state);
    uf_dispatcher_free(d);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "write") == 0) return write_forever(argv[2]);
    if (argc == 4 && strcmp(argv[1], "check") == 0) return check(argv[2], atol(argv[3]));
    fprintf(stderr, "usage: journal_crash write JOURNAL | check JOURNAL LAST\n");
    return 2;
}
