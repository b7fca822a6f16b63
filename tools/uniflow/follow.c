/* follow.c — `uniflow follow DEFS... --nats URL --model NAME --partitions N
 * [--from-start]`: a node that owns nothing (libuniflow_nats, "owns": "none")
 * and prints every mutation it applies, as uf_mutation_json, one per line, as
 * the records arrive. Without --from-start, what the node applied while
 * catching up is not printed: only what happens from then on. With it, the
 * history the stream still holds is printed first (what the owners' snapshots
 * cover and their purges dropped is not history any more: a snapshot installs
 * state without mutations). Stops on SIGINT or SIGTERM, exit status 0. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "follow.h"
#include "uniflow_nats.h"

static volatile int printing;

static int print_mutation(const uf_mutation *m, void *payload) {
    (void)payload;
    if (printing) {
        printf("%s\n", uf_mutation_json(m));
        fflush(stdout);
    }
    return UF_KEEP;
}

int follow_run(const char **defs, int count, const char *url, const char *model, const char *partitions,
               int from_start,
               uf_dispatcher *(*registered)(const char *dispatcher_options, const char **files, int count)) {
    char *end = NULL;
    long n = strtol(partitions, &end, 10);
    if (*end != '\0' || n < 1 || n > 1024) {
        fprintf(stderr, "uniflow follow: --partitions must be a number from 1 to 1024, not '%s'\n", partitions);
        return 2;
    }
    /* Block the stop signals before any thread starts, so that only sigwait
     * below receives them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    char options[160];
    snprintf(options, sizeof options, "{\"partitions\": %ld, \"node\": \"uniflow_follow_%ld\"}", n, (long)getpid());
    uf_dispatcher *d = registered(options, defs, count);
    if (d == NULL) return 1;
    printing = from_start;
    int status = uf_subscribe(d, NULL, print_mutation, NULL, NULL, NULL);
    if (status != UF_OK) {
        fprintf(stderr, "uniflow follow: %s: %s\n", uf_status_name(status), uf_last_error());
        uf_dispatcher_free(d);
        return 1;
    }
    /* The node's options are written as JSON text here: a URL or a name with a
     * quote or a backslash would need escaping, and is no URL or name anyway. */
    if (strpbrk(url, "\"\\") || strpbrk(model, "\"\\")) {
        fprintf(stderr, "uniflow follow: the URL and the model may not hold quotes or backslashes\n");
        uf_dispatcher_free(d);
        return 2;
    }
    size_t size = strlen(url) + strlen(model) + 64;
    char *node_options = malloc(size);
    if (!node_options) {
        uf_dispatcher_free(d);
        return 1;
    }
    snprintf(node_options, size, "{\"url\": \"%s\", \"model\": \"%s\", \"owns\": \"none\"}", url, model);
    uf_nats_node *node = NULL;
    status = uf_nats_node_new(&node, d, node_options);
    free(node_options);
    if (status == UF_OK) status = uf_nats_node_start(node);
    if (status != UF_OK) {
        fprintf(stderr, "uniflow follow: %s: %s\n", uf_status_name(status), uf_nats_last_error());
        uf_nats_node_free(node);
        uf_dispatcher_free(d);
        return 1;
    }
    printing = 1;
    int sig = 0;
    sigwait(&stop, &sig);
    uf_nats_node_free(node);
    uf_dispatcher_free(d);
    return 0;
}
