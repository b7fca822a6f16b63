/*
 * The journal's crash test (docs/journal.md, docs/time.md): a writer applies
 * steps with the journal on and is killed with SIGKILL at a random moment;
 * replaying its journal must give the model AND the armed timers of an applied
 * prefix of the steps, never a partial step.
 *
 *   journal_crash write JOURNAL            run steps 1, 2, 3, ... forever; after
 *                                          each, print "N<TAB>model<TAB>timers"
 *   journal_crash check JOURNAL APPLIED    replay; the model and the timers must
 *                                          be those after the last step APPLIED
 *                                          lists, or after the next one (in flight
 *                                          when the kill came)
 *
 * Each step journals one line at most: an actualization of Main, an API timer
 * armed (or replacing the one armed under its id, now and then an anonymous
 * one), an API timer cancelled (or an id that is not armed: no line), or Gate
 * entering Open (arming its two state timers), actualized there (re-arming its
 * "update" timer) or leaving it (disarming both). The clock is manual and never
 * moves, so nothing fires and every deadline is exact.
 *
 * The check also runs the same steps again on a dispatcher without a journal:
 * what it gets after step N must be what the killed writer printed, and after
 * step N + 1 is the other acceptable outcome.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uniflow.h>

static const char *definitions =
    "[{\"feature\":\"Main\",\"states\":{\"Main\":{\"fields\":{\"val\":\"integer\"}}}},"
    " {\"feature\":\"Gate\",\"states\":{\"Closed\":{},"
    "  \"Open\":{\"fields\":{\"n\":\"integer\"},\"after\":["
    "   {\"ms\":100000,\"submit\":[{\"kind\":\"transition\",\"feature\":\"Gate\",\"into\":\"Closed\"}]},"
    "   {\"ms\":200000,\"reset\":\"update\",\"submit\":[{\"kind\":\"transition\",\"feature\":\"Gate\",\"into\":\"Closed\"}]}]}}}]";

static uf_dispatcher *open_dispatcher(const char *options) {
    uf_dispatcher *d = NULL;
    if (uf_dispatcher_new(&d, options) != UF_OK || uf_register(d, definitions) != UF_OK) {
        fprintf(stderr, "setup: %s\n", uf_last_error());
        exit(2);
    }
    return d;
}

/* Step i (from 1). Returns its status: UF_OK, or UF_ENOTFOUND for a cancel of an
 * id that is not armed. */
static int step(uf_dispatcher *d, long i) {
    char action[256], id[16];
    if (i == 1) return uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Main\",\"into\":\"Main\",\"payload\":{\"val\":0}}");
    if (i == 2) return uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Gate\",\"into\":\"Closed\"}");
    long k = i - 3;
    switch (k % 4) {
    case 0:
        snprintf(action, sizeof action,
                 "{\"kind\":\"actualize\",\"feature\":\"Main\",\"in\":\"Main\",\"payload\":{\"val\":%ld}}", i);
        return uf_submit(d, action);
    case 1:
        snprintf(action, sizeof action,
                 "{\"kind\":\"actualize\",\"feature\":\"Main\",\"in\":\"Main\",\"payload\":{\"val\":%ld}}", -i);
        snprintf(id, sizeof id, "t%ld", i % 5);
        return uf_submit_after(d, action, 100000 + (uint64_t)i, i % 200 == 4 ? NULL : id, 0);
    case 2:
        snprintf(id, sizeof id, "t%ld", (i / 3) % 5);
        return uf_timer_cancel(d, id);
    default:
        switch ((k / 4) % 3) {
        case 0:
            snprintf(action, sizeof action,
                     "{\"kind\":\"transition\",\"feature\":\"Gate\",\"from\":\"Closed\",\"into\":\"Open\",\"payload\":{\"n\":%ld}}", i);
            return uf_submit(d, action);
        case 1:
            snprintf(action, sizeof action,
                     "{\"kind\":\"actualize\",\"feature\":\"Gate\",\"in\":\"Open\",\"payload\":{\"n\":%ld}}", i);
            return uf_submit(d, action);
        default:
            return uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Gate\",\"from\":\"Open\",\"into\":\"Closed\"}");
        }
    }
}

/* "model<TAB>timers" of a dispatcher, in a buffer the caller frees. */
static char *describe(uf_dispatcher *d) {
    char *model = NULL, *timers = NULL;
    if (uf_state_get(d, &model) != UF_OK || uf_timers_get(d, &timers) != UF_OK) {
        fprintf(stderr, "describe: %s\n", uf_last_error());
        exit(2);
    }
    size_t size = strlen(model) + strlen(timers) + 2;
    char *text = malloc(size);
    if (!text) exit(2);
    snprintf(text, size, "%s\t%s", model, timers);
    uf_free(model);
    uf_free(timers);
    return text;
}

static int write_forever(const char *path) {
    char options[4096];
    snprintf(options, sizeof options, "{\"clock\":\"manual\",\"journal\":\"%s\"}", path);
    uf_dispatcher *d = open_dispatcher(options);
    for (long i = 1;; i++) {
        int status = step(d, i);
        if (status != UF_OK && status != UF_ENOTFOUND) {
            fprintf(stderr, "step %ld: %s: %s\n", i, uf_status_name(status), uf_last_error());
            return 2;
        }
        char *now = describe(d);
        printf("%ld\t%s\n", i, now);
        fflush(stdout);
        free(now);
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

/* The last complete line of the writer's output ("N<TAB>model<TAB>timers"), in a
 * buffer the caller frees; NULL when there is none. */
static char *last_applied(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *last = NULL, *line = NULL;
    size_t cap = 0, len = 0;
    int c;
    while ((c = fgetc(f)) != EOF) {
        if (len + 1 >= cap) {
            cap = cap ? cap * 2 : 4096;
            line = realloc(line, cap);
            if (!line) exit(2);
        }
        if (c == '\n') {
            line[len] = '\0';
            free(last);
            last = strdup(line);
            len = 0;
        } else {
            line[len++] = (char)c;
        }
    }
    free(line);
    fclose(f);
    return last;
}

static int check(const char *path, const char *applied_path) {
    char *applied = last_applied(applied_path);
    long last = applied ? atol(applied) : 0;
    const char *recorded = applied ? strchr(applied, '\t') + 1 : "{}\t[]";
    if (!applied && holds_no_line(path)) {
        printf("ok: killed before the journal had a line\n");
        return 0;
    }
    /* The steps again, without a journal: after `last`, and after the next one. */
    uf_dispatcher *again = open_dispatcher("{\"clock\":\"manual\"}");
    for (long i = 1; i <= last; i++) step(again, i);
    char *expected = describe(again);
    step(again, last + 1);
    char *next = describe(again);
    uf_dispatcher_free(again);
    int failed = 0;
    if (strcmp(expected, recorded) != 0) {
        printf("FAIL: after step %ld the writer had\n  %s\nbut the same steps give\n  %s\n", last, recorded, expected);
        failed = 1;
    }
    uf_dispatcher *d = open_dispatcher("{\"clock\":\"manual\"}");
    if (uf_replay_file(d, path) != UF_OK) {
        printf("FAIL: replay: %s: %s\n", uf_status_name(uf_last_status()), uf_last_error());
        return 1;
    }
    char *replayed = describe(d);
    int ok = !failed && (strcmp(replayed, expected) == 0 || strcmp(replayed, next) == 0);
    if (ok) {
        size_t timers = 0;
        for (const char *p = strchr(replayed, '\t'); (p = strstr(p + 1, "{\"id\"")) != NULL;) timers++;
        printf("ok: last applied step %ld, replayed %.*s with %zu timers\n", last,
               (int)(strchr(replayed, '\t') - replayed), replayed, timers);
    } else {
        printf("FAIL: last applied step %ld, replayed\n  %s\nexpected\n  %s\nor\n  %s\n", last, replayed, expected, next);
    }
    free(replayed);
    free(expected);
    free(next);
    free(applied);
    uf_dispatcher_free(d);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "write") == 0) return write_forever(argv[2]);
    if (argc == 4 && strcmp(argv[1], "check") == 0) return check(argv[2], argv[3]);
    fprintf(stderr, "usage: journal_crash write JOURNAL | check JOURNAL APPLIED\n");
    return 2;
}
