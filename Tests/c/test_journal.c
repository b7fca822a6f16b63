/*
 * test_journal.c — a journal that cannot be written (docs/journal.md and the
 * header's uf_dispatcher_new options): the journal is written ahead, so an action, a batch,
 * a restore or a registration whose line cannot be written fails with UF_EIO,
 * names the journal and the reason, notifies nobody but the reporter and changes
 * nothing; the file keeps no partial line, and once writing works again the
 * journal replays to exactly the model the dispatcher has.
 *
 * A full disk is simulated with RLIMIT_FSIZE (write fails with EFBIG once the
 * file would grow past the limit) in this process of its own, and with /dev/full;
 * a disk that cannot sync, with an fsync of this program's that fails.
 */
#define _GNU_SOURCE /* RTLD_NEXT */

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

/* The library's fsync and ftruncate, failing on request (a disk that reports
 * EIO): the program's definitions come before libc's for the library's calls too. */
static int fail_fsync, fail_ftruncate, fail_pread;
int fsync(int fd) {
    if (fail_fsync) {
        errno = EIO;
        return -1;
    }
    return fdatasync(fd);  /* enough for a test: the data reach the disk */
}
int ftruncate(int fd, off_t length) {
    static int (*real)(int, off_t);
    if (fail_ftruncate) {
        errno = EIO;
        return -1;
    }
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "ftruncate");
    return real(fd, length);
}
ssize_t pread(int fd, void *buffer, size_t count, off_t offset) {
    static ssize_t (*real)(int, void *, size_t, off_t);
    if (fail_pread) {
        errno = EIO;
        return -1;
    }
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "pread");
    return real(fd, buffer, count, offset);
}

static void act(uf_dispatcher *d, int val, int expected) {
    char action[200];
    snprintf(action, sizeof action,
             "{\"kind\":\"actualize\",\"feature\":\"Main\",\"in\":\"Main\",\"payload\":{\"val\":%d}}", val);
    CHECK_STATUS(uf_submit(d, action), expected);
}

static const char *const main_feature =
    "[{\"feature\":\"Main\",\"states\":{\"Main\":{\"fields\":{\"val\":\"integer\"}}}},"
    " {\"feature\":\"Toggle\",\"states\":{\"Off\":{},\"On\":{}}}]";

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Lets the file grow by at most `room` bytes from now on (or without limit). */
static void limit_growth(const char *path, long room) {
    struct rlimit limit;
    limit.rlim_cur = room < 0 ? RLIM_INFINITY : (rlim_t)(file_size(path) + room);
    limit.rlim_max = RLIM_INFINITY;
    REQUIRE(setrlimit(RLIMIT_FSIZE, &limit) == 0);
}

/* A new empty file at path (a mkstemp template) and the options that journal to it. */
static void new_journal(char *path, char *options, size_t size) {
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    snprintf(options, size, "{\"journal\":\"%s\"}", path);
}

static void a_full_disk_fails_the_action_and_changes_nothing(void) {
    char path[] = "/tmp/uniflow-journal-XXXXXX";
    char options[256], expected[512];
    new_journal(path, options, sizeof options);
    uf_dispatcher *d = check_dispatcher(options, main_feature);
    check_list mutations = {0}, reports = {0};
    CHECK_STATUS(uf_subscribe(d, NULL, check_record_mutation, &mutations, NULL, NULL), UF_OK);
    CHECK_STATUS(uf_set_reporter(d, check_record_report, &reports, NULL), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Main\",\"into\":\"Main\",\"payload\":{\"val\":1}}"), UF_OK);
    const char *before = "{\"Main\":{\"state\":\"Main\",\"payload\":{\"val\":1}}}";
    long size = file_size(path);
    check_list_clear(&mutations);
    check_list_clear(&reports);

    /* Room for a few bytes only: the next line is cut off again. */
    limit_growth(path, 10);
    snprintf(expected, sizeof expected, "cannot write journal '%s': File too large", path);
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"actualize\",\"feature\":\"Main\",\"in\":\"Main\",\"payload\":{\"val\":2}}"),
                UF_EIO, expected);
    uf_action toggle = UF_ACTION_INIT;
    toggle.kind = UF_ACTION_INITIALIZE;
    toggle.feature = "Toggle";
    toggle.into = "On";
    CHECK_ERROR(uf_dispatch(d, &toggle), UF_EIO, expected);
    char batch_error[600];
    snprintf(batch_error, sizeof batch_error, "%s", expected);
    CHECK_ERROR(uf_submit_batch(d, "[{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}]"), UF_EIO, batch_error);
    CHECK_ERROR(uf_state_restore(d, "{\"Toggle\":{\"state\":\"On\"}}"), UF_EIO, expected);
    CHECK_STATE(d, before);
    CHECK(mutations.count == 0);
    CHECK(file_size(path) == size);
    /* The reporter hears of each action that failed (a restore is no action). */
    CHECK(reports.count == 3);
    CHECK(check_list_count(&reports, "\"event\":\"rejected\"") == 3);
    CHECK(check_list_count(&reports, "\"status\":\"UF_EIO\"") == 3);

    /* Room again: everything works, and the journal replays to this model. */
    limit_growth(path, -1);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"actualize\",\"feature\":\"Main\",\"in\":\"Main\",\"payload\":{\"val\":3}}"), UF_OK);
    CHECK_STATUS(uf_dispatch(d, &toggle), UF_OK);
    const char *after = "{\"Main\":{\"state\":\"Main\",\"payload\":{\"val\":3}},\"Toggle\":{\"state\":\"On\",\"payload\":{}}}";
    CHECK_STATE(d, after);
    uf_dispatcher *reader = check_dispatcher(NULL, main_feature);
    CHECK_STATUS(uf_replay_file(reader, path), UF_OK);
    CHECK_STATE(reader, after);
    uf_dispatcher_free(reader);

    uf_dispatcher_free(d);
    check_list_clear(&mutations);
    check_list_clear(&reports);
    unlink(path);
}

static int remember_serial(const uf_invocation *inv, void *payload) {
    *(uint64_t *)payload = uf_invocation_serial(inv);
    return 0;
}

/* A service's result is journaled before the invocation stops: when its line
 * cannot be written, uf_service_done fails, and the service runs on. */
static void a_service_result_that_cannot_be_journaled_fails_and_the_service_runs_on(void) {
    static const char *const fetcher = "{\"feature\":\"F\",\"states\":{\"Idle\":{\"on\":{\"load\":\"Loading\"}},"
                                       "\"Loading\":{\"invoke\":{\"src\":\"fetch\",\"id\":\"get\",\"onDone\":\"Idle\"}}}}";
    char path[] = "/tmp/uniflow-journal-XXXXXX";
    char options[256], expected[512];
    new_journal(path, options, sizeof options);
    uf_dispatcher *d = check_dispatcher(options, NULL);
    uint64_t serial = 0;
    CHECK_STATUS(uf_register_service(d, "fetch", remember_serial, NULL, &serial, NULL), UF_OK);
    CHECK_STATUS(uf_register(d, fetcher), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"F\",\"into\":\"Idle\"}"), UF_OK);
    CHECK_STATUS(uf_send(d, "F", NULL, "load", NULL), UF_OK);
    CHECK(serial != 0);
    const char *loading = "{\"F\":{\"state\":\"Loading\",\"payload\":{},"
                          "\"invocations\":[{\"id\":\"get\",\"src\":\"fetch\",\"input\":null}]}}";
    CHECK_STATE(d, loading);
    long size = file_size(path);

    limit_growth(path, 10);
    snprintf(expected, sizeof expected, "cannot write journal '%s': File too large", path);
    CHECK_ERROR(uf_service_done(d, serial, "1"), UF_EIO, expected);
    CHECK_STATE(d, loading);
    CHECK(file_size(path) == size);

    /* Room again: the same serial still runs, and its result is taken. */
    limit_growth(path, -1);
    CHECK_STATUS(uf_service_done(d, serial, "1"), UF_OK);
    CHECK_STATE(d, "{\"F\":{\"state\":\"Idle\",\"payload\":{}}}");
    uf_dispatcher_free(d);
    uf_dispatcher *reader = check_dispatcher(NULL, NULL);
    uint64_t replayed = 0;
    CHECK_STATUS(uf_register_service(reader, "fetch", remember_serial, NULL, &replayed, NULL), UF_OK);
    CHECK_STATUS(uf_register(reader, fetcher), UF_OK);
    CHECK_STATUS(uf_replay_file(reader, path), UF_OK);
    CHECK_STATE(reader, "{\"F\":{\"state\":\"Idle\",\"payload\":{}}}");
    CHECK(replayed == 0);
    uf_dispatcher_free(reader);
    unlink(path);
}

static void a_registration_that_cannot_be_journaled_registers_nothing(void) {
    uf_dispatcher *d = check_dispatcher("{\"journal\":\"/dev/full\"}", NULL);
    CHECK_ERROR(uf_register(d, main_feature), UF_EIO, "cannot write journal '/dev/full': No space left on device");
    char *definitions = NULL;
    CHECK_STATUS(uf_definitions_get(d, &definitions), UF_OK);
    CHECK_STR(definitions, "{\"features\":[]}");
    uf_free(definitions);
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"On\"}"), UF_ENOTFOUND,
                "unknown feature 'Toggle'");
    uf_dispatcher_free(d);
}

/* A dispatcher journaling to a new file (its name in path, a mkstemp template)
 * with journal_sync, Main initialized with val 1. */
static uf_dispatcher *synced_dispatcher(char *path) {
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    char options[256];
    snprintf(options, sizeof options, "{\"journal\":\"%s\",\"journal_sync\":true}", path);
    uf_dispatcher *d = check_dispatcher(options, main_feature);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Main\",\"into\":\"Main\",\"payload\":{\"val\":1}}"), UF_OK);
    return d;
}

/* The journal at path replays to model; the file goes. */
static void check_replays_to(char *path, const char *model) {
    uf_dispatcher *reader = check_dispatcher(NULL, main_feature);
    CHECK_STATUS(uf_replay_file(reader, path), UF_OK);
    CHECK_STATE(reader, model);
    uf_dispatcher_free(reader);
    unlink(path);
}

static void a_line_that_cannot_be_synced_is_taken_back(void) {
    char path[] = "/tmp/uniflow-journal-XXXXXX", expected[512];
    uf_dispatcher *d = synced_dispatcher(path);
    const char *before = "{\"Main\":{\"state\":\"Main\",\"payload\":{\"val\":1}}}";
    long size = file_size(path);

    /* Written, but not known to be on disk: the action fails, and a replay must
     * not apply what the dispatcher did not. */
    fail_fsync = 1;
    snprintf(expected, sizeof expected, "cannot sync journal '%s': Input/output error", path);
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"actualize\",\"feature\":\"Main\",\"in\":\"Main\",\"payload\":{\"val\":2}}"),
                UF_EIO, expected);
    fail_fsync = 0;
    CHECK_STATE(d, before);
    CHECK(file_size(path) == size);
    uf_dispatcher_free(d);
    check_replays_to(path, before);
}

static void a_line_that_cannot_be_cut_off_is_cut_before_the_next(void) {
    char path[] = "/tmp/uniflow-journal-XXXXXX", expected[512];
    uf_dispatcher *d = synced_dispatcher(path);
    long size = file_size(path);

    /* Neither synced nor cut off: the line stays in the file for now ... */
    fail_fsync = fail_ftruncate = 1;
    act(d, 2, UF_EIO);
    fail_fsync = 0;
    CHECK(file_size(path) > size);
    /* ... and nothing goes after it while it cannot be cut off ... */
    snprintf(expected, sizeof expected, "cannot repair journal '%s': Input/output error", path);
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"actualize\",\"feature\":\"Main\",\"in\":\"Main\",\"payload\":{\"val\":3}}"),
                UF_EIO, expected);
    /* ... then the next line cuts it first, and the lines after it stay whole. */
    fail_ftruncate = 0;
    act(d, 4, UF_OK);
    act(d, 5, UF_OK);
    fail_fsync = 1;
    act(d, 6, UF_EIO);
    fail_fsync = 0;
    act(d, 7, UF_OK);
    const char *after = "{\"Main\":{\"state\":\"Main\",\"payload\":{\"val\":7}}}";
    CHECK_STATE(d, after);
    uf_dispatcher_free(d);
    check_replays_to(path, after);
}

static void a_line_left_uncut_goes_when_the_dispatcher_is_freed(void) {
    char path[] = "/tmp/uniflow-journal-XXXXXX";
    uf_dispatcher *d = synced_dispatcher(path);
    long size = file_size(path);
    fail_fsync = fail_ftruncate = 1;
    act(d, 2, UF_EIO);
    fail_fsync = fail_ftruncate = 0;
    uf_dispatcher_free(d);
    CHECK(file_size(path) == size);
    check_replays_to(path, "{\"Main\":{\"state\":\"Main\",\"payload\":{\"val\":1}}}");
}

static void a_torn_line_that_cannot_be_read_is_not_appended_to(void) {
    char path[] = "/tmp/uniflow-journal-XXXXXX", options[256], expected[512];
    uf_dispatcher *d = synced_dispatcher(path);
    uf_dispatcher_free(d);
    FILE *file = fopen(path, "a");
    REQUIRE(file != NULL);
    fputs("{\"seq\":2,\"feat", file);  /* a crash in the middle of a line */
    fclose(file);
    long size = file_size(path);

    /* Where the torn line starts cannot be read: opening fails, appending nothing. */
    snprintf(options, sizeof options, "{\"journal\":\"%s\"}", path);
    snprintf(expected, sizeof expected, "cannot repair journal '%s': Input/output error", path);
    fail_pread = 1;
    d = NULL;
    CHECK_ERROR(uf_dispatcher_new(&d, options), UF_EIO, expected);
    fail_pread = 0;
    CHECK(d == NULL);
    CHECK(file_size(path) == size);
    /* Readable again: the torn line is cut, and the journal goes on whole. */
    CHECK_STATUS(uf_dispatcher_new(&d, options), UF_OK);
    CHECK_STATUS(uf_register(d, main_feature), UF_OK);
    uf_dispatcher_free(d);
    check_replays_to(path, "{}");
}

int main(void) {
    /* Writing past RLIMIT_FSIZE raises SIGXFSZ, which would end the process;
     * ignored, the write fails with EFBIG instead. */
    signal(SIGXFSZ, SIG_IGN);
    a_full_disk_fails_the_action_and_changes_nothing();
    a_service_result_that_cannot_be_journaled_fails_and_the_service_runs_on();
    a_registration_that_cannot_be_journaled_registers_nothing();
    a_line_that_cannot_be_synced_is_taken_back();
    a_line_that_cannot_be_cut_off_is_cut_before_the_next();
    a_line_left_uncut_goes_when_the_dispatcher_is_freed();
    a_torn_line_that_cannot_be_read_is_not_appended_to();
    return check_summary();
}
