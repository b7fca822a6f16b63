/*
 * run_services.h — statechart services under `uniflow run`: placeholders that
 * run until their state is left, and the lines that settle them.
 */
#ifndef UNIFLOW_CLI_RUN_SERVICES_H
#define UNIFLOW_CLI_RUN_SERVICES_H

#include <jansson.h>

#include "uniflow.h"

/* Registers a placeholder service under `name`: it never settles by itself. */
int register_placeholder_service(uf_dispatcher *d, const char *name);

/* Whether a line's JSON settles a service: {"service_done": ID, "feature": F,
 * "key": K, "output": X} or {"service_error": ID, ..., "error": X} (`key` for
 * keyed features only; the output or error defaults to null). */
int is_settle_line(json_t *value);

/* Settles the newest running invocation the line names, with uf_service_done
 * or uf_service_error; returns its status. A line of another shape, or one
 * naming no running invocation, returns UF_ESCHEMA with *problem saying why
 * (valid until the next call). */
int settle_service(uf_dispatcher *d, json_t *value, const char **problem);

#endif
