/*
 * import_xstate_chart.h — the statechart half of `uniflow import xstate`: a
 * machine the flat converter refuses (nested or parallel states, history,
 * `entry`/`exit`, `always`, transition actions, ...) as a statechart feature
 * (docs/cli.md, docs/statecharts.md). Called by uniflow_import_xstate only.
 */
#ifndef UNIFLOW_IMPORT_XSTATE_CHART_H
#define UNIFLOW_IMPORT_XSTATE_CHART_H

#include <stddef.h>

#define UNIFLOW_IMPORT_CHART_OK 0
#define UNIFLOW_IMPORT_CHART_REFUSED 1

/* Converts text[0..length) (an XState v5 machine config in JSON). On success
 * *out_definition is the definition (two-space indented JSON and a newline);
 * otherwise *out_error is "PATH: message" for the first element it cannot
 * convert. Both are freed with free(). */
int uniflow_import_xstate_chart(const char *text, size_t length, const char *feature, const char *file_name,
                                char **out_definition, char **out_error);

#endif /* UNIFLOW_IMPORT_XSTATE_CHART_H */
