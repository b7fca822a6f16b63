/*
 * uniflow_run.c — feed actions to a dispatcher from a JSON-lines file.
 *
 *   uniflow_run DEFINITIONS.json... ACTIONS.jsonl
 *
 * Registers every definitions file, then submits each line of ACTIONS.jsonl as
 * one action (blank lines are skipped). Every mutation is printed on stdout as
 * one line of JSON, the ones that queued actions cause included. A line whose
 * action fails is reported on stderr as FILE:LINE: STATUS: message. An action
 * that a callback queued (a trigger's "submit", a model binding) and that failed
 * later reaches only the reporter, so its report is printed as FILE:LINE: {report}
 * with the line that caused it.
 *
 * Exit status: 0 when every action was applied, 1 when any failed, 2 when the
 * definitions or the actions file could not be used.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uniflow.h"

/* Prints each mutation as a JSON line. */
static int print_mutation(const uf_mutation *m, void *payload) {
    (void)payload;
    printf("%s\n", uf_mutation_json(m));
    return UF_KEEP;
}

/* Where the action being submitted came from, for the reporter's lines. */
typedef struct line_context {
    const char *path;
    unsigned long line;
    int own_reported; /* the line's own action has had its report */
    int failures;     /* failures the reporter printed for this line */
} line_context;

/* Receives a report for every action processed or refused during a submit. The
 * first processed/rejected report is the line's own action, whose failure main()
 * prints from uf_submit's status; the later ones are actions that callbacks
 * queued meanwhile, and only the reporter hears of their failures. */
static void report_failures(const char *report_json, void *payload) {
    line_context *at = (line_context *)payload;
    int processed = strncmp(report_json, "{\"event\":\"processed\"", 20) == 0;
    int binding = strncmp(report_json, "{\"event\":\"binding_", 19) == 0;
    if (!binding && !at->own_reported) {
        at->own_reported = 1;
        return;
    }
    if (processed || (binding && strncmp(report_json, "{\"event\":\"binding_rejected\"", 28) != 0)) return;
    ++at->failures;
    fflush(stdout);
    fprintf(stderr, "%s:%lu: %s\n", at->path, at->line, report_json);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: uniflow_run DEFINITIONS.json... ACTIONS.jsonl\n");
        return 2;
    }
    const char *actions_path = argv[argc - 1];

    uf_dispatcher *d = NULL;
    if (uf_dispatcher_new(&d, NULL) != UF_OK) {
        fprintf(stderr, "uniflow_run: %s\n", uf_last_error());
        return 2;
    }
    for (int i = 1; i < argc - 1; ++i) {
        int status = uf_register_file(d, argv[i]);
        if (status != UF_OK) {
            fprintf(stderr, "uniflow_run: cannot register %s: %s: %s\n", argv[i], uf_status_name(status), uf_last_error());
            uf_dispatcher_free(d);
            return 2;
        }
    }
    FILE *actions = fopen(actions_path, "r");
    if (!actions) {
        perror(actions_path);
        uf_dispatcher_free(d);
        return 2;
    }

    line_context at = {actions_path, 0, 0, 0};
    uf_subscribe(d, NULL, print_mutation, NULL, NULL, NULL);
    uf_set_reporter(d, report_failures, &at, NULL);

    int failures = 0;
    char *line = NULL;
    size_t capacity = 0;
    ssize_t length;
    while ((length = getline(&line, &capacity, actions)) != -1) {
        ++at.line;
        while (length > 0 && (line[length - 1] == '\n' || line[length - 1] == '\r')) line[--length] = '\0';
        if (strspn(line, " \t") == (size_t)length) continue; /* blank */

        at.own_reported = 0;
        at.failures = 0;
        int status = uf_submit(d, line);
        if (status < 0) {
            fflush(stdout);
            fprintf(stderr, "%s:%lu: %s: %s\n", actions_path, at.line, uf_status_name(status), uf_last_error());
            ++failures;
        }
        failures += at.failures;
    }
    free(line);
    fclose(actions);
    uf_dispatcher_free(d);
    return failures ? 1 : 0;
}
