/* A program outside the tree: registers a feature and submits an action through
 * the installed libuniflow_json (and libuniflow), then prints the model. */
#include <stdio.h>
#include <stdlib.h>
#include <uniflow_json.h>

int main(void) {
    uf_dispatcher *d;
    json_t *door = json_pack("{s:s, s:{s:{}, s:{}}}", "feature", "Door", "states", "Open", "Closed");
    int status = uf_dispatcher_new(&d, NULL);
    if (status == UF_OK) status = uf_json_register(d, door);
    if (status == UF_OK) status = uf_json_initialize(d, "Door", "Closed", NULL);
    if (status == UF_OK) status = uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Door\",\"into\":\"Open\"}");
    json_t *model = status == UF_OK ? uf_json_state(d) : NULL;
    char *text = model ? json_dumps(model, JSON_COMPACT) : NULL;
    printf("libuniflow %s: %s\n", uf_version(), text ? text : uf_last_error());
    free(text);
    json_decref(model);
    json_decref(door);
    uf_dispatcher_free(d);
    return status == UF_OK ? 0 : 1;
}
