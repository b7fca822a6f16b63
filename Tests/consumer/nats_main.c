/* A program outside the tree that uses the installed NATS adapter: makes a node
 * for a partitioned dispatcher (without starting it: no server is needed), then
 * makes the same model as main.c, whose output the check compares. */
#include <stdio.h>
#include <uniflow_nats.h>

int main(void) {
    uf_dispatcher *d = NULL;
    uf_nats_node *node = NULL;
    int status = uf_dispatcher_new(&d, "{\"partitions\": 2, \"node\": \"consumer\"}");
    if (status == UF_OK) status = uf_nats_node_new(&node, d, "{\"model\": \"consumer\", \"owns\": \"none\"}");
    if (status == UF_OK && uf_nats_node_new(&node, d, "{\"model\": \"consumer\", \"lease\": 1}") != UF_EINVAL) status = UF_EINVAL;
    uf_nats_node_free(node);
    uf_dispatcher_free(d);
    if (status != UF_OK) {
        printf("uniflow_nats: %s\n", uf_nats_last_error());
        return 1;
    }
    d = NULL;
    char *model = NULL;
    status = uf_dispatcher_new(&d, NULL);
    if (status == UF_OK) status = uf_register(d, "{\"feature\":\"Door\",\"states\":{\"Open\":{},\"Closed\":{}}}");
    if (status == UF_OK) status = uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Door\",\"into\":\"Open\"}");
    if (status == UF_OK) status = uf_state_get(d, &model);
    printf("libuniflow_nats beside libuniflow %s: %s\n", uf_version(), model ? model : uf_last_error());
    uf_free(model);
    uf_dispatcher_free(d);
    return status == UF_OK ? 0 : 1;
}
