/* follow.h — `uniflow follow`: print a shared model's mutations as the records
 * of its NATS JetStream stream arrive (built only with libuniflow_nats). */
#ifndef UNIFLOW_CLI_FOLLOW_H
#define UNIFLOW_CLI_FOLLOW_H

#include "uniflow.h"

/* Runs the command: defs are registered into a partitioned dispatcher made with
 * dispatcher_options; returns the exit status. `registered` makes that
 * dispatcher (uniflow.c's, so that definitions are read the same way as by every
 * other command), NULL after reporting why. */
int follow_run(const char **defs, int count, const char *url, const char *model, const char *partitions,
               int from_start,
               uf_dispatcher *(*registered)(const char *dispatcher_options, const char **files, int count));

#endif
