/*
 * header_c.c — uniflow.h compiles on its own as strict C99 with every warning an
 * error (gcc -std=c99 -Wall -Wextra -Werror -pedantic), and its initializer macro
 * and types work as documented.
 */
/* Nothing else is included: the header must bring what it and its macros need
 * (NULL for UF_ACTION_INIT included). */
#include <uniflow.h>

static int via(uf_context *ctx, void *payload) {
    (void)payload;
    return uf_context_become(ctx, "{}");
}

static int subscriber(const uf_mutation *m, void *payload) {
    (void)m;
    (void)payload;
    return UF_KEEP;
}

int header_c_uses(uf_dispatcher *d);
int header_c_uses(uf_dispatcher *d) {
    uf_action action = UF_ACTION_INIT;
    uf_subscriber_fn fn = subscriber;
    uint64_t id = 0;
    action.kind = UF_ACTION_TRANSITION;
    action.feature = "F";
    action.into = "S";
    action.via = via;
    if (action.size != sizeof(uf_action) || action.from != 0) return UF_EINVAL;
    if (uf_subscribe(d, NULL, fn, NULL, NULL, &id) != UF_OK) return uf_last_status();
    return uf_dispatch(d, &action) + UNIFLOW_VERSION_NUMBER + UF_MUTATION_TRANSITION;
}
