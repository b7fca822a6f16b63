/*
 * source_line.h — the line of a definition path ("features[1].states.X.fields.y")
 * in a definition file, for `uniflow check` and the other commands' messages.
 *
 * The library names the offending element of a definition by its path, starting
 * at features[i] whatever the file holds (one definition, an array of them, or
 * {"features": [...]}). A person fixing the file wants the line too, so the tool
 * walks the JSON text along the path, as far as it resolves, and reports the line
 * where that value starts. The text has already been parsed by the library: a
 * scanner that only skips values is enough, and any surprise ends the walk.
 */
#ifndef UNIFLOW_CLI_SOURCE_LINE_H
#define UNIFLOW_CLI_SOURCE_LINE_H

/* The line (from 1) where the element named by the path at the start of `message`
 * ("features[1].states.X: ...") starts in `text`, or 0 when the message names no
 * such path. The walk stops at the first part it cannot follow. */
unsigned long line_of_path(const char *text, const char *message);

#endif
