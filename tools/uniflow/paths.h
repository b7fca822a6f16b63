/*
 * paths.h — `uniflow paths`: one shortest action path to every state of the
 * registered features, printed as lines `uniflow run` accepts (docs/cli.md).
 */
#ifndef UNIFLOW_CLI_PATHS_H
#define UNIFLOW_CLI_PATHS_H

#include <stdio.h>

#include <jansson.h>

/* Prints the paths of every feature in `definitions` (what uf_definitions_get
 * gives: {"features": [...]}), or of `feature` alone when it is not NULL, on
 * `out`; each unreachable state is named on `err`. Returns 0 when every state is
 * reachable, 1 otherwise (or when `feature` is not among the definitions). */
int print_paths(json_t *definitions, const char *feature, FILE *out, FILE *err);

/* The zero value of a field's type (its declaration: a type name or an object
 * with "type"): 0, "", false, [], {}, or null for `any`. New reference. */
json_t *paths_zero_value(json_t *declaration);

#endif
