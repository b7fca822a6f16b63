/*
 * header_nats.c — uniflow_nats.h compiles on its own as strict C99 (it includes
 * uniflow.h itself, and nothing of libnats).
 */
#include <uniflow_nats.h>

int header_nats_uses(uf_dispatcher *d);
int header_nats_uses(uf_dispatcher *d) {
    uf_nats_node *node = NULL;
    char *status = NULL;
    int rc = uf_nats_node_new(&node, d, "{\"model\": \"m\", \"owns\": [0, \"global\"]}");
    if (rc == UF_OK) rc = uf_nats_node_start(node);
    if (rc == UF_OK) rc = uf_nats_submit(node, "{\"kind\":\"initialize\",\"feature\":\"F\",\"into\":\"S\"}");
    if (rc == UF_OK) rc = uf_nats_sync(node, 1000);
    if (rc == UF_OK) rc = uf_nats_node_status(node, &status);
    uf_free(status);
    uf_nats_node_free(node);
    return rc == UF_OK ? UF_OK : uf_nats_last_status() + (*uf_nats_last_error() ? 0 : 1);
}
