/*
 * source_line.h — the line where an element of a JSON file starts, for the
 * messages of every command: the definition path of a library message
 * ("features[1].states.X.fields.y: ...", `uniflow check` and the others) and the
 * path of the element `uniflow import xstate` refuses or skips (import_xstate.c).
 *
 * Neither the library nor jansson keeps positions, and a person fixing the file
 * wants the line, so the tool walks the JSON text along the path, as far as it
 * resolves, and reports the line where that value starts. The text has already
 * been parsed: a scanner that only skips values is enough, and any surprise ends
 * the walk. This is the CLI's one such scanner: every read is bounded by the
 * text's length, nothing recurses (however deep the text), and keys are compared
 * decoded, escapes included ("\u0041" is the key "A").
 */
#ifndef UNIFLOW_CLI_SOURCE_LINE_H
#define UNIFLOW_CLI_SOURCE_LINE_H

#include <stddef.h>

/* One step of a path: member `key` of an object (NUL-terminated, decoded), or,
 * when key is NULL, element `index` of an array. */
typedef struct source_step {
    const char *key;
    size_t index;
} source_step;

/* The line (from 1) where the element that steps[0..count) names starts in
 * text[0..length) (need not be NUL-terminated): the walk follows the steps from
 * the top-level value and stops at the first one it cannot follow, and the line
 * is that of the last value it reached (the top-level value's when it reached
 * none, as for a key that is missing). */
unsigned long line_of_steps(const char *text, size_t length, const source_step *steps, size_t count);

/* The line (from 1) where the element named by the definition path at the start
 * of `message` ("features[1].states.X: ...") starts in the NUL-terminated `text`
 * (one definition, an array of them, or {"features": [...]}), or 0 when the
 * message names no such path. The walk stops at the first part it cannot follow. */
unsigned long line_of_path(const char *text, const char *message);

#endif
