// header_cxx.cpp — uniflow.h compiles as C++ (g++ -Wall -Wextra -Werror): it wraps
// its declarations in extern "C" and UF_ACTION_INIT is a valid C++ initializer.
#include <uniflow.h>

namespace {
int via(uf_context *ctx, void *) { return uf_context_become(ctx, "{}"); }
}

extern "C" int header_cxx_uses(uf_dispatcher *d);
int header_cxx_uses(uf_dispatcher *d) {
    uf_action action = UF_ACTION_INIT;
    action.kind = UF_ACTION_INITIALIZE;
    action.feature = "F";
    action.into = "S";
    action.via = via;
    return uf_dispatch(d, &action);
}
