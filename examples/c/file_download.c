/*
 * file_download.c — a download told through libuniflow.
 *
 *   file_download [DEFINITIONS.json]
 *
 * The FileDownloading feature (examples/definitions/file_downloading.json) is
 * initialized into Starting and moved to InProgress. Then four worker threads
 * "download" five chunks each; every chunk is one action submitted with
 * uf_dispatch, whose via callback adds 5 to the progress it finds. The workers
 * never touch the model themselves: the dispatcher processes one action at a
 * time, so no update is lost however the threads interleave.
 *
 * Two subscribers watch: one prints every mutation as JSON, one prints the
 * progress. Nobody here submits the transition into Completed: the definition's
 * model binding ("Finish the download when progress reaches 100") does, right
 * after the actualization that reaches 100 and before that worker's call returns.
 * A host that wants to do it itself can submit from a subscriber: inside a
 * callback a submit is queued (UF_QUEUED) and runs after the current action.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "uniflow.h"

#ifndef UNIFLOW_EXAMPLE_DEFINITIONS
#define UNIFLOW_EXAMPLE_DEFINITIONS "examples/definitions"
#endif

enum { WORKERS = 4, CHUNKS_PER_WORKER = 5 };
static double chunk_percent = 5.0; /* 4 workers x 5 chunks x 5% = 100% */

static uf_dispatcher *dispatcher;
/* Written by follow_progress, which the dispatcher runs one call at a time. */
static int progress_reports;

/* Stops the program with the library's message when a call fails. */
static void check(int status, const char *what) {
    if (status < 0) {
        fprintf(stderr, "file_download: %s: %s: %s\n", what, uf_status_name(status), uf_last_error());
        exit(1);
    }
}

/* ---- Subscribers ---- */

/* Prints every mutation of the dispatcher as one line of JSON. */
static int print_mutation(const uf_mutation *m, void *payload) {
    (void)payload;
    printf("mutation %s\n", uf_mutation_json(m));
    return UF_KEEP;
}

/* Reads {"progress": N} from a payload. */
static double progress_of(const char *payload_json) {
    double progress = -1;
    if (!payload_json || sscanf(payload_json, "{\"progress\":%lf", &progress) != 1) return -1;
    return progress;
}

/* Prints the progress of each actualization. At 100 the model binding has already
 * queued the transition into Completed (bindings run before subscribers); it is
 * applied as soon as this notification ends. */
static int follow_progress(const uf_mutation *m, void *payload) {
    (void)payload;
    double progress = progress_of(uf_mutation_new_payload_json(m));
    ++progress_reports;
    printf("progress %g%%\n", progress);
    if (progress >= 100) printf("every chunk is in: the model binding completes the download\n");
    return UF_KEEP;
}

/* ---- Workers ---- */

/* The via of a chunk: the new progress is the current one plus the chunk. */
static int add_chunk(uf_context *ctx, void *payload) {
    double chunk = *(const double *)payload;
    double progress = progress_of(uf_context_payload_json(ctx));
    if (progress < 0) return -1; /* fails the action with UF_ECALLBACK */
    char next[64];
    snprintf(next, sizeof next, "{\"progress\":%g}", progress + chunk);
    return uf_context_become(ctx, next);
}

typedef struct worker {
    pthread_t thread;
    char name[16];
    unsigned seed;
    int failures;
} worker;

static void *download_chunks(void *arg) {
    worker *w = (worker *)arg;
    /* One prepared action, dispatched for every chunk: no JSON text to build. */
    uf_action chunk = UF_ACTION_INIT;
    chunk.kind = UF_ACTION_ACTUALIZE;
    chunk.feature = "FileDownloading";
    chunk.into = "InProgress";
    chunk.scope = "file_download.c";
    chunk.context = w->name;
    chunk.via = add_chunk;
    chunk.via_payload = &chunk_percent;
    for (int i = 0; i < CHUNKS_PER_WORKER; ++i) {
        struct timespec pause = {0, 1000000L * (1 + rand_r(&w->seed) % 3)}; /* the network */
        nanosleep(&pause, NULL);
        int status = uf_dispatch(dispatcher, &chunk);
        if (status != UF_OK) {
            fprintf(stderr, "%s: chunk %d: %s: %s\n", w->name, i, uf_status_name(status), uf_last_error());
            ++w->failures;
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *definitions = argc > 1 ? argv[1] : UNIFLOW_EXAMPLE_DEFINITIONS "/file_downloading.json";
    check(uf_dispatcher_new(&dispatcher, NULL), "uf_dispatcher_new");
    check(uf_register_file(dispatcher, definitions), definitions);
    check(uf_subscribe(dispatcher, "AnyMutationOf<FileDownloading>", print_mutation, NULL, NULL, NULL), "uf_subscribe");
    check(uf_subscribe(dispatcher, "ActualizationIn<FileDownloading.InProgress>", follow_progress, NULL, NULL, NULL), "uf_subscribe");

    check(uf_submit(dispatcher, "{\"kind\":\"initialize\",\"feature\":\"FileDownloading\",\"into\":\"Starting\"}"), "start");
    check(uf_submit(dispatcher, "{\"kind\":\"transition\",\"feature\":\"FileDownloading\",\"from\":\"Starting\","
                                "\"into\":\"InProgress\",\"payload\":{\"progress\":0}}"), "begin");

    worker workers[WORKERS];
    for (int i = 0; i < WORKERS; ++i) {
        snprintf(workers[i].name, sizeof workers[i].name, "worker-%d", i + 1);
        workers[i].seed = (unsigned)i;
        workers[i].failures = 0;
        if (pthread_create(&workers[i].thread, NULL, download_chunks, &workers[i]) != 0) {
            fprintf(stderr, "file_download: cannot start %s\n", workers[i].name);
            return 1;
        }
    }
    int failures = 0;
    for (int i = 0; i < WORKERS; ++i) {
        pthread_join(workers[i].thread, NULL);
        failures += workers[i].failures;
    }

    char *state = NULL;
    check(uf_feature_get(dispatcher, "FileDownloading", &state), "uf_feature_get");
    int completed = state && strcmp(state, "{\"state\":\"Completed\",\"payload\":{}}") == 0;
    printf("%s: %s\n", completed ? "download complete" : "download NOT complete", state ? state : "(absent)");
    uf_free(state);
    if (progress_reports != WORKERS * CHUNKS_PER_WORKER) {
        fprintf(stderr, "file_download: %d progress reports, expected %d\n", progress_reports, WORKERS * CHUNKS_PER_WORKER);
        ++failures;
    }

    check(uf_submit(dispatcher, "{\"kind\":\"deinitialize\",\"feature\":\"FileDownloading\",\"from\":\"Completed\"}"), "cleanup");
    uf_dispatcher_free(dispatcher);
    return completed && failures == 0 ? 0 : 1;
}
