/*
 * import_xstate.h — `uniflow import xstate`: an XState v5 machine config (JSON) as
 * a libuniflow feature definition (docs/cli.md, "import xstate").
 *
 * The converter is a pure function of its input (no I/O, no global state; jansson
 * and the tool's source_line.c only), so that the command, its tests and the fuzz
 * target fuzz/fuzz_import.c call the same code. It is part of the tool, not of the
 * library's API.
 */
#ifndef UNIFLOW_IMPORT_XSTATE_H
#define UNIFLOW_IMPORT_XSTATE_H

#include <stddef.h>

/* What uniflow_import_xstate returns. */
#define UNIFLOW_IMPORT_OK 0       /* *out_definition is set */
#define UNIFLOW_IMPORT_REFUSED 1  /* *out_error is set: not JSON, or a machine it cannot convert */

/* What the converter skipped because it changes nothing at run time (a machine's
 * `types`, say): one per skipped element, in the order of the text. */
typedef struct uniflow_import_note {
    char *message;      /* "PATH: skipped: why", on one line */
    unsigned long line; /* the line of the text where PATH's element starts */
} uniflow_import_note;

/* Converts the XState machine config in text[0..length) (need not be
 * NUL-terminated; any bytes are accepted) into one libuniflow definition object.
 *
 *   feature    the feature's name (`--feature`), or NULL: the machine's `id`, else
 *              the base name of `file_name` without ".json"; whichever is used is
 *              converted to a name as every other name is.
 *   file_name  the file the text came from, or NULL.
 *
 * On success returns UNIFLOW_IMPORT_OK and sets *out_definition to the definition:
 * two-space indented JSON ending in a newline, keys in a fixed order, the same
 * bytes for the same input; and *out_notes to the *out_note_count notes of what it
 * skipped (NULL and 0 when it skipped nothing).
 *
 * Otherwise returns UNIFLOW_IMPORT_REFUSED and sets *out_error to "PATH: message"
 * (the dotted path of the first element it cannot convert, e.g.
 * "states.red.states: nested states are not supported"), or to "line L, column C:
 * message" for text that is not JSON, and *out_line to the line of the text where
 * that element starts (0 when there is none; *out_error is "out of memory" when an
 * allocation failed, or NULL when even that one did). Notes go with a definition
 * only: a refusal sets *out_notes to NULL and *out_note_count to 0.
 *
 * Every out-parameter may be NULL; the caller frees both strings with free() and
 * the notes with uniflow_import_free_notes. Thread safe: it touches nothing but
 * its arguments. */
int uniflow_import_xstate(const char *text, size_t length, const char *feature,
                          const char *file_name, char **out_definition, char **out_error,
                          unsigned long *out_line, uniflow_import_note **out_notes,
                          size_t *out_note_count);

/* Frees what uniflow_import_xstate returned in *out_notes (NULL is fine). */
void uniflow_import_free_notes(uniflow_import_note *notes, size_t count);

#endif /* UNIFLOW_IMPORT_XSTATE_H */
