// header_nats_cxx.cpp — uniflow_nats.h compiles as C++ (its declarations are
// wrapped in extern "C", as uniflow.h's are).
#include <uniflow_nats.h>

extern "C" int header_nats_cxx_uses(uf_dispatcher *d);
int header_nats_cxx_uses(uf_dispatcher *d) {
    uf_nats_node *node = nullptr;
    int rc = uf_nats_node_new(&node, d, nullptr);
    if (rc == UF_OK) rc = uf_nats_node_start(node);
    uf_nats_node_free(node);
    return rc;
}
