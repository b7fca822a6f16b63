/*
 * uniflow — check, draw, run and replay libuniflow feature definitions from the
 * command line (docs/cli.md). A thin program over the public C API: every
 * decision about definitions, actions and journals is the library's.
 *
 *   uniflow check DEFS...
 *   uniflow graph DEFS... [--feature F]
 *   uniflow run [--journal PATH] [--reporting LEVEL] [--clock CLOCK] DEFS... ACTIONS.jsonl
 *   uniflow paths DEFS... [--feature F]
 *   uniflow replay DEFS... JOURNAL
 *   uniflow import xstate MACHINE.json [--feature NAME]
 *   uniflow inspect DEFS... --journal FILE [--host H] [--port P] [--allow-submit]
 *   uniflow follow DEFS... --nats URL --model NAME --partitions N [--from-start]
 *
 * `follow` (follow.c) works only where libuniflow_nats was built
 * (UNIFLOW_WITH_NATS); elsewhere it says so and fails.
 *
 * `inspect` is not C: it runs the Python package's inspector
 * (python3 -m uniflow.inspect), which serves a web page (docs/inspector.md).
 *
 * `import` and `paths` are the exceptions to "thin": converting an XState machine
 * (import_xstate.c) and searching a feature's graph (paths.c) are the tool's own
 * work, done on the definitions as JSON.
 *
 * Exit status: 0 success, 1 a definition, action, journal or file failed,
 * 2 a usage error.
 *
 * Definition files are registered in the order given, into one dispatcher per
 * command, so that `check` accepts exactly what `run` and `graph` accept (a binding
 * may watch a feature of an earlier file; a feature name may not repeat).
 *
 * Handlers: a binding that names a host handler ({"call": "name"}) can only be
 * registered once a handler of that name exists, and a command-line tool has no
 * host code. The tool registers a placeholder for every handler the definitions
 * name: `check`, `graph` and `replay` never run it (nothing is submitted, or a
 * replay runs no bindings); under `run` it fails its binding (reported as
 * binding_rejected with UF_ECALLBACK, visible with --reporting), and answers
 * "no" to a statechart's guard or effect. Services a statechart invokes get a
 * placeholder that never settles.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#ifdef UNIFLOW_WITH_NATS
#include "follow.h"
#endif
#include "import_xstate.h"
#include "paths.h"
#include "run_services.h"
#include "source_line.h"
#include "uniflow.h"

#define EXIT_USAGE 2

/* ------------------------------------------------------------------------------
 * Help texts
 * ------------------------------------------------------------------------------ */

static const char overall_usage[] =
    "usage: uniflow <command> [options] [arguments]\n"
    "\n"
    "Check, draw, run and replay libuniflow feature definitions (JSON files).\n"
    "\n"
    "commands:\n"
    "  check DEFS...                   validate definition files\n"
    "  graph DEFS... [--feature F]     print the features as Graphviz DOT\n"
    "  run DEFS... ACTIONS.jsonl       submit actions, print every mutation\n"
    "  paths DEFS... [--feature F]     print a shortest action path to every state\n"
    "  replay DEFS... JOURNAL          print the model a journal ends with\n"
    "  import xstate MACHINE.json      print an XState machine as a definition\n"
    "  inspect DEFS... --journal FILE  serve a journal's live model in a browser\n"
    "  follow DEFS... --nats URL ...   print a shared model's mutations as they happen\n"
    "  help [COMMAND]                  show this help, or a command's\n"
    "\n"
    "options:\n"
    "  -h, --help                      show help (also after a command)\n"
    "  --version                       print the versions of the tool and library\n"
    "\n"
    "Definition files are registered in the order given. Exit status: 0 success,\n"
    "1 a definition, action, journal or file failed, 2 a usage error.\n";

static const char check_usage[] =
    "usage: uniflow check DEFS...\n"
    "\n"
    "Registers each definition file, in order, into one fresh dispatcher and reports\n"
    "\"FILE: ok\" on stdout or \"FILE:LINE: PATH: MESSAGE\" on stderr, e.g.\n"
    "  defs/a.json:7: features[0].states.X.fields.y: unknown type 'nubmer'\n"
    "(LINE is where the element PATH names starts; a JSON error gives its own line\n"
    "and column instead).\n"
    "A file that fails is not registered; the files after it are still checked.\n"
    "\n"
    "Exit status: 0 if every file is valid, 1 otherwise, 2 on a usage error.\n";

static const char graph_usage[] =
    "usage: uniflow graph DEFS... [--feature F]\n"
    "\n"
    "Prints the registered features as Graphviz DOT on stdout: states as nodes\n"
    "(initial states with a double border), declared transitions as edges, model\n"
    "bindings as dashed edges labelled with their scenario. Render it with e.g.\n"
    "  uniflow graph defs/*.json | dot -Tpng > graph.png\n"
    "\n"
    "options:\n"
    "  --feature F    draw only feature F (and its bindings)\n"
    "\n"
    "Exit status: 0 on success, 1 if a file or the feature is bad, 2 on a usage error.\n";

static const char run_usage[] =
    "usage: uniflow run [--journal PATH] [--reporting LEVEL] [--clock CLOCK] DEFS... ACTIONS.jsonl\n"
    "\n"
    "Registers the definitions, then submits each non-empty line of ACTIONS.jsonl (one\n"
    "action as JSON per line). Every mutation, including those made by bindings, is\n"
    "printed on stdout as one JSON line. An action that fails is reported on stderr as\n"
    "  ACTIONS.jsonl:LINE: UF_REJECTED: message\n"
    "and the following lines are still submitted. A line {\"advance_ms\": N} moves a\n"
    "manual clock on by N ms, firing the timers due (their mutations are printed like\n"
    "the others); a line {\"path\": ...} (a header `uniflow paths` prints) starts the\n"
    "next path from an empty model.\n"
    "\n"
    "options:\n"
    "  --journal PATH     journal every registration and mutation to PATH (JSON\n"
    "                     lines, appended to); replay it with `uniflow replay`\n"
    "  --reporting LEVEL  none (default), short or verbose: the library's reports\n"
    "                     (bindings included) on stderr\n"
    "  --clock CLOCK      manual: a clock that moves only with advance_ms lines;\n"
    "                     monotonic: the real one, where timers fire on the\n"
    "                     library's thread (default: manual if a line advances\n"
    "                     the clock or heads a path, else monotonic)\n"
    "\n"
    "Exit status: 0 if every action was applied, 1 otherwise, 2 on a usage error.\n";

static const char paths_usage[] =
    "usage: uniflow paths DEFS... [--feature F]\n"
    "\n"
    "Registers the definitions, then prints for every state of every feature (or of\n"
    "F) one shortest action path from an empty model, as lines `uniflow run`\n"
    "accepts, each path headed by\n"
    "  {\"path\": \"F.S\", \"guarded\": false}\n"
    "An initialize enters an initial state, then sends follow `on` and transitions\n"
    "follow `transitions`; payloads hold zero values of the required fields; a keyed\n"
    "feature's instance is \"k\". A path is guarded when a step depends on a guard\n"
    "(if or call). States no path reaches are named on stderr.\n"
    "\n"
    "Exit status: 0 if every state is reachable, 1 otherwise or if a file is bad, 2\n"
    "on a usage error.\n";

static const char replay_usage[] =
    "usage: uniflow replay DEFS... JOURNAL\n"
    "\n"
    "Registers the definitions (the same files, in the same order, as the run that\n"
    "wrote the journal), installs the journal's mutations and prints the resulting\n"
    "model as JSON on stdout. A torn last line (a writer that crashed) is skipped\n"
    "with a note on stderr; any other bad line fails the replay.\n"
    "\n"
    "Exit status: 0 on success, 1 if a file or the journal is bad, 2 on a usage error.\n";

static const char import_usage[] =
    "usage: uniflow import xstate MACHINE.json [--feature NAME]\n"
    "\n"
    "Converts an XState v5 machine config, written as JSON, into one libuniflow\n"
    "feature definition and prints it on stdout (JSON indented by two spaces, keys\n"
    "in a fixed order). Converted: states, initial, `on` (named guards become host\n"
    "handlers: {\"call\": name}), numeric `after` delays (state timers), `context`\n"
    "(a field of type any on every state), `type: \"final\"`, descriptions; the\n"
    "output declares every transition it uses. Names that are not libuniflow names\n"
    "are converted (traffic-light -> traffic_light).\n"
    "\n"
    "Skipped, with a note on stderr, as they change nothing at run time: the\n"
    "machine's types, tsTypes and schema (TypeScript's), predictableActionArguments\n"
    "and preserveActionOrder (XState v4's), e.g.\n"
    "  machine.json:3: types: skipped: TypeScript's types for the machine; ...\n"
    "\n"
    "Anything else (nested or parallel states, invoke, entry, exit, always, actions,\n"
    "guards with parameters, XState's built-in guards, targets into child states\n"
    "('a.b', '.child') and by id ('#id'), tags, meta, ...) refuses the machine:\n"
    "stderr names the first element it cannot convert, e.g.\n"
    "  machine.json:7: states.red.states: nested states are not supported\n"
    "\n"
    "options:\n"
    "  --feature NAME   the feature's name (default: the machine's id, else the\n"
    "                   file's name without .json)\n"
    "\n"
    "Exit status: 0 on success, 1 if the file cannot be read or the machine is\n"
    "refused, 2 on a usage error.\n";

static const char inspect_usage[] =
    "usage: uniflow inspect DEFS... --journal FILE [--host HOST] [--port PORT] [--allow-submit]\n"
    "\n"
    "Serve the live model of a journal in a browser, as the journal grows: every\n"
    "feature and instance, the mutation log with filters, the graph, the armed\n"
    "timers and time travel (docs/inspector.md). The first line printed is the\n"
    "page's URL with its token; a request without the token is refused.\n"
    "\n"
    "options:\n"
    "  --journal FILE   the journal to follow (written with the same DEFS)\n"
    "  --host HOST      the address to listen on (default 127.0.0.1)\n"
    "  --port PORT      the port (default 0: any free port)\n"
    "  --allow-submit   let the page try actions on a copy of the model\n"
    "\n"
    "Runs `python3 -m uniflow.inspect` with these arguments ($UNIFLOW_PYTHON\n"
    "instead of python3 when set): the Python package and aiohttp must be\n"
    "installed (pip install 'bindings/python[inspect]').\n"
    "\n"
    "Exit status: 0 when stopped, 1 if a file or the journal is bad, 2 on a usage\n"
    "error.\n";

static const char follow_usage[] =
    "usage: uniflow follow DEFS... --nats URL --model NAME --partitions N [--from-start]\n"
    "\n"
    "Follow a model that nodes share through NATS JetStream (libuniflow_nats): join\n"
    "it as a node that owns nothing, and print every mutation (the JSON of\n"
    "uf_mutation_json) one per line as its record arrives, until interrupted.\n"
    "DEFS and N must be those of the writing nodes.\n"
    "\n"
    "options:\n"
    "  --nats URL        the server, e.g. nats://127.0.0.1:4222\n"
    "  --model NAME      the model (its stream is UF_NAME)\n"
    "  --partitions N    the writers' number of partitions\n"
    "  --from-start      print the history the stream still holds first\n"
    "\n"
    "Only where the NATS adapter was built (libnats found at build time).\n"
    "Exit status: 0 when interrupted, 1 if a file is bad or the server cannot be\n"
    "followed, 2 on a usage error.\n";

/* ------------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------------ */

/* The help of the command being run (the overall help until one is chosen), for
 * usage errors. */
static const char *current_usage = overall_usage;
static const char *current_name = "uniflow";

/* Prints "uniflow: <problem>", the usage line of the current help text and where
 * to read more; returns EXIT_USAGE. */
static int usage_error(const char *fmt, const char *arg) {
    fputs("uniflow: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    fwrite(current_usage, 1, strcspn(current_usage, "\n") + 1, stderr);
    fprintf(stderr, "Try '%s --help' for more information.\n", current_name);
    return EXIT_USAGE;
}

/* Reads a whole file as a NUL-terminated string (NULL, with *message set to what
 * follows "FILE: " in the error, on failure). A NUL byte inside the file would cut
 * the text short unseen, so it is an error of its own, which names its line (the
 * file itself was read). */
static char *read_file(const char *path, const char **message) {
    static char why[128];
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        snprintf(why, sizeof why, "cannot read: %s", strerror(errno));
        *message = why;
        return NULL;
    }
    size_t size = 0, capacity = 4096;
    char *text = malloc(capacity);
    for (;;) {
        if (text == NULL) {
            fclose(file);
            *message = "cannot read: out of memory";
            return NULL;
        }
        size += fread(text + size, 1, capacity - size - 1, file);
        if (size < capacity - 1) break;
        capacity *= 2;
        char *bigger = realloc(text, capacity);
        if (bigger == NULL) free(text);
        text = bigger;
    }
    int failed = ferror(file);
    int error = errno;
    fclose(file);
    if (failed) {
        free(text);
        snprintf(why, sizeof why, "cannot read: %s", strerror(error));
        *message = why;
        return NULL;
    }
    text[size] = '\0';
    if (strlen(text) != size) {
        size_t line = 1;
        for (const char *c = text; *c; c++) line += *c == '\n';
        snprintf(why, sizeof why, "line %zu: contains a NUL byte", line);
        free(text);
        *message = why;
        return NULL;
    }
    return text;
}

/* Appends `text` as a JSON string (quotes included) to buf; 0 if it does not fit. */
static int json_quoted(char *buf, size_t size, const char *text) {
    size_t n = 0;
#define PUT(ch) do { if (n + 1 >= size) return 0; buf[n++] = (ch); } while (0)
    PUT('"');
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\') {
            PUT('\\');
            PUT((char)*c);
        } else if (*c < 0x20) {
            char escape[8];
            snprintf(escape, sizeof escape, "\\u%04x", *c);
            for (const char *e = escape; *e; e++) PUT(*e);
        } else {
            PUT((char)*c);
        }
    }
    PUT('"');
#undef PUT
    buf[n] = '\0';
    return 1;
}

/* ------------------------------------------------------------------------------
 * Placeholder handlers (see the comment at the top)
 * ------------------------------------------------------------------------------ */

/* Whether a handler call is a statechart's guard or effect: it has no mutation,
 * and its instance lists its active states (a flat event guard's does not). */
static int statechart_call(const uf_binding_call *call) {
    if (strcmp(uf_binding_call_mutation_json(call), "null") != 0) return 0;
    json_t *given = json_loads(uf_binding_call_given_json(call), 0, NULL);
    int chart = json_is_array(json_object_get(json_object_get(given, "feature"), "active"));
    json_decref(given);
    return chart;
}

static int placeholder_handler(uf_binding_call *call, void *payload) {
    (void)payload;
    /* A statechart's guard or effect gets "no": the guard fails and the effect
     * assigns nothing, so that a path `uniflow paths` printed runs as it was
     * found. Anything else fails, as it always has. */
    return statechart_call(call) ? 0 : -1;
}

/* Registers a placeholder under every string a "call" member holds anywhere in
 * the definitions (event targets, given, then, guards and effects), and a
 * placeholder service under every "src" (an invoke's): adding them one refusal at a time
 * instead cost a whole registration per handler. A name the library refuses, or
 * one already registered, is left to uf_register to report. */
static void add_placeholders(uf_dispatcher *d, json_t *value) {
    if (json_is_object(value)) {
        const char *key;
        json_t *member;
        json_object_foreach(value, key, member) {
            if (strcmp(key, "call") == 0 && json_is_string(member)) {
                (void)uf_register_handler(d, json_string_value(member), placeholder_handler, NULL, NULL);
            } else if (strcmp(key, "src") == 0 && json_is_string(member)) {
                (void)register_placeholder_service(d, json_string_value(member));
            } else {
                add_placeholders(d, member);
            }
        }
    } else if (json_is_array(value)) {
        size_t i;
        json_t *item;
        json_array_foreach(value, i, item) add_placeholders(d, item);
    }
}

/* The handler name of an "unknown handler 'NAME'" message (freed by the caller);
 * NULL if the message is not about a handler. */
static char *unknown_handler_name(const char *message) {
    static const char marker[] = "unknown handler '";
    const char *start = strstr(message, marker);
    if (start == NULL) return NULL;
    start += sizeof marker - 1;
    const char *end = strrchr(start, '\'');
    return end == NULL ? NULL : strndup(start, (size_t)(end - start));
}

/* Registers one definition file. On failure prints "FILE: message" on stderr and
 * returns the status. */
static int register_file(uf_dispatcher *d, const char *path) {
    const char *why = NULL;
    char *text = read_file(path, &why);
    if (text == NULL) {
        fprintf(stderr, "%s: %s\n", path, why);
        return UF_EIO;
    }
    json_t *parsed = json_loads(text, 0, NULL);
    add_placeholders(d, parsed);
    json_decref(parsed);
    int status;
    for (;;) {
        status = uf_register(d, text);
        char *name = status == UF_ENOTFOUND ? unknown_handler_name(uf_last_error()) : NULL;
        if (name == NULL) break;
        /* One the walk above could not see: add it and try again (registration is
         * all or nothing). A second refusal for the same name (the handler exists)
         * ends the loop. */
        int added = uf_register_handler(d, name, placeholder_handler, NULL, NULL);
        free(name);
        if (added != UF_OK) {
            status = uf_register(d, text); /* brings the registration's message back */
            break;
        }
    }
    if (status != UF_OK) {
        /* "FILE:LINE: PATH: MESSAGE" when the message names an element of the file
         * (a JSON error already says "line L, column C"). */
        unsigned long line = line_of_path(text, uf_last_error());
        if (line > 0) fprintf(stderr, "%s:%lu: %s\n", path, line, uf_last_error());
        else fprintf(stderr, "%s: %s\n", path, uf_last_error());
    }
    free(text);
    return status;
}

static uf_dispatcher *new_dispatcher(const char *options_json) {
    uf_dispatcher *d = NULL;
    if (uf_dispatcher_new(&d, options_json) != UF_OK) {
        fprintf(stderr, "uniflow: %s: %s\n", uf_status_name(uf_last_status()), uf_last_error());
        return NULL;
    }
    return d;
}

/* ------------------------------------------------------------------------------
 * Arguments: options may come anywhere after the command; "--" ends them.
 * ------------------------------------------------------------------------------ */

typedef struct arguments {
    const char **operands;
    int count;
    int help;
    const char *feature;    /* graph --feature */
    const char *journal;    /* run --journal */
    const char *reporting;  /* run --reporting */
    const char *clock;      /* run --clock */
    const char *nats;       /* follow --nats */
    const char *model;      /* follow --model */
    const char *partitions; /* follow --partitions */
    int from_start;         /* follow --from-start (a flag) */
} arguments;

/* An option's value: "--name=value" or "--name value". NULL when missing. */
static const char *option_value(int argc, char **argv, int *i, const char *name) {
    size_t length = strlen(name);
    if (strncmp(argv[*i], name, length) != 0) return NULL;
    if (argv[*i][length] == '=') return argv[*i] + length + 1;
    if (argv[*i][length] != '\0') return NULL;
    if (*i + 1 >= argc) return NULL;
    return argv[++*i];
}

static int is_option(const char *arg, const char *name) {
    size_t length = strlen(name);
    return strncmp(arg, name, length) == 0 && (arg[length] == '\0' || arg[length] == '=');
}

/* Parses argv[first...]; `options` lists the value options the command takes.
 * Returns 0, or EXIT_USAGE after printing the error. */
static int parse_arguments(int argc, char **argv, int first, const char *const *options,
                           arguments *out) {
    memset(out, 0, sizeof *out);
    out->operands = malloc(sizeof(char *) * (size_t)(argc + 1));
    if (out->operands == NULL) {
        fputs("uniflow: out of memory\n", stderr);
        return 1;
    }
    int options_done = 0;
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        if (options_done || arg[0] != '-' || strcmp(arg, "-") == 0) {
            out->operands[out->count++] = arg;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            options_done = 1;
            continue;
        }
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            out->help = 1;
            continue;
        }
        int known = 0;
        /* The one flag that takes no value. */
        if (strcmp(arg, "--from-start") == 0) {
            for (const char *const *option = options; *option != NULL; option++)
                if (strcmp(*option, arg) == 0) known = out->from_start = 1;
            if (known) continue;
        }
        for (const char *const *option = options; *option != NULL; option++) {
            if (!is_option(arg, *option)) continue;
            known = 1;
            const char *value = option_value(argc, argv, &i, *option);
            if (value == NULL || value[0] == '\0') {
                return usage_error("option %s needs a value", *option);
            }
            if (strcmp(*option, "--feature") == 0) out->feature = value;
            else if (strcmp(*option, "--journal") == 0) out->journal = value;
            else if (strcmp(*option, "--reporting") == 0) out->reporting = value;
            else if (strcmp(*option, "--clock") == 0) out->clock = value;
            else if (strcmp(*option, "--nats") == 0) out->nats = value;
            else if (strcmp(*option, "--model") == 0) out->model = value;
            else if (strcmp(*option, "--partitions") == 0) out->partitions = value;
        }
        if (!known) return usage_error("unknown option '%s'", arg);
    }
    return 0;
}

/* ------------------------------------------------------------------------------
 * check
 * ------------------------------------------------------------------------------ */

static int command_check(const arguments *args) {
    if (args->count < 1) return usage_error("%s", "check needs definition files");
    uf_dispatcher *d = new_dispatcher(NULL);
    if (d == NULL) return 1;
    int failed = 0;
    for (int i = 0; i < args->count; i++) {
        if (register_file(d, args->operands[i]) == UF_OK) {
            printf("%s: ok\n", args->operands[i]);
        } else {
            failed = 1;
        }
    }
    uf_dispatcher_free(d);
    return failed;
}

/* ------------------------------------------------------------------------------
 * graph
 * ------------------------------------------------------------------------------ */

/* A fresh dispatcher made with `options_json` (NULL: none) with every file of
 * `files` registered, in order, or NULL (the failing file reported). */
static uf_dispatcher *registered_dispatcher(const char *options_json, const char **files, int count) {
    uf_dispatcher *d = new_dispatcher(options_json);
    if (d == NULL) return NULL;
    for (int i = 0; i < count; i++) {
        if (register_file(d, files[i]) != UF_OK) {
            uf_dispatcher_free(d);
            return NULL;
        }
    }
    return d;
}

static int command_graph(const arguments *args) {
    if (args->count < 1) return usage_error("%s", "graph needs definition files");
    uf_dispatcher *d = registered_dispatcher(NULL, args->operands, args->count);
    if (d == NULL) return 1;
    int status = 0;
    char *dot = NULL;
    if (uf_graph_dot(d, args->feature, &dot) == UF_OK) {
        fputs(dot, stdout);
        uf_free(dot);
    } else {
        fprintf(stderr, "uniflow graph: %s: %s\n", uf_status_name(uf_last_status()), uf_last_error());
        status = 1;
    }
    uf_dispatcher_free(d);
    return status;
}

/* ------------------------------------------------------------------------------
 * run
 * ------------------------------------------------------------------------------ */

static int print_mutation(const uf_mutation *m, void *payload) {
    (void)payload;
    fputs(uf_mutation_json(m), stdout);
    fputc('\n', stdout);
    return UF_KEEP;
}

static int is_blank(const char *line) {
    for (; *line; line++) {
        if (*line != ' ' && *line != '\t' && *line != '\r' && *line != '\n') return 0;
    }
    return 1;
}

/* What a line of an actions file is, besides an action. */
enum control { LINE_ACTION, LINE_PATH, LINE_ADVANCE, LINE_SETTLE, LINE_ADVANCED, LINE_BAD };

/* {"advance_ms": ...} is an advance line (LINE_ADVANCE, of any shape: a malformed
 * one is refused when its turn comes), {"service_done": ...} or {"service_error":
 * ...} settles a statechart's service (LINE_SETTLE, run_services.c), {"path":
 * "..."} heads a path `uniflow paths` printed (LINE_PATH), anything else is an
 * action for the library to judge (LINE_ACTION). `*parsed` is the line's JSON
 * for the others, else NULL. */
static enum control line_kind(const char *line, json_t **parsed) {
    *parsed = NULL;
    if (strstr(line, "\"advance_ms\"") == NULL && strstr(line, "\"path\"") == NULL
        && strstr(line, "\"service_") == NULL) {
        return LINE_ACTION;
    }
    json_t *value = json_loads(line, 0, NULL);
    enum control kind = LINE_ACTION;
    if (json_is_object(value) && json_object_get(value, "advance_ms") != NULL) {
        kind = LINE_ADVANCE;
    } else if (is_settle_line(value)) {
        kind = LINE_SETTLE;
    } else if (json_is_object(value) && json_is_string(json_object_get(value, "path"))
               && json_object_get(value, "kind") == NULL) {
        kind = LINE_PATH;
    }
    if (kind == LINE_ACTION) json_decref(value);
    else *parsed = value;
    return kind;
}

/* A line's kind, an advance or settle line done: {"advance_ms": N} advances a
 * manual clock and a settle line settles a service (LINE_ADVANCED, *advanced is
 * the call's status), or the line is LINE_BAD, with *problem saying why. */
static enum control control_line(const char *line, int manual, uf_dispatcher *d, const char **problem,
                                 int *advanced) {
    json_t *value;
    enum control kind = line_kind(line, &value);
    if (kind == LINE_ADVANCE) {
        json_t *ms = json_object_get(value, "advance_ms");
        if (json_object_size(value) != 1) {
            *problem = "an advance_ms line has no other member";
            kind = LINE_BAD;
        } else if (!json_is_integer(ms) || json_integer_value(ms) < 0) {
            *problem = "advance_ms: expected an integer >= 0";
            kind = LINE_BAD;
        } else if (!manual) {
            *problem = "advance_ms needs a manual clock: run with --clock manual";
            kind = LINE_BAD;
        } else {
            *advanced = uf_clock_advance(d, (uint64_t)json_integer_value(ms));
            kind = LINE_ADVANCED;
        }
    } else if (kind == LINE_SETTLE) {
        *problem = NULL;
        *advanced = settle_service(d, value, problem);
        kind = *problem != NULL ? LINE_BAD : LINE_ADVANCED;
    }
    json_decref(value);
    return kind;
}

/* Whether the actions file is one for the manual clock: a line advances it, or it
 * holds paths `uniflow paths` printed (whose timers must wait for their steps, not
 * fire on the real clock while a path runs). Only a file that can be read twice is
 * looked at; it is left at its start. */
static int wants_manual_clock(FILE *actions) {
    if (fseek(actions, 0, SEEK_SET) != 0) return 0;
    char *line = NULL;
    size_t capacity = 0;
    int found = 0;
    while (!found && getline(&line, &capacity, actions) != -1) {
        json_t *value;
        found = line_kind(line, &value) != LINE_ACTION;
        json_decref(value);
    }
    free(line);
    if (fseek(actions, 0, SEEK_SET) != 0) found = 0;
    clearerr(actions);
    return found;
}

static int command_run(const arguments *args) {
    if (args->count < 2) {
        return usage_error("%s", "run needs definition files and an actions file");
    }
    const char *reporting = args->reporting ? args->reporting : "none";
    if (strcmp(reporting, "none") != 0 && strcmp(reporting, "short") != 0 && strcmp(reporting, "verbose") != 0) {
        return usage_error("unknown reporting level '%s' (none, short or verbose)", reporting);
    }
    const char *clock = args->clock ? args->clock : "monotonic";
    if (strcmp(clock, "monotonic") != 0 && strcmp(clock, "manual") != 0) {
        return usage_error("unknown clock '%s' (monotonic or manual)", clock);
    }
    const char *actions_path = args->operands[args->count - 1];
    FILE *actions = fopen(actions_path, "rb");
    if (actions == NULL) {
        fprintf(stderr, "%s: cannot read: %s\n", actions_path, strerror(errno));
        return 1;
    }
    /* Unless --clock says otherwise: what `uniflow paths` prints runs as it is. */
    if (args->clock == NULL && wants_manual_clock(actions)) clock = "manual";
    int manual = strcmp(clock, "manual") == 0;
    char options[8192];
    int written = snprintf(options, sizeof options, "{\"reporting\": \"%s\", \"clock\": \"%s\"", reporting, clock);
    if (args->journal != NULL) {
        char path[sizeof options];
        if (!json_quoted(path, sizeof path, args->journal)) {
            fprintf(stderr, "uniflow run: journal path too long\n");
            fclose(actions);
            return 1;
        }
        written += snprintf(options + written, sizeof options - (size_t)written, ", \"journal\": %s", path);
    }
    if (written < 0 || (size_t)written + 2 > sizeof options) {
        fprintf(stderr, "uniflow run: journal path too long\n");
        fclose(actions);
        return 1;
    }
    strcat(options, "}");

    uf_dispatcher *d = new_dispatcher(options);
    if (d == NULL) {
        fclose(actions);
        return 1;
    }
    int failed = 0;
    for (int i = 0; i < args->count - 1 && !failed; i++) {
        if (register_file(d, args->operands[i]) != UF_OK) failed = 1;
    }
    if (!failed && uf_subscribe(d, NULL, print_mutation, NULL, NULL, NULL) != UF_OK) {
        fprintf(stderr, "uniflow run: %s: %s\n", uf_status_name(uf_last_status()), uf_last_error());
        failed = 1;
    }
    if (!failed) {
        char *line = NULL;
        size_t capacity = 0;
        ssize_t length;
        unsigned long number = 0;
        while ((length = getline(&line, &capacity, actions)) != -1) {
            number++;
            if ((size_t)length != strlen(line)) {
                fflush(stdout);
                fprintf(stderr, "%s:%lu: UF_EJSON: the line contains a NUL byte\n", actions_path, number);
                failed = 1;
                continue;
            }
            if (is_blank(line)) continue;
            /* Without its line end, so that a JSON error's "line 1, column N" is this line's. */
            while (length > 0 && (line[length - 1] == '\n' || line[length - 1] == '\r')) line[--length] = '\0';
            const char *problem = NULL;
            int status, advanced = UF_OK;
            switch (control_line(line, manual, d, &problem, &advanced)) {
            case LINE_ACTION: status = uf_submit(d, line); break;
            /* Each path starts from nothing: the model is emptied, silently (a
             * restore sends no mutation), so that the whole output of `paths`
             * runs as it is. */
            case LINE_PATH: status = uf_state_restore(d, "{}"); break;
            case LINE_ADVANCED: status = advanced; break;
            default:
                fflush(stdout);
                fprintf(stderr, "%s:%lu: UF_ESCHEMA: %s\n", actions_path, number, problem);
                failed = 1;
                continue;
            }
            if (status < 0) {
                /* stdout first, so that a terminal shows the lines in order. */
                fflush(stdout);
                fprintf(stderr, "%s:%lu: %s: %s\n", actions_path, number, uf_status_name(status), uf_last_error());
                failed = 1;
            }
        }
        if (ferror(actions)) {
            fprintf(stderr, "%s: cannot read: %s\n", actions_path, strerror(errno));
            failed = 1;
        }
        free(line);
    }
    fclose(actions);
    uf_dispatcher_free(d);
    return failed;
}

/* ------------------------------------------------------------------------------
 * paths
 * ------------------------------------------------------------------------------ */

static int command_paths(const arguments *args) {
    if (args->count < 1) return usage_error("%s", "paths needs definition files");
    uf_dispatcher *d = registered_dispatcher(NULL, args->operands, args->count);
    if (d == NULL) return 1;
    int status = 0;
    char *text = NULL;
    if (uf_definitions_get(d, &text) != UF_OK) {
        fprintf(stderr, "uniflow paths: %s: %s\n", uf_status_name(uf_last_status()), uf_last_error());
        status = 1;
    }
    if (status == 0) {
        json_t *definitions = json_loads(text, 0, NULL);
        status = print_paths(definitions, args->feature, stdout, stderr);
        json_decref(definitions);
    }
    uf_free(text);
    uf_dispatcher_free(d);
    return status;
}

/* ------------------------------------------------------------------------------
 * replay
 * ------------------------------------------------------------------------------ */

static int command_replay(const arguments *args) {
    if (args->count < 2) {
        return usage_error("%s", "replay needs definition files and a journal");
    }
    /* "short" reporting: the only report a replay makes is the note about a torn
     * last line, printed by the library's reporter on stderr. */
    uf_dispatcher *d = new_dispatcher("{\"reporting\": \"short\"}");
    if (d == NULL) return 1;
    int failed = 0;
    for (int i = 0; i < args->count - 1 && !failed; i++) {
        if (register_file(d, args->operands[i]) != UF_OK) failed = 1;
    }
    if (!failed && uf_replay_file(d, args->operands[args->count - 1]) != UF_OK) {
        fprintf(stderr, "uniflow replay: %s: %s\n", uf_status_name(uf_last_status()), uf_last_error());
        failed = 1;
    }
    if (!failed) {
        char *model = NULL;
        if (uf_state_get(d, &model) == UF_OK) {
            printf("%s\n", model);
            uf_free(model);
        } else {
            fprintf(stderr, "uniflow replay: %s: %s\n", uf_status_name(uf_last_status()), uf_last_error());
            failed = 1;
        }
    }
    uf_dispatcher_free(d);
    return failed;
}

/* ------------------------------------------------------------------------------
 * import
 * ------------------------------------------------------------------------------ */

static int command_import(const arguments *args) {
    if (args->count < 1) return usage_error("%s", "import needs a format (xstate) and a file");
    if (strcmp(args->operands[0], "xstate") != 0) {
        return usage_error("unknown import format '%s' (xstate)", args->operands[0]);
    }
    if (args->count != 2) {
        return usage_error("%s", args->count < 2 ? "import xstate needs a machine file"
                                                  : "import xstate takes one machine file");
    }
    const char *path = args->operands[1];
    const char *why = NULL;
    char *text = read_file(path, &why);
    if (text == NULL) {
        fprintf(stderr, "%s: %s\n", path, why);
        return 1;
    }
    char *definition = NULL, *error = NULL;
    unsigned long line = 0;
    uniflow_import_note *notes = NULL;
    size_t note_count = 0;
    int status = uniflow_import_xstate(text, strlen(text), args->feature, path, &definition, &error, &line,
                                       &notes, &note_count);
    free(text);
    /* What was skipped, in the same form ("FILE:LINE: PATH: skipped: why"). */
    for (size_t i = 0; i < note_count; i++) fprintf(stderr, "%s:%lu: %s\n", path, notes[i].line, notes[i].message);
    uniflow_import_free_notes(notes, note_count);
    if (status != UNIFLOW_IMPORT_OK) {
        /* "FILE:LINE: PATH: MESSAGE", as `check` reports a definition. */
        const char *message = error != NULL ? error : "out of memory";
        if (line > 0) fprintf(stderr, "%s:%lu: %s\n", path, line, message);
        else fprintf(stderr, "%s: %s\n", path, message);
        free(error);
        return 1;
    }
    fputs(definition, stdout);
    free(definition);
    return 0;
}

/* ------------------------------------------------------------------------------
 * inspect
 * ------------------------------------------------------------------------------ */

/* Replaces this process with `python3 -m uniflow.inspect ARGS...` (argv from the
 * argument after "inspect"): the inspector is the Python package's. Its own
 * arguments are the module's to check. Returns only when the exec failed. */
static int exec_inspect(int argc, char **argv) {
    const char *python = getenv("UNIFLOW_PYTHON");
    if (python == NULL || python[0] == '\0') python = "python3";
    char **child = malloc(sizeof(char *) * (size_t)(argc + 2));
    if (child == NULL) {
        fputs("uniflow: out of memory\n", stderr);
        return 1;
    }
    int n = 0;
    child[n++] = (char *)python;
    child[n++] = "-m";
    child[n++] = "uniflow.inspect";
    for (int i = 2; i < argc; i++) child[n++] = argv[i];
    child[n] = NULL;
    fflush(stdout);
    execvp(python, child);
    fprintf(stderr, "uniflow inspect: cannot run %s: %s (the inspector is the Python package's: "
                    "python3 -m uniflow.inspect)\n", python, strerror(errno));
    free(child);
    return 1;
}

/* The inspector's help, without Python: -h or --help before "--". */
static int wants_help(int argc, char **argv) {
    for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------
 * follow (follow.c)
 * ------------------------------------------------------------------------------ */

#ifdef UNIFLOW_WITH_NATS
static int command_follow(const arguments *args) {
    if (args->count < 1) return usage_error("%s", "follow needs definition files");
    if (!args->nats) return usage_error("%s", "follow needs --nats URL");
    if (!args->model) return usage_error("%s", "follow needs --model NAME");
    if (!args->partitions) return usage_error("%s", "follow needs --partitions N");
    return follow_run(args->operands, args->count, args->nats, args->model, args->partitions,
                      args->from_start, registered_dispatcher);
}
#else
static int command_follow(const arguments *args) {
    (void)args;
    fputs("uniflow follow: this uniflow was built without the NATS adapter (libuniflow_nats "
          "needs libnats at build time; Debian: apt-get install libnats-dev, then build again)\n", stderr);
    return 1;
}
#endif

/* ------------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------------ */

typedef struct command {
    const char *name;
    int (*run)(const arguments *);
    const char *usage;
    const char *help_name;   /* "uniflow run" */
    const char *const *options;
} command;

static const char *const no_options[] = {NULL};
static const char *const feature_options[] = {"--feature", NULL};
static const char *const run_options[] = {"--journal", "--reporting", "--clock", NULL};
static const char *const follow_options[] = {"--nats", "--model", "--partitions", "--from-start", NULL};

static const command commands[] = {
    {"check", command_check, check_usage, "uniflow check", no_options},
    {"graph", command_graph, graph_usage, "uniflow graph", feature_options},
    {"run", command_run, run_usage, "uniflow run", run_options},
    {"paths", command_paths, paths_usage, "uniflow paths", feature_options},
    {"replay", command_replay, replay_usage, "uniflow replay", no_options},
    {"import", command_import, import_usage, "uniflow import", feature_options},
    /* Its arguments go to python3 -m uniflow.inspect as they are (main). */
    {"inspect", NULL, inspect_usage, "uniflow inspect", no_options},
    {"follow", command_follow, follow_usage, "uniflow follow", follow_options},
};

static const command *find_command(const char *name) {
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    }
    return NULL;
}

/* The exit status once stdout is flushed: output that could not be written (a
 * full disk, a closed pipe) fails the command, whatever it was. */
static int finish_output(int status) {
    int error = fflush(stdout) != 0 ? errno : 0;
    if (error == 0 && !ferror(stdout)) return status;
    /* A write that failed earlier (run flushes between lines) left no errno here. */
    if (error) fprintf(stderr, "uniflow: cannot write the output: %s\n", strerror(error));
    else fputs("uniflow: cannot write the output\n", stderr);
    return status == 0 ? 1 : status;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage_error("%s", "no command given");
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
        fputs(overall_usage, stdout);
        return finish_output(0);
    }
    if (strcmp(name, "--version") == 0) {
        printf("uniflow %s (libuniflow %s)\n", UNIFLOW_VERSION, uf_version());
        return finish_output(0);
    }
    if (strcmp(name, "help") == 0) {
        if (argc < 3) {
            fputs(overall_usage, stdout);
            return finish_output(0);
        }
        const command *topic = find_command(argv[2]);
        if (topic == NULL) return usage_error("unknown command '%s'", argv[2]);
        fputs(topic->usage, stdout);
        return finish_output(0);
    }
    const command *chosen = find_command(name);
    if (chosen == NULL) {
        const char *problem = name[0] == '-' ? "unknown option '%s'" : "unknown command '%s'";
        return usage_error(problem, name);
    }
    if (chosen->run == NULL) { /* inspect */
        if (wants_help(argc, argv)) {
            fputs(chosen->usage, stdout);
            return finish_output(0);
        }
        return exec_inspect(argc, argv);
    }
    arguments args;
    current_usage = chosen->usage;
    current_name = chosen->help_name;
    int status = parse_arguments(argc, argv, 2, chosen->options, &args);
    if (status == 0) {
        if (args.help) {
            fputs(chosen->usage, stdout);
        } else {
            status = chosen->run(&args);
        }
    }
    free(args.operands);
    return finish_output(status);
}
