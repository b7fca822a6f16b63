/*
 * test_known_bugs.c — core bugs these tests found, each as a minimal reproduction.
 *
 * Every check here states what the contract (Include/uniflow.h) promises and
 * fails today. ctest runs this program with WILL_FAIL: the suite stays green while
 * the bugs are open, and this test turns red once every one is fixed. Then move
 * each check back to the suite named beside it and drop the file (and its line in
 * CMakeLists.txt).
 */
#include <stddef.h>

#include "check.h"

/* ---- 1. Registrations made while the dispatcher is being freed are never released ----
 * (test_misuse.c) uf_dispatcher_free calls the payload_free of every subscription,
 * of the reporter and of every handler. One of those callbacks may call back into
 * the dispatcher: uf_submit is refused (UF_EMISUSE, "the dispatcher is being
 * freed"), but uf_subscribe, uf_set_reporter and uf_register_handler return UF_OK,
 * and what they registered is dropped with the dispatcher without its own
 * payload_free ever running: "payload_free runs exactly once" breaks, and the
 * host leaks. Either refuse them while freeing (UF_EMISUSE, payload_free at once,
 * as for a failing uf_subscribe) or release what they add before the dispatcher
 * goes away. */

static int late_freed[3];
static int late_status[3] = {99, 99, 99};

static int keep(const uf_mutation *m, void *payload) {
    (void)m;
    (void)payload;
    return UF_KEEP;
}

static void ignore_report(const char *report, void *payload) {
    (void)report;
    (void)payload;
}

static int handle(uf_binding_call *call, void *payload) {
    (void)call;
    (void)payload;
    return 1;
}

static void count_late(void *payload) {
    ++*(int *)payload;
}

static int go_on(uf_context *ctx, void *payload) {
    (void)ctx;
    (void)payload;
    return 0;
}

static void subscribe_while_freed(void *payload) {
    late_status[0] = uf_subscribe((uf_dispatcher *)payload, NULL, keep, &late_freed[0], count_late, NULL);
}

static void set_reporter_while_freed(void *payload) {
    late_status[1] = uf_set_reporter((uf_dispatcher *)payload, ignore_report, &late_freed[1], count_late);
}

static void register_handler_while_freed(void *payload) {
    late_status[2] = uf_register_handler((uf_dispatcher *)payload, "zz_late", handle, &late_freed[2], count_late);
}

static void registrations_during_free_are_released(void) {
    uf_dispatcher *d = check_dispatcher(NULL, NULL);
    CHECK_STATUS(uf_subscribe(d, NULL, keep, d, subscribe_while_freed, NULL), UF_OK);
    CHECK_STATUS(uf_set_reporter(d, ignore_report, d, set_reporter_while_freed), UF_OK);
    CHECK_STATUS(uf_register_handler(d, "a_first", handle, d, register_handler_while_freed), UF_OK);
    uf_dispatcher_free(d);
    for (int i = 0; i < 3; ++i) {
        /* Accepted and released, or refused and released at once: released. */
        if (!CHECK(late_freed[i] == 1)) {
            fprintf(stderr, "    registration %d during uf_dispatcher_free returned %s and its payload_free ran %d times\n",
                    i, uf_status_name(late_status[i]), late_freed[i]);
        }
    }
}

/* ---- 2. A NUL escaped in a name selects a different feature or state ----
 * (test_input.c) JSON allows "\u0000" in strings and the core keeps it (names with
 * it fail the definition checks), but an action's feature and state names are
 * looked up as C strings: "Toggle\u0000junk" finds Toggle and "On\u0000xyz" finds
 * On, so this action initializes Toggle into On. It names no registered feature
 * and must be UF_ENOTFOUND, changing nothing. */
static void a_nul_in_a_name_is_not_the_end_of_the_name(void) {
    static const char *const actions[] = {
        "{\"kind\":\"initialize\",\"feature\":\"Toggle\\u0000junk\",\"into\":\"On\"}",
        "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"On\\u0000xyz\"}",
    };
    for (int i = 0; i < 2; ++i) {
        uf_dispatcher *d = check_dispatcher(NULL, "{\"feature\":\"Toggle\",\"states\":{\"Off\":{},\"On\":{}}}");
        CHECK_STATUS(uf_submit(d, actions[i]), UF_ENOTFOUND);
        CHECK_STATE(d, "{}");
        uf_dispatcher_free(d);
    }
}

/* ---- 3. uf_dispatch with a larger size leaks the via payload ----
 * (test_input.c) A caller built against a newer header passes a larger `size`;
 * the library refuses it (UF_EINVAL, rightly) but never calls via_payload_free,
 * although the via fields sit where this header puts them. The header promises
 * "via_payload_free runs exactly once, whatever the outcome", and the caller
 * cannot tell this EINVAL (payload kept) from the others (payload released). */
static void a_refused_larger_struct_still_releases_its_via_payload(void) {
    uf_dispatcher *d = check_dispatcher(NULL, "{\"feature\":\"Toggle\",\"states\":{\"Off\":{},\"On\":{}}}");
    struct {
        uf_action action;
        char newer_fields[16];
    } larger;
    memset(&larger, 0, sizeof larger);
    int freed = 0;
    larger.action.size = (unsigned)sizeof larger;
    larger.action.kind = UF_ACTION_INITIALIZE;
    larger.action.feature = "Toggle";
    larger.action.into = "On";
    larger.action.via = go_on;
    larger.action.via_payload = &freed;
    larger.action.via_payload_free = count_late;
    CHECK_STATUS(uf_dispatch(d, &larger.action), UF_EINVAL);
    CHECK(freed == 1);
    uf_dispatcher_free(d);
}

int main(void) {
    registrations_during_free_are_released();
    a_nul_in_a_name_is_not_the_end_of_the_name();
    a_refused_larger_struct_still_releases_its_via_payload();
    return check_summary();
}
