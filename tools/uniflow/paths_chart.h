/*
 * paths_chart.h — `uniflow paths` for statechart features: one shortest action
 * path to every state at every level, found by running the library itself.
 */
#ifndef UNIFLOW_CLI_PATHS_CHART_H
#define UNIFLOW_CLI_PATHS_CHART_H

#include <stdio.h>

#include <jansson.h>

/* How many configurations the search looks at, at most, per feature. */
#define CHART_PATHS_LIMIT 100000

/* Whether a definition uses a key only statecharts have (docs/statecharts.md),
 * as the library decides it when it registers the definition. */
int is_statechart(json_t *definition);

/* Prints the paths of the statechart feature `definition`, one of `features`
 * (every registered definition, registered again together: bindings of other
 * features may move this one on), as print_paths does for flat features.
 * Returns 0 when every state was reached, 1 otherwise. */
int chart_paths(json_t *definition, json_t *features, FILE *out, FILE *err);

#endif
